"""The one forward the passes share: the clean and the selector-swapped inputs of the evaluation
set as prefix packs (``model.packing``), every distinct prefix computed once.

A swapped input (B, z_{k+s}) is, up to the position fp that predicts A1, another clean row of
the same group, so a pack per group holds them all; only the clean rows need the positions
after fp. What the later passes read comes back in one ``PackedRun``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from ..metrics import prefix_kv_of, sequence_scores
from ..model.forward import Weights, run_cached
from ..model.packing import Packing, eval_packing
from ..task import EvalSet


@dataclass(frozen=True)
class PackedRun:
    """One packed forward over the clean and swapped inputs at one checkpoint.

    ``resid`` and ``z`` are indexed by pack and node (``pk``), as the interventions restart
    from them; they are empty (no packs) when the forward ran without ``keep``.
    """

    pk: Packing
    shifts: tuple[int, ...]  # selector replacements k -> k+s mod K (none without a selector)
    clean: Float[Tensor, "N P vocab"]  # each clean row's logits (positions fp.. filled, zeros before)
    clean_fp: Float[Tensor, "N vocab"]  # the clean logits at fp (a view of ``clean``)
    swapped_fp: tuple[Float[Tensor, "N vocab"], ...]  # per shift, the swapped rows' logits at fp
    sel_attn: Float[Tensor, "N layer head"]  # attention from fp to the selector positions, minus uniform
    scores: Float[Tensor, "N K"] | None  # every candidate string's score (the paper family), if asked
    resid: list[Float[Tensor, "pack node d_model"]]  # per layer: blocks.{l}.hook_resid_pre
    z: list[Float[Tensor, "pack node head d_head"]]  # per layer: blocks.{l}.attn.hook_z


@torch.no_grad()
def packed_forward(
    W: Weights, ev: EvalSet, shifts: Sequence[int], *, keep: bool, sequence: bool, chunk: int = 256
) -> PackedRun:
    """The clean rows and their swaps (``shifts``, already reduced mod K) through ``run_cached``
    on the packs, ``chunk`` sequences at a time. ``keep``: also keep every layer's residual
    stream and head outputs (what ablation and patching restart from); ``sequence``: score every
    example's K candidate strings from its prompt's keys and values (``metrics.sequence_scores``).

    ``sel_attn`` of a row is its attention from fp to the selector positions, summed over them,
    minus the uniform baseline len_z / (fp + 1).
    """
    lay = ev.task.layout
    K, fp, N = ev.task.cfg.K, lay.first_pred, len(ev.tokens)
    L, H = W.n_layers, W.n_heads
    selpos = list(lay.selector_positions) if ev.task.cfg.has_selector else []
    P, d, V = lay.seq_len - 1, W.W_E.shape[1], W.W_U.shape[1]
    pk = eval_packing(ev, shifts)
    T = pk.tokens.shape[1]
    dev = W.W_U.device
    logits = torch.empty(pk.n_packs, T, V, device=dev)
    n_keep = pk.n_packs if keep else 0
    resid = [torch.empty(n_keep, T, d, device=dev) for _ in range(L)]
    zc = [torch.empty(n_keep, T, H, W.d_head, device=dev) for _ in range(L)]
    sel = torch.zeros(N, L, H, device=dev)
    scores = torch.empty(N, K, device=dev) if sequence and ev.has_sequence_candidates else None
    for c, seqs in pk.chunks(chunk):
        lg, rs, pats, zz, kv = run_cached(W, pk.tokens[c], pk.positions[c], pk.blocked_for(c), keep_kv=True)
        logits[c] = lg
        mine = seqs[seqs < N]  # the clean rows in these packs
        if scores is not None:
            prompt_kv = prefix_kv_of(pk, kv, mine, fp, c.start)
            scores[mine] = sequence_scores(
                W, ev, mine, prompt_kv, pk.gather(lg, mine, fp, c.start), pk.gather(lg, mine, range(fp + 1, P), c.start)
            )
        for l in range(L):
            if selpos:
                at_fp = pk.gather(pats[l].transpose(1, 2), mine, fp, c.start)  # [n, head, key]
                keys = pk.node[mine][:, selpos]
                sel[mine, l] = at_fp.gather(2, keys[:, None].expand(-1, H, -1)).sum(2)
            if keep:
                resid[l][c] = rs[l]
                zc[l][c] = zz[l].transpose(1, 2)
    clean_rows = torch.arange(N, device=dev)
    clean = logits.new_zeros(N, P, V)  # the metrics read positions fp.. only
    clean[:, fp:] = pk.gather(logits, clean_rows, range(fp, P))
    swapped = tuple(pk.gather(logits, (1 + i) * N + clean_rows, fp) for i in range(len(shifts)))
    return PackedRun(pk, tuple(shifts), clean, clean[:, fp], swapped, sel - (len(selpos) / (fp + 1)), scores, resid, zc)
