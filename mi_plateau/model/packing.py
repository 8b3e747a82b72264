"""Prefix packing: sequences that share prefixes, each distinct prefix computed once.

A causal model's activations at a position depend only on the prefix that ends there. The
evaluation set holds all K examples of each group, which agree up to the selector (BOS, the
group's B, SEP); and a selector-swapped input is, up to the position that predicts A1, the clean
input of another example of its group. So the sequences of one group are merged into a trie whose
nodes are their distinct prefixes, and the nodes become one packed sequence: a node's position
is its depth, and it attends to its ancestors and itself. Reading sequence i at position p reads
node ``node[i, p]`` of pack ``pack[i]``.

Within a pack the nodes are ordered by depth, so the nodes up to a depth are a prefix of the
pack (``Packing.width``): an intervention read only up to that depth runs on that prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class Packing:
    tokens: Tensor  # [n_packs, T] the last token of each node's prefix (padding: 0)
    positions: Tensor  # [n_packs, T] the node's depth (padding: 0)
    blocked: Tensor  # [T, T] when every pack has the same shape, else [n_packs, T, T]: True where a node may not attend
    pack: Tensor  # [n_seqs] the pack of each sequence
    node: Tensor  # [n_seqs, max_len] the node of sequence i at position p, within its pack (-1 past its end)
    real: Tensor  # [n_packs, T] False at padding

    @property
    def n_packs(self) -> int:
        return self.tokens.shape[0]

    @property
    def n_seqs(self) -> int:
        return self.pack.shape[0]

    def to(self, device: torch.device) -> Packing:
        return Packing(*(getattr(self, f.name).to(device) for f in fields(self)))

    def width(self, depth: int) -> int:
        """Nodes per pack that hold every node of depth < ``depth`` (they come first)."""
        return int(((self.positions < depth) & self.real).sum(1).max())

    def blocked_for(self, packs: slice, width: int | None = None) -> Tensor:
        """The attention mask of those packs, over their first ``width`` nodes."""
        w = slice(None, width)
        return self.blocked[w, w] if self.blocked.dim() == 2 else self.blocked[packs, w, w]

    def chunks(self, n_seqs: int) -> Iterator[tuple[slice, Tensor]]:
        """Slices of packs holding about ``n_seqs`` sequences each, with the sequences in them."""
        per = max(1, round(n_seqs * self.n_packs / max(1, self.n_seqs)))
        for a in range(0, self.n_packs, per):
            c = slice(a, min(self.n_packs, a + per))
            yield c, torch.nonzero((self.pack >= c.start) & (self.pack < c.stop)).squeeze(1)

    def gather(self, x: Tensor, seqs: Tensor, positions: Sequence[int] | int, first_pack: int = 0) -> Tensor:
        """Rows of ``x`` [packs, T, ...] (packs counted from ``first_pack``) at sequences ``seqs``
        and ``positions``: [len(seqs), len(positions), ...], or [len(seqs), ...] for one position."""
        p = self.pack[seqs] - first_pack
        if isinstance(positions, int):
            return x[p, self.node[seqs, positions]]
        return x[p[:, None], self.node[seqs][:, list(positions)]]

    def rows(self, seqs: Tensor, positions: Sequence[int] | int) -> tuple[Tensor, Tensor]:
        """The nodes to compute so that those sequences can be read at those positions (sorted,
        for a final block's ``rows``), and where each read lies among them."""
        n = (
            self.node[seqs, positions]
            if isinstance(positions, int)
            else self.node[seqs][:, list(positions)].contiguous()
        )
        read = torch.unique(n)
        return read, torch.searchsorted(read, n)


def pack_prefixes(seqs: Tensor, lengths: Tensor, pack: Tensor) -> Packing:
    """Merge ``seqs`` [n, max_len] (sequence i is ``seqs[i, :lengths[i]]``) into one trie per
    value of ``pack`` [n] (0..n_packs-1)."""
    s, ln, pk = seqs.numpy(), lengths.numpy(), pack.numpy().astype(np.int64)
    n, max_len = s.shape
    node = np.full((n, max_len), -1, dtype=np.int64)  # global node ids, ordered by depth
    parent = np.full(n, -1, dtype=np.int64)
    tok, depth, owner, n_nodes = [], [], [], 0
    for p in range(max_len):
        live = ln > p
        keys = np.stack([pk[live], parent[live], s[live, p]], 1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        ids = n_nodes + inv.reshape(-1)
        n_nodes += len(uniq)
        node[live, p] = ids
        parent[live] = ids
        owner.append(uniq[:, 0])
        tok.append(uniq[:, 2])
        depth.append(np.full(len(uniq), p))
    owner, tok, depth = np.concatenate(owner), np.concatenate(tok), np.concatenate(depth)
    n_packs = int(pk.max()) + 1
    order = np.lexsort((np.arange(len(owner)), owner))  # by pack, then global id (= by depth)
    count = np.bincount(owner, minlength=n_packs)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    local = np.empty(len(owner), dtype=np.int64)
    local[order] = np.arange(len(owner)) - start[owner[order]]
    T = int(count.max())
    tokens = np.zeros((n_packs, T), dtype=np.int64)
    positions = np.zeros((n_packs, T), dtype=np.int64)
    real = np.zeros((n_packs, T), dtype=bool)
    tokens[owner, local] = tok
    positions[owner, local] = depth
    real[owner, local] = True
    node_local = np.where(node >= 0, local[np.maximum(node, 0)], -1)
    allowed = np.zeros((n_packs, T, T), dtype=bool)
    allowed[:, np.arange(T), np.arange(T)] = True  # padding sees itself only
    q, k = np.tril_indices(max_len)
    i = np.repeat(np.arange(n), len(q))
    qq, kk = np.tile(q, n), np.tile(k, n)
    ok = qq < ln[i]
    allowed[pk[i[ok]], node_local[i[ok], qq[ok]], node_local[i[ok], kk[ok]]] = True
    same = bool((allowed == allowed[:1]).all() and (positions == positions[:1]).all())
    blocked = torch.from_numpy(~allowed[0] if same else ~allowed)
    return Packing(
        torch.from_numpy(tokens),
        torch.from_numpy(positions),
        blocked,
        torch.from_numpy(pk),
        torch.from_numpy(node_local),
        torch.from_numpy(real),
    )


def eval_packing(ev, shifts: Sequence[int]) -> Packing:
    """The evaluation set's sequences, one pack per group: the clean rows up to the last input
    whose prediction is read (the EOS input predicts nothing), then for each shift the
    selector-swapped rows up to the position that predicts A1. Sequence ``i`` is clean row i;
    ``(1 + j) * N + i`` is row i swapped by ``shifts[j]``. Cached on the evaluation set."""
    key = ("packing", tuple(shifts))
    if key not in ev.cache:
        lay = ev.task.layout
        N, fp = len(ev.tokens), lay.first_pred
        seqs = torch.cat([ev.tokens.cpu()] + [ev.swapped_tokens(s) for s in shifts])  # built on the CPU (numpy)
        lengths = torch.tensor([lay.seq_len - 1] * N + [fp + 1] * (N * len(shifts)), device="cpu")
        group = torch.from_numpy(np.searchsorted(ev.groups, ev.g)).repeat(1 + len(shifts))
        ev.cache[key] = pack_prefixes(seqs, lengths, group).to(ev.tokens.device)
    return ev.cache[key]
