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
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import candidate_losses, example_correct, target_loss
from ..model import head_names
from ..task import CHAR0, EvalSet
from .forward import Weights, from_layer, run_cached


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
    chunk: int = 1000,
) -> dict[str, list[dict[str, Any]]]:
    """All passes at one checkpoint; returns tidy rows keyed "checkpoint", "heads", "groups", "patching".

    With ``ablation=False`` only the cheap passes run (clean and swapped forwards: losses,
    accuracy, swap gap, selector attention); the per-head ablation columns are NaN and no
    patching rows are produced.
    """
    task = ev.task
    K = task.cfg.K
    lay = task.layout
    fp = lay.first_pred
    N = len(ev.tokens)
    L, H = W.n_layers, W.n_heads
    has_sel = task.cfg.has_selector
    selpos = list(lay.selector_positions) if has_sel else []
    shifts = [s % K for s in shifts if s % K] if has_sel else []

    # --- clean forward: losses, accuracy, caches for the interventions ------------------
    Lc = torch.empty(N)
    L1 = torch.empty(N)
    mass = torch.empty(N)
    correct = torch.empty(N, dtype=torch.bool)
    clean_fp_logits = torch.empty(N, W.W_U.shape[1])
    full = 0.0
    resid = [torch.empty(N, fp + 1, W.W_E.shape[1]) for _ in range(L + 1)]
    sel_attn = torch.zeros(L, H)
    z_sum = [torch.zeros(H, fp + 1, W.d_head) for _ in range(L)]
    for sl in _chunks(N, chunk):
        toks = ev.tokens[sl]
        logits, rs, pats, zs = run_cached(W, toks)
        clean_fp_logits[sl] = logits[:, fp]
        Lc[sl], mass[sl] = candidate_losses(logits[:, fp], ev.candidates[sl], ev.cand_index[sl])
        L1[sl] = F.cross_entropy(logits[:, fp], ev.target_first[sl], reduction="none")
        correct[sl] = example_correct(logits, toks, lay)
        full += target_loss(logits, toks, lay).item() * len(toks)
        for l in range(L + 1):
            resid[l][sl] = rs[l][:, : fp + 1]
        for l in range(L):
            if selpos:
                sel_attn[l] += pats[l][:, :, fp, selpos].sum(-1).sum(0)
            z_sum[l] += zs[l][:, :, : fp + 1].sum(0)
    sel_attn = sel_attn / N - (len(selpos) / (fp + 1))
    z_mean = [(z / N).permute(1, 0, 2) for z in z_sum]  # [head, pos, d_head] -> [pos, head, d_head]

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
    sw_resid: list[list[torch.Tensor]] = []
    sw_fp_logits: list[torch.Tensor] = []
    Lc_sw = torch.zeros(N)
    ld_clean = ld_swap = None
    other_first = None
    for si, s in enumerate(shifts):
        toks_sw = ev.swapped_tokens(s)[:, : fp + 1]
        rs_all = [torch.empty(N, fp + 1, W.W_E.shape[1]) for _ in range(L + 1)]
        lc_s = torch.empty(N)
        logit_sw = torch.empty(N, W.W_U.shape[1])
        for sl in _chunks(N, chunk):
            logits, rs, _, _ = run_cached(W, toks_sw[sl])
            lc_s[sl] = candidate_losses(logits[:, fp], ev.candidates[sl], ev.cand_index[sl])[0]
            logit_sw[sl] = logits[:, fp]
            for l in range(L + 1):
                rs_all[l][sl] = rs[l]
        Lc_sw += lc_s / len(shifts)
        sw_resid.append(rs_all)
        sw_fp_logits.append(logit_sw)
        if si == 0:
            # logit difference: clean answer's A1 minus the swapped selector's A1
            other_first = torch.from_numpy(task.targets[ev.g, (ev.s + s) % K, 0] + CHAR0) if task.cfg.targets_A else ev.target_first
            ld_clean = _ld(clean_fp_logits, ev.target_first, other_first)
            ld_swap = _ld(logit_sw, ev.target_first, other_first)
    gap = (Lc_sw.mean() - Lc.mean()).item() if shifts else float("nan")
    ck["swap_gap"] = gap
    ck["swap_Lc"] = Lc_sw.mean().item() if shifts else float("nan")

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
        for l in range(L):
            fill = z_mean[l] if mean else None
            dLc, dL1 = _ablate_layer(W, l, resid[l], ev, fp, fill, chunk, clean_fp_logits, want_L1=True)
            contrib = torch.zeros(H)
            if shifts:
                abl_sw = torch.zeros(H)
                for si2, rs_all in enumerate(sw_resid):
                    abl_sw += _ablate_layer(W, l, rs_all[l], ev, fp, fill, chunk, sw_fp_logits[si2])[0] / len(shifts)
                # gap with head ablated = (Lc_sw + dLc_sw) - (Lc + dLc)
                contrib = -(abl_sw - dLc)  # swap gap removed by ablating the head
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

    # --- causal patching of the selector positions, layer by layer ---------------------
    patch_rows: list[dict[str, Any]] = []
    if ablation and shifts:
        denom = (ld_swap - ld_clean).mean().item()
        for l in range(L):
            moved = torch.empty(N)
            for sl in _chunks(N, chunk):
                x = resid[l][sl].clone()
                x[:, selpos] = sw_resid[0][l][sl][:, selpos]
                lg = from_layer(W, l, x, at=fp)
                moved[sl] = _ld(lg, ev.target_first[sl], other_first[sl]) - ld_clean[sl]
            frac = moved.mean().item() / denom if abs(denom) > 1e-6 else float("nan")
            patch_rows.append({"step": step, "layer": l, "patch_frac": frac, "ld_moved": moved.mean().item()})
        ck["ld_clean"] = ld_clean.mean().item()
        ck["ld_swap"] = ld_swap.mean().item()
    return {"checkpoint": [ck], "heads": head_rows, "groups": groups, "patching": patch_rows}


