"""The one packed forward over the evaluation set: its clean rows and their selector-swapped
copies as prefix packs (``model.packing``), every distinct prefix computed once.

A swapped input (B, z_{k+s}) is, up to the position fp that predicts A1, another clean row of
the same group, so one pack per group holds them all; only the clean rows need the positions
after fp. ``evaluate`` (the metrics of both families), the live first-token losses and the
per-checkpoint passes all read the ``PackedRun`` it returns; they differ only in what they ask
it to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..model.forward import Weights, run_cached, run_packed, run_suffixes
from ..model.packing import Packing, eval_packing
from ..task import EOS, EvalSet

# sequences per chunk of the packed forward: larger matmuls, fastest at 1,024 of 256-4,096 on a
# CPU (the paper preset, one checkpoint: the live evaluation 0.73x the time at 256 at K = 10, the
# first-token family 0.80x at K = 36; K = 30 within the noise)
CHUNK = 1024


@dataclass(frozen=True)
class PackedRun:
    """One packed forward over the clean and swapped rows at one checkpoint.

    ``clean`` holds the rows whose tail ran (``tail_rows``, row indices in order; None: every
    row, so that ``clean[i]`` is row i) and is None when only the position fp was asked for
    (``tail=False``); ``sel_attn``
    without ``attention``, and ``scores`` without ``sequence``, are None; ``resid`` and ``z``
    are indexed by pack and node (``pk``), as the interventions restart from them, and hold no
    packs without ``keep``.
    """

    pk: Packing
    shifts: tuple[int, ...]  # selector replacements k -> k+s mod K (none without a selector)
    clean: Float[Tensor, "n P vocab"] | None  # each tail row's logits (positions fp.. filled, zeros before)
    clean_fp: Float[Tensor, "N vocab"]  # every clean row's logits at fp
    swapped_fp: tuple[Float[Tensor, "N vocab"], ...]  # per shift, the swapped rows' logits at fp
    sel_attn: Float[Tensor, "N layer head"] | None  # attention from fp to the selector positions, minus uniform
    scores: Float[Tensor, "N K"] | None  # every candidate string's score (the paper family; NaN where unscored)
    resid: list[Float[Tensor, "pack node d_model"]]  # per layer: blocks.{l}.hook_resid_pre
    z: list[Float[Tensor, "pack node head d_head"]]  # per layer: blocks.{l}.attn.hook_z
    tail_rows: Int[Tensor, n] | None = None  # the rows of ``clean``; None: every row


@torch.no_grad()
def packed_forward(
    W: Weights,
    ev: EvalSet,
    shifts: Sequence[int],
    *,
    chunk: int = CHUNK,
    tail: bool = True,
    tails: np.ndarray | Tensor | None = None,
    sequence: bool = False,
    score: np.ndarray | Tensor | None = None,
    attention: bool = False,
    keep: bool = False,
) -> PackedRun:
    """The clean rows and their swaps (``shifts``, already reduced mod K), ``chunk`` sequences at
    a time. What it computes is what is asked:

    - ``tail``: the clean rows' logits at fp..P-1 (else at fp only). The packs are cut to the
      nodes up to fp, which come first in every pack, and each row's own positions after fp run
      as a continuation of its prompt (the full packs only with ``attention`` or ``keep``);
      ``tails`` (a mask over the rows; default every row) limits the tails to those rows (the
      live evaluation's groups: one forward gives every row's fp and their tails);
    - ``sequence``: every candidate string's score (``sequence_scores``) for the rows where
      ``score`` (a mask over the rows; default every row with a tail) is true; needs their tails;
    - ``attention``: each clean row's attention from fp to the selector positions, summed over
      them, minus the uniform baseline len_z / (fp + 1), per head;
    - ``keep``: every layer's residual stream and head outputs at every node.

    Without ``attention`` and ``keep`` the last block computes only the nodes that are read.
    """
    lay = ev.task.layout
    K, fp, N = ev.task.cfg.K, lay.first_pred, len(ev.tokens)
    P, V, L, H, dev = lay.seq_len - 1, W.W_U.shape[1], W.n_layers, W.n_heads, W.W_U.device
    if sequence and not tail:
        raise ValueError("packed_forward: the candidate scores (sequence=True) need the tail positions")
    has_tail = _mask(tails, N, dev) & tail  # no tails without ``tail``
    asked = _mask(score, N, dev) & sequence
    if bool((asked & ~has_tail).any()):
        raise ValueError("packed_forward: rows asked for candidate scores need their tails (score outside tails)")
    wanted = asked & has_tail
    tail_rows = has_tail.nonzero().squeeze(1)
    slot = torch.full((N,), -1, dtype=torch.long, device=dev)
    slot[tail_rows] = torch.arange(len(tail_rows), device=dev)
    selpos = list(lay.selector_positions) if ev.task.cfg.has_selector and attention else []
    pk = eval_packing(ev, shifts)
    cached = attention or keep
    # the interventions read every node; otherwise the packs stop at fp and each clean row's own
    # tail (A1..A4) runs as a continuation of its prompt (``run_suffixes``): no tail attends to another
    width = None if cached else pk.width(fp + 1)
    clean = torch.zeros(len(tail_rows), P, V, device=dev) if tail else None
    at_fp = torch.empty(N, V, device=dev)
    swapped = torch.empty(len(shifts), N, V, device=dev)
    sel = torch.zeros(N, L, H, device=dev) if attention else None
    scores = torch.full((N, K), float("nan"), device=dev) if sequence and ev.has_sequence_candidates else None
    n_keep = pk.n_packs if keep else 0
    T = pk.tokens.shape[1]
    resid = [torch.empty(n_keep, T, W.W_E.shape[1], device=dev) for _ in range(L)]
    zc = [torch.empty(n_keep, T, H, W.d_head, device=dev) for _ in range(L)]
    later = _Pending()  # continuations run a few chunks' rows at a time (larger matmuls)
    for c, seqs in pk.chunks(chunk):
        mine, other = seqs[seqs < N], seqs[seqs >= N]
        mt = mine[has_tail[mine]]  # the clean rows of this chunk whose tail runs
        want, want_swap = pk.node[mine, fp], pk.node[other, fp]
        args = (pk.tokens[c, :width], pk.positions[c, :width], pk.blocked_for(c, width))
        if cached:
            lg, rs, pats, zz, kv = run_cached(W, *args, keep_kv=True)
            col = lambda nodes: nodes  # every node computed
        else:
            read = torch.unique(torch.cat([want, want_swap]))
            lg, kv = run_packed(W, *args, read, keep_kv=len(mt) > 0)
            col = lambda nodes: torch.searchsorted(read, nodes)  # where each read lies
        at_fp[mine] = lg[pk.pack[mine] - c.start, col(want)]
        swapped[(other - N) // N, (other - N) % N] = lg[pk.pack[other] - c.start, col(want_swap)]
        if len(mt) and cached:
            clean[slot[mt], fp:] = lg[(pk.pack[mt] - c.start)[:, None], pk.node[mt][:, fp:P]]
        # the rows that continue their prompt: every tail row cut at fp, or those scored
        go = mine[wanted[mine]] if cached else mt
        if len(go):
            later.add(go, prefix_kv_of(pk, kv, go, fp, c.start))
        if later.n >= chunk // 2 or (c.stop == pk.n_packs and later.n):
            rows, prefix = later.take()
            _continue(W, ev, rows, prefix, at_fp, clean, slot, scores if sequence else None, wanted, not cached)
        for l in range(L if cached else 0):
            if selpos:
                pat = pk.gather(pats[l].transpose(1, 2), mine, fp, c.start)  # [n, head, key]
                keys = pk.node[mine][:, selpos]
                sel[mine, l] = pat.gather(2, keys[:, None].expand(-1, H, -1)).sum(2)
            if keep:
                resid[l][c] = rs[l]
                zc[l][c] = zz[l].transpose(1, 2)
    if sel is not None:
        sel -= len(selpos) / (fp + 1)
    every = tails is None or len(tail_rows) == N
    return PackedRun(
        pk, tuple(shifts), clean, at_fp, tuple(swapped), sel, scores, resid, zc, None if every else tail_rows
    )


class _Pending:
    """Rows waiting for their continuations, with their prompts' keys and values per layer."""

    def __init__(self):
        self.rows: list[Tensor] = []
        self.kv: list[list[tuple[Tensor, Tensor]]] = []
        self.n = 0

    def add(self, rows: Tensor, kv: list[tuple[Tensor, Tensor]]) -> None:
        self.rows.append(rows)
        self.kv.append(kv)
        self.n += len(rows)

    def take(self) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        rows = torch.cat(self.rows)
        kv = [tuple(torch.cat([part[l][i] for part in self.kv]) for i in (0, 1)) for l in range(len(self.kv[0]))]
        self.rows, self.kv, self.n = [], [], 0
        return rows, kv


