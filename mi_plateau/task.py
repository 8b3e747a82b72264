"""The task: K-fold ambiguous lookup, generated from explicit seeds (docs/design.md).

Tokens: PAD=0, BOS=1, EOS=2, SEP=3, characters a-z0-9 are 4..39 (vocabulary 40).
For each of ``n_b`` base strings B (6 characters) there are K target strings A (4 characters),
globally unique and with distinct first characters inside a group (``task.distinct_first``; the
original's direction experiment drew first characters freely, and then the first-token family's
candidate set holds a shared character once per target that starts with it). By default one global set of
K selectors z is shared by all groups, so z alone says nothing about A; only (B, z) does.
Example (b, k) pairs base b with selector k and target A[b, k].

With ``task.selector_groups = G > 0`` (the gradient-cancellation control of Table 12) there are
G sets of K selectors, all G*K strings distinct, and group b shows the selectors of set b mod G:
selector k of example (b, k) is then "the k-th selector of b's set". Everything downstream
speaks of selectors by that index k, so a swap (k -> k+1 mod K) stays inside the group's set.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import torch
from jaxtyping import Int
from torch import Tensor

from .config import LEN_A, LEN_B, N_CHARS, EvalConfig, Layout, TaskConfig, layout_for

# the vocabulary's ids and their text, declared beside the layout (torch-free); named here too
from .config.layout import ALPHABET, BOS, CHAR0, D_VOCAB, EOS, PAD, SEP, decode, token_labels  # noqa: F401


def _unique_rows(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """n distinct random strings of `length` characters, as character indices 0..35."""
    out = rng.integers(0, N_CHARS, size=(n, length))
    while True:
        _, first = np.unique(out, axis=0, return_index=True)
        dup = np.setdiff1d(np.arange(n), first)
        if dup.size == 0:
            return out
        out[dup] = rng.integers(0, N_CHARS, size=(dup.size, length))


@dataclass(frozen=True)
class Task:
    """All strings of one task instance, as character indices (0..35, not yet tokens)."""

    cfg: TaskConfig
    bases: np.ndarray  # (n_b, 6)
    selector_sets: np.ndarray  # (n_sets, K, len_z): one set (selector_groups = 0) or G of them
    targets: np.ndarray  # (n_b, K, 4)

    @cached_property
    def noisy_target_sel(self) -> np.ndarray:
        """The original's label noise, fixed once for the whole run (``label_noise_mode = "fixed"``):
        for each training example (group g, selector k), the index of the target it is trained on.
        round(p D) examples, drawn without replacement from a generator of their own (seeded by
        the data seed), get another A of their group, chosen uniformly among the other K - 1;
        the rest keep their own (k). (n_b, K)."""
        cfg = self.cfg
        sel = np.tile(np.arange(cfg.K), (cfg.n_b, 1))
        rng = np.random.default_rng([cfg.data_seed, 0x1AB3])
        flip = rng.choice(cfg.D, size=round(cfg.label_noise * cfg.D), replace=False)
        g, k = flip // cfg.K, flip % cfg.K
        sel[g, k] = (k + rng.integers(1, cfg.K, size=len(flip))) % cfg.K
        return sel

    @property
    def selectors(self) -> np.ndarray:
        """The one global selector set (K, len_z); with several sets, use ``selector_strings``."""
        if len(self.selector_sets) != 1:
            raise ValueError(
                f"task.selector_groups={self.cfg.selector_groups}: each group has its own selector set "
                "(Task.selector_strings)"
            )
        return self.selector_sets[0]

    def selector_set(self, groups: np.ndarray | Tensor) -> np.ndarray:
        """Index of each group's selector set: g mod G, or 0 when all groups share one set."""
        g = np.asarray(groups, dtype=np.int64)
        return g % len(self.selector_sets)

    def selector_strings(self, groups: np.ndarray | Tensor, sel: np.ndarray | Tensor) -> np.ndarray:
        """Characters (0..35) of selector ``sel[i]`` of group ``groups[i]``'s set: (batch, len_z)."""
        return self.selector_sets[self.selector_set(groups), np.asarray(sel, dtype=np.int64)]

    @cached_property
    def layout(self) -> Layout:
        return layout_for(self.cfg)

    @property
    def n_examples(self) -> int:
        return self.cfg.n_b * self.cfg.K

    # --- tokens ----------------------------------------------------------------
    def tokens(
        self, groups: np.ndarray | Tensor, sel: np.ndarray | Tensor, target_sel: np.ndarray | Tensor | None = None
    ) -> Int[Tensor, "batch pos"]:
        """Sequences for examples (groups[i], sel[i]).

        ``sel`` picks the selector shown in the prompt; ``target_sel`` (default: ``sel``) picks
        which of the group's A is the answer. They differ for label noise and selector swaps.
        """
        g = np.asarray(groups, dtype=np.int64)
        s = np.asarray(sel, dtype=np.int64)
        ts = s if target_sel is None else np.asarray(target_sel, dtype=np.int64)
        n = g.shape[0]
        # the prompt's own A (direction az_b) is the example's, not the shown selector's
        A_prompt = self.targets[g, ts]
        A_target = self.targets[g, ts]
        pieces = {"B": self.bases[g], "z": self.selector_strings(g, s), "A": A_prompt}
        target = A_target if self.cfg.targets_A else self.bases[g]
        out = np.empty((n, self.layout.seq_len), dtype=np.int64)
        out[:, 0] = BOS
        for name, start, length in self.layout.segments:
            out[:, start : start + length] = pieces[name] + CHAR0
            out[:, start + length] = SEP
        t0 = self.layout.target_start
        out[:, t0 : t0 + self.layout.target_len] = target + CHAR0
        out[:, -1] = EOS
        return torch.from_numpy(out)

    def candidates(self, groups: np.ndarray | Tensor) -> Int[Tensor, "batch n_cand"]:
        """Token ids of the possible first target tokens of each example's group.

        For A-target directions these are the K first characters of the group's targets; for
        B-target directions (no ambiguity in the first token's group) all 36 characters.
        """
        g = np.asarray(groups, dtype=np.int64)
        if self.cfg.targets_A:
            return torch.from_numpy(self.targets[g, :, 0] + CHAR0)
        return torch.arange(CHAR0, D_VOCAB).expand(len(g), N_CHARS).clone()

    def all_examples(self) -> tuple[np.ndarray, np.ndarray]:
        """(group, selector) of every example, D = n_b * K of them."""
        g, s = np.meshgrid(np.arange(self.cfg.n_b), np.arange(self.cfg.K), indexing="ij")
        return g.reshape(-1), s.reshape(-1)


