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

    ``clean`` is None when only the position fp was asked for (``tail=False``); ``sel_attn``
    without ``attention``, and ``scores`` without ``sequence``, are None; ``resid`` and ``z``
    are indexed by pack and node (``pk``), as the interventions restart from them, and hold no
    packs without ``keep``.
    """

    pk: Packing
    shifts: tuple[int, ...]  # selector replacements k -> k+s mod K (none without a selector)
    clean: Float[Tensor, "N P vocab"] | None  # each clean row's logits (positions fp.. filled, zeros before)
    clean_fp: Float[Tensor, "N vocab"]  # the clean logits at fp (a view of ``clean`` where there is one)
    swapped_fp: tuple[Float[Tensor, "N vocab"], ...]  # per shift, the swapped rows' logits at fp
    sel_attn: Float[Tensor, "N layer head"] | None  # attention from fp to the selector positions, minus uniform
    scores: Float[Tensor, "N K"] | None  # every candidate string's score (the paper family; NaN where unscored)
    resid: list[Float[Tensor, "pack node d_model"]]  # per layer: blocks.{l}.hook_resid_pre
    z: list[Float[Tensor, "pack node head d_head"]]  # per layer: blocks.{l}.attn.hook_z


@torch.no_grad()
def packed_forward(
    W: Weights,
    ev: EvalSet,
    shifts: Sequence[int],
    *,
    chunk: int = CHUNK,
    tail: bool = True,
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
    - ``sequence``: every candidate string's score (``sequence_scores``) for the rows where
      ``score`` (a mask over the rows; default every row) is true; needs ``tail``;
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
    selpos = list(lay.selector_positions) if ev.task.cfg.has_selector and attention else []
    pk = eval_packing(ev, shifts)
    cached = attention or keep
    # the interventions read every node; otherwise the packs stop at fp and each clean row's own
    # tail (A1..A4) runs as a continuation of its prompt (``run_suffixes``): no tail attends to another
    width = None if cached else pk.width(fp + 1)
    clean = torch.zeros(N, P, V, device=dev) if tail else torch.empty(N, 1, V, device=dev)
    swapped = torch.empty(len(shifts), N, V, device=dev)
    sel = torch.zeros(N, L, H, device=dev) if attention else None
    scores = torch.full((N, K), float("nan"), device=dev) if sequence and ev.has_sequence_candidates else None
    wanted = torch.ones(N, dtype=torch.bool, device=dev) if score is None else torch.as_tensor(score, device=dev)
    n_keep = pk.n_packs if keep else 0
    T = pk.tokens.shape[1]
    resid = [torch.empty(n_keep, T, W.W_E.shape[1], device=dev) for _ in range(L)]
    zc = [torch.empty(n_keep, T, H, W.d_head, device=dev) for _ in range(L)]
    first = fp if tail else 0  # where a clean row's positions land in ``clean``
    for c, seqs in pk.chunks(chunk):
        mine, other = seqs[seqs < N], seqs[seqs >= N]
        want = (pk.node[mine][:, fp:P] if tail and cached else pk.node[mine][:, fp : fp + 1]).contiguous()
        want_swap = pk.node[other, fp]
        args = (pk.tokens[c, :width], pk.positions[c, :width], pk.blocked_for(c, width))
        if cached:
            lg, rs, pats, zz, kv = run_cached(W, *args, keep_kv=True)
            col = lambda nodes: nodes  # every node computed
        else:
            read = torch.unique(torch.cat([want.reshape(-1), want_swap]))
            lg, kv = run_packed(W, *args, read, keep_kv=tail)
            col = lambda nodes: torch.searchsorted(read, nodes)  # where each read lies
        clean[mine, first : first + want.shape[1]] = lg[(pk.pack[mine] - c.start)[:, None], col(want)]
        if tail and not cached and len(mine):
            own = ev.tokens[mine, fp + 1 : P][:, None]  # [n, 1, tail]: the row's own A1..A4
            clean[mine, fp + 1 :] = run_suffixes(W, prefix_kv_of(pk, kv, mine, fp, c.start), own, fp + 1)[:, 0]
        swapped[(other - N) // N, (other - N) % N] = lg[pk.pack[other] - c.start, col(want_swap)]
        rows = mine[wanted[mine]]
        if scores is not None and len(rows):
            scores[rows] = sequence_scores(
                W, ev, rows, prefix_kv_of(pk, kv, rows, fp, c.start), clean[rows, fp], clean[rows, fp + 1 :]
            )
        for l in range(L if cached else 0):
            if selpos:
                at_fp = pk.gather(pats[l].transpose(1, 2), mine, fp, c.start)  # [n, head, key]
                keys = pk.node[mine][:, selpos]
                sel[mine, l] = at_fp.gather(2, keys[:, None].expand(-1, H, -1)).sum(2)
            if keep:
                resid[l][c] = rs[l]
                zc[l][c] = zz[l].transpose(1, 2)
    if sel is not None:
        sel -= len(selpos) / (fp + 1)
    return PackedRun(
        pk, tuple(shifts), clean if tail else None, clean[:, first], tuple(swapped), sel, scores, resid, zc
    )


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