def _ld(logits: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logits.gather(1, a[:, None]).squeeze(1) - logits.gather(1, b[:, None]).squeeze(1)


def _ablate_layer(W, l, x, ev, fp, fill, chunk, base_logits, want_L1=False):
    """Mean over examples of (loss with head h of layer l ablated) - (clean loss), for every h.

    The H variants are stacked on the batch; the forward starts at layer l from the clean
    residual ``x`` (= ``blocks.{l}.hook_resid_pre``), since layers below l are unchanged.
    """
    H = W.n_heads
    N = len(x)
    scale = 1 - torch.eye(H)  # variant h keeps every head but h
    dLc = torch.zeros(H)
    dL1 = torch.zeros(H)
    sub = max(1, chunk // H)
    for sl in _chunks(N, sub):
        xs = x[sl]
        n = len(xs)
        base = base_logits[sl]
        xb = xs.repeat(H, 1, 1)  # variant-major: rows h*n .. (h+1)*n-1 ablate head h
        hs = scale.repeat_interleave(n, 0)
        lg = from_layer(W, l, xb, hs, fill, at=fp)
        cand = ev.candidates[sl].repeat(H, 1)
        ci = ev.cand_index[sl].repeat(H)
        lc_abl = candidate_losses(lg, cand, ci)[0].reshape(H, n)
        lc_base = candidate_losses(base, ev.candidates[sl], ev.cand_index[sl])[0]
        dLc += (lc_abl - lc_base[None]).sum(1)
        if want_L1:
            tf = ev.target_first[sl]
            l1_abl = F.cross_entropy(lg, tf.repeat(H), reduction="none").reshape(H, n)
            dL1 += (l1_abl - F.cross_entropy(base, tf, reduction="none")[None]).sum(1)
    return dLc / N, dL1 / N