def _continue(W, ev, rows, prefix, at_fp, clean, slot, scores, wanted, tails: bool) -> None:
    """For ``rows`` and their prompts' keys and values ``prefix``: with ``tails`` each row's own
    A1..A4 into ``clean`` (its fp too), then, where ``scores`` is asked for, the candidate scores
    of the rows ``wanted``."""
    fp, P = ev.task.layout.first_pred, ev.task.layout.seq_len - 1
    if tails:
        own = ev.tokens[rows, fp + 1 : P][:, None]  # [n, 1, tail]: the row's own A1..A4
        clean[slot[rows], fp] = at_fp[rows]
        clean[slot[rows], fp + 1 :] = run_suffixes(W, prefix, own, fp + 1)[:, 0]
    pick = wanted[rows]
    if scores is None or not bool(pick.any()):
        return
    r = rows[pick]
    kv = [(k[pick], v[pick]) for k, v in prefix]
    scores[r] = sequence_scores(W, ev, r, kv, at_fp[r], clean[slot[r], fp + 1 :])


def _mask(mask: np.ndarray | Tensor | None, N: int, dev: torch.device) -> Tensor:
    """A boolean mask over the N rows on ``dev``; None: every row."""
    if mask is None:
        return torch.ones(N, dtype=torch.bool, device=dev)
    return torch.as_tensor(mask, device=dev).bool()


