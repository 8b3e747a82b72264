"""The tokens of a sequence: the vocabulary's ids (torch-free: the tables, the report and the
checkpoint reader name tokens without loading torch; ``task`` makes the sequences) and their
positions (``Layout``; ``task_section.layout_for`` makes one from a task)."""

from __future__ import annotations

from dataclasses import dataclass

LEN_B = 6
LEN_A = 4
N_CHARS = 36  # the alphabet a-z0-9
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
PAD, BOS, EOS, SEP = 0, 1, 2, 3
CHAR0 = 4  # the first character's token id
D_VOCAB = CHAR0 + N_CHARS


def decode(tokens) -> str:
    """Render token ids as text: characters as themselves, specials as <BOS> etc."""
    names = {PAD: "<PAD>", BOS: "<BOS>", EOS: "<EOS>", SEP: "|"}
    return "".join(names.get(int(t), ALPHABET[int(t) - CHAR0] if CHAR0 <= int(t) < D_VOCAB else "?") for t in tokens)


def token_labels(tokens) -> list[str]:
    """One short label per position, for attention-pattern axes."""
    names = {PAD: "PAD", BOS: "BOS", EOS: "EOS", SEP: "SEP"}
    return [names.get(int(t), ALPHABET[int(t) - CHAR0] if CHAR0 <= int(t) < D_VOCAB else "?") for t in tokens]


@dataclass(frozen=True)
class Layout:
    """Token positions of one sequence, computed from the task's lengths.

    A sequence is ``[BOS] prompt_1 [SEP] prompt_2 ... [SEP] target [EOS]``. The model
    predicts token ``i+1`` at position ``i``; the first target token is predicted at
    ``first_pred`` (the SEP just before the target).
    """

    seq_len: int
    segments: tuple[tuple[str, int, int], ...]  # (name, start, length) of prompt segments
    target_start: int
    target_len: int  # without EOS

    def span(self, name: str) -> range:
        for seg, start, length in self.segments:
            if seg == name:
                return range(start, start + length)
        raise KeyError(f"this layout has no segment {name!r}")

    @property
    def first_pred(self) -> int:
        return self.target_start - 1

    @property
    def pred_positions(self) -> range:
        """Positions whose next-token prediction is a target token or EOS."""
        return range(self.target_start - 1, self.seq_len - 1)

    @property
    def selector_positions(self) -> range:
        return self.span("z")