def make_task(cfg: TaskConfig) -> Task:
    """Generate the task from cfg.data_seed; the same config always gives the same strings."""
    rng = np.random.default_rng([cfg.data_seed, 0x5EED])
    bases = _unique_rows(rng, cfg.n_b, LEN_B)
    selectors = _unique_rows(rng, cfg.K, cfg.len_z)
    # distinct first characters inside each group: the first K of a random permutation; without
    # the rule (Table 2's mappings), K free draws, so two targets of a group may share one
    first = np.argsort(rng.random((cfg.n_b, N_CHARS)), axis=1)[:, : cfg.K]
    if not cfg.distinct_first:
        first = rng.integers(0, N_CHARS, size=(cfg.n_b, cfg.K))
    suffix = rng.integers(0, N_CHARS, size=(cfg.n_b, cfg.K, LEN_A - 1))
    # global uniqueness: targets sharing a first character must differ in their suffix
    while True:
        code = first * N_CHARS**3 + (suffix * np.array([N_CHARS**2, N_CHARS, 1])).sum(-1)
        flat = code.reshape(-1)
        _, idx = np.unique(flat, return_index=True)
        dup = np.setdiff1d(np.arange(flat.size), idx)
        if dup.size == 0:
            break
        suffix.reshape(-1, LEN_A - 1)[dup] = rng.integers(0, N_CHARS, size=(dup.size, LEN_A - 1))
    targets = np.concatenate([first[..., None], suffix], axis=-1)
    sets = selectors[None] if cfg.selector_groups == 0 else _selector_sets(cfg)
    return Task(cfg=cfg, bases=bases, selector_sets=sets, targets=targets)


