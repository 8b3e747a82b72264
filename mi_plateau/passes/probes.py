"""The four analysis passes at one checkpoint, batched (SPEC section 5). All losses in nats.

Everything runs on the fixed evaluation set (200 groups x K examples, clean labels). With
``fp`` the position that predicts the first target token A1 (the SEP before A):

- **Head ablation.** For each head, its ``hook_z`` is set to 0 at every position (or, with
  ``mean=True``, to its mean over the evaluation set at that position) and
  ``dLc = Lc(ablated) - Lc(clean)``; ``dL1`` likewise for the full-vocabulary first-token loss.
- **z-dependence.** ``swap_gap = Lc(z replaced) - Lc(clean)``, the replacement of selector k
  being k+s mod K for each shift s in ``shifts`` (default s=1), averaged over shifts. Causal
  variant: for each layer l, the residual stream ``blocks.{l}.hook_resid_pre`` at the selector
  positions is patched from the swapped example (same B, other z) into the clean run, and
  ``patch_frac[l] = (LD_patched - LD_clean) / (LD_swapped - LD_clean)`` where LD is the logit of
  the clean answer's A1 minus that of the swapped selector's A1, averaged over examples before
  the ratio. 1 means everything the selector does at fp flows through the patched positions.
- **Selector-routing score.** (a) ``sel_attn``: attention from fp to the selector positions,
  summed over them and averaged over examples, minus the uniform baseline len_z / (fp + 1)
  (the selector keys' share of the visible positions, 2 of 11 by default). (b) ``swap_contrib``:
  the swap gap minus the swap gap with the head ablated (nats of z-dependence that need the
  head), and ``causal_share = swap_contrib / swap_gap`` (NaN while swap_gap < ``min_gap``).
- **Per-group accuracy.** A group's accuracy is the fraction of its K examples whose target
  tokens (EOS excluded) are all the teacher-forced argmax.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import candidate_losses, example_correct, target_loss
from ..model import head_names
from ..task import CHAR0, EvalSet
from .forward import Weights, from_layer, from_mid, packed_swap_layout, run_cached


def _chunks(n: int, size: int):
    for i in range(0, n, size):
        yield slice(i, min(n, i + size))


@torch.no_grad()
def checkpoint_passes(
    W: Weights,
    ev: EvalSet,
    *,
    step: int = 0,
    shifts: Sequence[int] = (1,),
    mean: bool = False,
    ablation: bool = True,
    min_gap: float = 0.05,
    chunk: int = 256,
    timings: dict[str, float] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """All passes at one checkpoint; returns tidy rows keyed "checkpoint", "heads", "groups", "patching".

    With ``ablation=False`` only the cheap passes run (clean and swapped forwards: losses,
    accuracy, swap gap, selector attention); the per-head ablation columns are NaN and no
    patching rows are produced. ``timings``, if given, receives the seconds of each part:
    "forward" (the packed clean and swapped forward: losses, accuracy, swap gap, selector
    attention), "ablation" (every head on the clean and the swapped inputs), "patching".
    """
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + now - clock[0]
        clock[0] = now

    task = ev.task
    K = task.cfg.K
    lay = task.layout
    fp = lay.first_pred
    N = len(ev.tokens)
    L, H = W.n_layers, W.n_heads
    has_sel = task.cfg.has_selector
    selpos = list(lay.selector_positions) if has_sel else []
    shifts = [s % K for s in shifts if s % K] if has_sel else []

    # --- one packed forward per chunk: the clean sequence (EOS input dropped) followed, per
    # shift, by the selector-swapped positions zs..fp, which see the clean keys before the
    # selector (the same tokens, so causally the same keys and values) ----------------------
    S = len(shifts)
    zs_ = lay.selector_positions.start if has_sel else fp
    n_sw, P, d = fp + 1 - zs_, lay.seq_len - 1, W.W_E.shape[1]
    positions, allowed = packed_swap_layout(lay.seq_len, fp, zs_, S)
    swapped = [ev.swapped_tokens(s)[:, zs_ : fp + 1] for s in shifts]
    Lc, L1, mass = torch.empty(N), torch.empty(N), torch.empty(N)
    correct = torch.empty(N, dtype=torch.bool)
    clean_fp_logits = torch.empty(N, W.W_U.shape[1])
    sw_fp_logits = [torch.empty(N, W.W_U.shape[1]) for _ in shifts]
    full = 0.0
    # per layer: the residual stream before it and every head's z, at the positions the
    # interventions restart from (clean 0..fp; swapped zs..fp); kept only when they run
    n_keep = N if ablation else 0
    resid = [torch.empty(n_keep, fp + 1, d) for _ in range(L)]
    zc = [torch.empty(n_keep, H, fp + 1, W.d_head) for _ in range(L)]
    sw_resid = [[torch.empty(n_keep, n_sw, d) for _ in range(L)] for _ in shifts]
    sw_z = [[torch.empty(n_keep, H, n_sw, W.d_head) for _ in range(L)] for _ in shifts]
    sel_attn = torch.zeros(L, H)
    z_sum = [torch.zeros(H, fp + 1, W.d_head) for _ in range(L)]  # for mean ablation
    for sl in _chunks(N, chunk):
        toks = ev.tokens[sl]
        packed = torch.cat([toks[:, :P], *[sw[sl] for sw in swapped]], 1)
        logits, rs, pats, zz = run_cached(W, packed, positions, ~allowed)
        clean_fp_logits[sl] = logits[:, fp]
        Lc[sl], mass[sl] = candidate_losses(logits[:, fp], ev.candidates[sl], ev.cand_index[sl])
        L1[sl] = F.cross_entropy(logits[:, fp], ev.target_first[sl], reduction="none")
        correct[sl] = example_correct(logits[:, :P], toks, lay)
        full += target_loss(logits[:, :P], toks, lay).item() * len(toks)
        for l in range(L):
            if selpos:
                sel_attn[l] += pats[l][:, :, fp, selpos].sum(-1).sum(0)
            if ablation:
                resid[l][sl] = rs[l][:, : fp + 1]
                zc[l][sl] = zz[l][:, :, : fp + 1]
                if mean:
                    z_sum[l] += zz[l][:, :, : fp + 1].sum(0)
        for i in range(S):
            seg = slice(P + i * n_sw, P + (i + 1) * n_sw)
            sw_fp_logits[i][sl] = logits[:, seg.stop - 1]
            for l in range(L) if ablation else ():
                sw_resid[i][l][sl] = rs[l][:, seg]
                sw_z[i][l][sl] = zz[l][:, :, seg]
    sel_attn = sel_attn / N - (len(selpos) / (fp + 1))
    z_mean = [z / N for z in z_sum]  # [head, pos, d_head]

    acc_group = correct.float().reshape(-1, K).mean(-1)
    Lc_group = Lc.reshape(-1, K).mean(-1)
    ck: dict[str, Any] = {
        "step": step,
        "Lc": Lc.mean().item(),
        "L1": L1.mean().item(),
        "full_loss": full / N,
        "cand_mass": mass.mean().item(),
        "acc_mean": acc_group.mean().item(),
        "groups_ge80": (acc_group >= 0.8 - 1e-9).float().mean().item(),
        "groups_100": (acc_group >= 1 - 1e-9).float().mean().item(),
    }
    groups = [
        {"step": step, "group": int(g), "acc": float(a), "Lc": float(c)}
        for g, a, c in zip(ev.groups, acc_group.tolist(), Lc_group.tolist())
    ]

    # --- selector swaps --------------------------------------------------------------
    Lc_sw = torch.zeros(N)
    ld_clean = ld_swap = other_first = None
    for si, s in enumerate(shifts):
        Lc_sw += candidate_losses(sw_fp_logits[si], ev.candidates, ev.cand_index)[0] / S
        if si == 0:
            # logit difference: clean answer's A1 minus the swapped selector's A1
            other_first = torch.from_numpy(task.targets[ev.g, (ev.s + s) % K, 0] + CHAR0) if task.cfg.targets_A else ev.target_first
            ld_clean = _ld(clean_fp_logits, ev.target_first, other_first)
            ld_swap = _ld(sw_fp_logits[0], ev.target_first, other_first)
    gap = (Lc_sw.mean() - Lc.mean()).item() if shifts else float("nan")
    ck["swap_gap"] = gap
    ck["swap_Lc"] = Lc_sw.mean().item() if shifts else float("nan")

    lap("forward")
    # --- head ablation (clean and swapped inputs), variants stacked on the batch -------
    head_rows: list[dict[str, Any]] = []
    names = head_names(L, H)
    nan = float("nan")
    if not ablation:
        head_rows = [
            {"step": step, "head": names[l * H + h], "layer": l, "head_index": h, "sel_attn": sel_attn[l, h].item(),
             "dLc": nan, "dL1": nan, "swap_contrib": nan, "causal_share": nan}
            for l in range(L) for h in range(H)
        ]
    else:
        base = _Base(clean_fp_logits, sw_fp_logits, ev)
        for l in range(L):
            fill = z_mean[l] if mean else None
            dLc, dL1, dLc_sw = _ablate_layer(W, l, ev, fp, zs_, resid[l], zc[l], [r[l] for r in sw_resid],
                                             [z[l] for z in sw_z], fill, base, chunk)
            # gap with head h ablated = (Lc_sw + dLc_sw) - (Lc + dLc): the swap gap it removes
            contrib = dLc - dLc_sw
            for h in range(H):
                c = contrib[h].item() if shifts else float("nan")
                head_rows.append(
                    {
                        "step": step,
                        "head": names[l * H + h],
                        "layer": l,
                        "head_index": h,
                        "sel_attn": sel_attn[l, h].item(),
                        "dLc": dLc[h].item(),
                        "dL1": dL1[h].item(),
                        "swap_contrib": c,
                        "causal_share": c / gap if shifts and gap >= min_gap else float("nan"),
                    }
                )

    lap("ablation")
    # --- causal patching of the selector positions, layer by layer ---------------------
    patch_rows: list[dict[str, Any]] = []
    if ablation and shifts:
        denom = (ld_swap - ld_clean).mean().item()
        for l in range(L):
            moved = torch.empty(N)
            for sl in _chunks(N, chunk):
                x = resid[l][sl].clone()
                x[:, selpos] = sw_resid[0][l][sl][:, [p - zs_ for p in selpos]]
                lg = from_layer(W, l, x, at=fp)
                moved[sl] = _ld(lg, ev.target_first[sl], other_first[sl]) - ld_clean[sl]
            frac = moved.mean().item() / denom if abs(denom) > 1e-6 else float("nan")
            patch_rows.append({"step": step, "layer": l, "patch_frac": frac, "ld_moved": moved.mean().item()})
        ck["ld_clean"] = ld_clean.mean().item()
        ck["ld_swap"] = ld_swap.mean().item()
    lap("patching")
    return {"checkpoint": [ck], "heads": head_rows, "groups": groups, "patching": patch_rows}


def _ld(logits: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logits.gather(1, a[:, None]).squeeze(1) - logits.gather(1, b[:, None]).squeeze(1)


class _Base:
    """Per-example losses of the unablated model that every ablation is compared with."""

    def __init__(self, clean_fp_logits, sw_fp_logits, ev):
        self.lc = candidate_losses(clean_fp_logits, ev.candidates, ev.cand_index)[0]
        self.l1 = F.cross_entropy(clean_fp_logits, ev.target_first, reduction="none")
        self.lc_sw = [candidate_losses(lg, ev.candidates, ev.cand_index)[0] for lg in sw_fp_logits]


def _ablate_layer(W, l, ev, fp, zs, x, z, sw_x, sw_z, fill, base: _Base, chunk):
    """Mean over examples of (loss with head h of layer l ablated) - (loss unablated), for every
    h: dLc and dL1 on the clean input, dLc averaged over the selector shifts on the swapped one.

    Ablating head h changes layer l only by that head's output, so every variant restarts at
    layer l's residual mid-point: the clean ``x`` (= ``hook_resid_pre``) plus the attention
    output of all heads, minus head h's ``z_h W_O[h]`` (plus ``fill_h W_O[h]`` for mean
    ablation). The H variants are stacked on the batch, and each swapped input contributes only
    its positions zs..fp, packed after the clean ones (``packed_swap_layout``).
    """
    b = W.blocks[l]
    H, E = W.n_heads, W.d_head
    N, S = len(x), len(sw_x)
    n_sw = fp + 1 - zs
    _, allowed = packed_swap_layout(fp + 2, fp, zs, S)
    blocked = ~allowed
    rows = torch.tensor([fp] + [fp + (i + 1) * n_sw for i in range(S)])  # each segment's fp
    if fill is not None:
        fill = torch.cat([fill] + [fill[:, zs:]] * S, 1)  # [head, packed pos, d_head]
    dLc, dL1, dLc_sw = torch.zeros(H), torch.zeros(H), torch.zeros(H)
    for sl in _chunks(N, max(1, chunk // H)):
        n = sl.stop - sl.start
        zz = torch.cat([z[sl]] + [s[sl] for s in sw_z], 2)  # [n, head, packed pos, d_head]
        T = zz.shape[2]
        mid = torch.cat([x[sl]] + [s[sl] for s in sw_x], 1) + F.linear(
            zz.transpose(1, 2).reshape(n, T, H * E), b["W_O_flat"], b["b_O"])
        dz = (fill[None] if fill is not None else 0.0) - zz
        xb = (mid[None] + torch.einsum("nhte,hed->hntd", dz, b["W_O"])).reshape(H * n, T, -1)
        lg = from_mid(W, l, xb, rows, blocked)  # [H * n, 1 + S, d_vocab], variant-major
        cand, ci = ev.candidates[sl].repeat(H, 1), ev.cand_index[sl].repeat(H)
        dLc += (candidate_losses(lg[:, 0], cand, ci)[0].reshape(H, n) - base.lc[None, sl]).sum(1)
        l1 = F.cross_entropy(lg[:, 0], ev.target_first[sl].repeat(H), reduction="none").reshape(H, n)
        dL1 += (l1 - base.l1[None, sl]).sum(1)
        for i in range(S):
            lc = candidate_losses(lg[:, 1 + i], cand, ci)[0].reshape(H, n)
            dLc_sw += (lc - base.lc_sw[i][None, sl]).sum(1) / S
    return dLc / N, dL1 / N, dLc_sw / N