def sequence_scores(
    W: Weights,
    ev: EvalSet,
    rows: Int[Tensor, n],
    prefix_kv: list[tuple[Tensor, Tensor]],
    fp_logits: Float[Tensor, "n vocab"],
    own_tail_logits: Float[Tensor, "n L vocab"],
) -> Float[Tensor, "n K"]:
    """Scores of every candidate string of each row's group given the row's prompt (B, z_k).

    The prompt is computed once per row (its keys and values ``prefix_kv`` per layer, [n, head,
    fp + 1, d_head], and its logits at fp, which score every candidate's first character); the
    row's own target is the clean input, so ``own_tail_logits`` (the clean logits at A1..A4)
    score candidate k, and only the K - 1 other candidates run, as continuations of the prompt
    (``run_suffixes``).
    """
    K = ev.task.cfg.K
    cands = ev.seq_candidates[rows]  # [n, K, L]
    dev = rows.device
    own = torch.as_tensor(ev.s, device=dev)[rows]
    first = fp_logits.log_softmax(-1).gather(1, cands[..., 0])  # [n, K]
    tail = torch.empty_like(first)
    n = torch.arange(len(rows), device=dev)
    tail[n, own] = string_logprob(own_tail_logits, next_tokens(cands[n, own]))
    if K > 1:
        j = torch.arange(K, device=dev)
        others = torch.stack([j[j != k] for k in range(K)])[own]  # [n, K-1]
        suf = cands.gather(1, others[..., None].expand(-1, -1, cands.shape[-1]))
        lg = run_suffixes(W, prefix_kv, suf, ev.task.layout.target_start)
        tail.scatter_(1, others, string_logprob(lg, next_tokens(suf)))
    return first + tail


def prefix_kv_of(
    pk: Packing, kv: list[tuple[Tensor, Tensor]], rows: Tensor, fp: int, first_pack: int
) -> list[tuple[Tensor, Tensor]]:
    """Each row's keys and values at its positions 0..fp, per layer, from a packed run's
    ``kv`` ([packs, head, node, d_head] each; packs counted from ``first_pack``)."""
    p = (pk.pack[rows] - first_pack)[:, None]
    nodes = pk.node[rows, : fp + 1]
    return [tuple(t.transpose(1, 2)[p, nodes].transpose(1, 2) for t in layer) for layer in kv]


def string_logprob(logits: Float[Tensor, "... L vocab"], next_tokens: Int[Tensor, "... L"]) -> Float[Tensor, ...]:
    """Sum over positions of log softmax(logits)[next token]: a teacher-forced string's log-probability."""
    return logits.log_softmax(-1).gather(-1, next_tokens[..., None]).squeeze(-1).sum(-1)


def next_tokens(cands: Tensor) -> Tensor:
    """What each candidate's positions A1..A4 predict: A2, A3, A4, EOS."""
    return torch.cat([cands[..., 1:], torch.full_like(cands[..., :1], EOS)], -1)