def _selector_sets(cfg: TaskConfig) -> np.ndarray:
    """G sets of K selectors, all G*K strings distinct: (G, K, len_z) character indices.

    Drawn from a generator of their own, after the global set, so that bases and targets are
    the same for every G at one data seed: a G sweep changes only which groups share selectors.
    Strings are numbers in base 36 drawn without replacement, so any G*K <= 36^len_z works.
    """
    G, K, L = cfg.selector_groups, cfg.K, cfg.len_z
    rng = np.random.default_rng([cfg.data_seed, 0x5EED, G])
    codes = rng.choice(N_CHARS**L, size=G * K, replace=False)
    digits = (codes[:, None] // N_CHARS ** np.arange(L - 1, -1, -1)) % N_CHARS
    return digits.reshape(G, K, L)


@dataclass(frozen=True)
class EvalSet:
    """The fixed evaluation set: ``n_groups`` groups, all K examples of each, clean labels.

    Rows are ordered group-major: row ``i*K + k`` is group ``groups[i]`` with selector k.
    """

    task: Task
    groups: np.ndarray  # (n_groups,) indices into the task's groups
    g: np.ndarray  # (N,) group of each row
    s: np.ndarray  # (N,) selector of each row (its index k in the row's group's selector set)
    tokens: Tensor  # (N, seq_len)
    candidates: Tensor  # (N, n_cand)
    target_first: Tensor  # (N,) first target token
    cand_index: Tensor  # (N,) index of the true first token among the candidates
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # derived layouts (passes.packing)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def has_sequence_candidates(self) -> bool:
        """The paper family is defined: the group's K target strings are the candidates (A-target
        directions); B-target directions have one target per group and no candidate set."""
        return self.task.cfg.targets_A

    @cached_property
    def seq_candidates(self) -> Int[Tensor, "N K target_len"]:
        """Token ids of every candidate target string of each row's group, in selector order:
        row i's own target is candidate ``s[i]``."""
        if not self.has_sequence_candidates:
            raise ValueError(f"direction {self.task.cfg.direction!r}: the sequence candidate loss needs A targets")
        return torch.from_numpy(self.task.targets[self.g] + CHAR0).to(self.tokens.device)

    def on(self, device: torch.device | str) -> EvalSet:
        """This evaluation set with its tensors on ``device`` (the set itself on the CPU), made
        once per device and kept in the cache."""
        device = torch.device(device)
        if device == self.tokens.device:
            return self
        key = ("on", str(device))
        if key not in self.cache:
            self.cache[key] = replace(
                self,
                tokens=self.tokens.to(device),
                candidates=self.candidates.to(device),
                target_first=self.target_first.to(device),
                cand_index=self.cand_index.to(device),
                cache={},
            )
        return self.cache[key]

    def subset(self, groups: np.ndarray) -> EvalSet:
        """The evaluation set of these groups only (a subset of ``groups``, in its order), made
        once per subset and kept in the cache (the live evaluation scores it at every checkpoint)."""
        key = ("subset", tuple(int(x) for x in groups))
        if key not in self.cache:
            rows = np.isin(self.g, groups)
            t = torch.as_tensor(rows, device=self.tokens.device)
            self.cache[key] = replace(
                self,
                groups=self.groups[np.isin(self.groups, groups)],
                g=self.g[rows],
                s=self.s[rows],
                tokens=self.tokens[t],
                candidates=self.candidates[t],
                target_first=self.target_first[t],
                cand_index=self.cand_index[t],
                cache={},
            )
        return self.cache[key]

    def swapped_tokens(self, shift: int) -> Tensor:
        """The same rows with selector k replaced by (k + shift) mod K of the row's own group's
        set (``task.selector_groups``); the answer is unchanged."""
        K = self.task.cfg.K
        return self.task.tokens(self.g, (self.s + shift) % K, target_sel=self.s)


def derangement(n: int, seed: int) -> np.ndarray:
    """A random permutation of range(n) with no fixed point (n >= 2), from ``seed``."""
    rng = np.random.default_rng([seed, 0x5F0F])
    while True:
        p = rng.permutation(n)
        if n < 2 or not (p == np.arange(n)).any():
            return p


def make_eval_set(task: Task, cfg: EvalConfig) -> EvalSet:
    n = min(cfg.n_groups, task.cfg.n_b)
    rng = np.random.default_rng([cfg.eval_seed, 0xE7A1])
    groups = np.sort(rng.choice(task.cfg.n_b, size=n, replace=False))
    K = task.cfg.K
    g = np.repeat(groups, K)
    s = np.tile(np.arange(K), n)
    tokens = task.tokens(g, s)
    cand = task.candidates(g)
    first = tokens[:, task.layout.target_start]
    cand_index = (cand == first[:, None]).int().argmax(dim=1)
    return EvalSet(task, groups, g, s, tokens, cand, first, cand_index)


class BatchSampler:
    """Uniform sampling of training examples with replacement, from its own generator.

    Label noise (``task.label_noise`` p), the prompt keeping its selector: "fixed" (the
    original's), a fraction p of the training examples trained on another A of their group for
    the whole run (``Task.noisy_target_sel``); "per_draw", each draw's target replaced with
    probability p by another A of its group (chosen uniformly among the other K-1).
    """

    def __init__(self, task: Task, batch_size: int, seed: int):
        self.task = task
        self.batch_size = batch_size
        self.gen = torch.Generator().manual_seed(int(seed))

    def next_indices(self) -> Tensor:
        return torch.randint(0, self.task.n_examples, (self.batch_size,), generator=self.gen, device="cpu")

    def sample(self) -> Tensor:
        cfg = self.task.cfg
        idx = self.next_indices().numpy()
        n = len(idx)
        g, s = idx // cfg.K, idx % cfg.K
        ts = s
        if cfg.label_noise > 0 and cfg.label_noise_mode == "fixed":
            ts = self.task.noisy_target_sel[g, s]
        elif cfg.label_noise > 0:
            flip = torch.rand(n, generator=self.gen).numpy() < cfg.label_noise
            other = (s + torch.randint(1, cfg.K, (n,), generator=self.gen).numpy()) % cfg.K
            ts = np.where(flip, other, s)
        return self.task.tokens(g, s, target_sel=ts)

    def state(self) -> dict[str, Tensor]:
        """Everything resume needs, as tensors (stored in the run's resume file)."""
        return {"sampler_rng": self.gen.get_state()}

    def load_state(self, state: dict[str, Tensor]) -> None:
        self.gen.set_state(state["sampler_rng"])


class EpochSampler(BatchSampler):
    """Epoch batches, as PyTorch's ``DataLoader(shuffle=True)`` draws them: each epoch a fresh
    permutation of the D examples from the sampler's generator, cut into consecutive slices of
    ``batch_size``; the last, partial slice of an epoch is a (smaller) batch of its own.

    The permutation and the position in it are part of the state, so resume continues mid-epoch.
    """

    def __init__(self, task: Task, batch_size: int, seed: int):
        super().__init__(task, batch_size, seed)
        self.perm = torch.empty(0, dtype=torch.int64)
        self.pos = 0

    def next_indices(self) -> Tensor:
        if self.pos >= len(self.perm):
            self.perm = torch.randperm(self.task.n_examples, generator=self.gen)
            self.pos = 0
        out = self.perm[self.pos : self.pos + self.batch_size]
        self.pos += len(out)
        return out

    def state(self) -> dict[str, Tensor]:
        return {
            "sampler_rng": self.gen.get_state(),
            "sampler_perm": self.perm.clone(),
            "sampler_pos": torch.tensor(self.pos, dtype=torch.int64),
        }

    def load_state(self, state: dict[str, Tensor]) -> None:
        perm, pos = state["sampler_perm"], int(state["sampler_pos"])
        if (
            perm.dtype != torch.int64
            or perm.dim() != 1
            or len(perm) not in (0, self.task.n_examples)
            or not 0 <= pos <= len(perm)
        ):
            raise ValueError("sampler_perm / sampler_pos do not describe an epoch of this task")
        self.gen.set_state(state["sampler_rng"])
        self.perm, self.pos = perm.clone(), pos


def make_sampler(task: Task, batching: str, batch_size: int, seed: int) -> BatchSampler:
    """The training batch sampler of ``train.batching``: "uniform" or "epoch"."""
    return (EpochSampler if batching == "epoch" else BatchSampler)(task, batch_size, seed)
