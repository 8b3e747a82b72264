"""The four analysis passes at one checkpoint, batched (docs/analyses.md). All losses in nats.

Everything runs on the fixed evaluation set (200 groups x K examples, clean labels). With
``fp`` the position that predicts the first target token A1 (the SEP before A):

- **Head ablation.** For each head, its ``hook_z`` is replaced as the registered head ablation
  ``head_ablation`` defines (``mi_plateau.interventions``: "zero", 0 at every position, by
  default; "mean", its mean over the evaluation set at that position; ...) and
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

The paper family (``metrics``: sequence candidate loss L_seq, candidate accuracy) runs where
``sequence`` is set (by default with the per-head passes): every example's K candidate strings
are scored from its prompt's keys and values. A selector-swapped or z-shuffled prompt (B, z')
is the clean prompt of another example of the same group, so its scores are that example's
row of the score matrix, read at the true target's index: the paper's swap gap
``swap_gap_seq = L_seq(z replaced) - L_seq`` and z-shuffle gap cost no forward of their own.

- **z-shuffle.** The selectors are deranged across the evaluation set's examples (a fixed
  permutation with no fixed point, seed ``shuffle_seed``): example i is shown example pi(i)'s
  selector, which is its own with probability ~1/K, as in the paper's shuffle.
  ``shuffle_gap = Lc(shuffled) - Lc``; ``shuffle_gap_seq`` likewise for L_seq.
- **Head ablation, the paper's Delta L.** ``dL`` = full-vocabulary mean cross-entropy over all
  target positions (A1..A4 and EOS) with the head ablated, minus clean.
- **Patching at every registered hook** (``interventions.resid_patches``). ``hook``
  "resid_pre" patches ``blocks.{l}.hook_resid_pre``; "resid_post" patches
  ``blocks.{l}.hook_resid_post`` (= the next layer's resid_pre; after the last layer the
  selector positions feed nothing that reaches fp, so its fraction is 0).

One function per pass, each returning its own columns or rows (``checkpoint_passes`` runs them
all after one ``metrics.packed_forward``): ``clean_pass`` (losses, accuracy), ``paper_pass``
(the paper family), ``swap_pass``, ``shuffle_pass``, ``ablation_pass`` and ``head_rows`` (the
per-head scores, one column per score registered in ``head_scores``), ``patching_pass``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..interventions import head_ablation_named, resid_patches
from ..metrics import (
    PackedRun,
    accuracy_stats,
    candidate_losses,
    example_correct,
    first_token_rows,
    group_means,
    packed_forward,
    sequence_losses,
    target_loss,
)
from ..model import head_names
from ..model.forward import Weights
from ..task import CHAR0, EvalSet, derangement
from .head_scores import HEAD_SCORES, HeadInputs
from .packed_twins import Baseline, HeadEffects, ablate_layer, logit_diff, patch_layer

Rows = list[dict[str, Any]]
Columns = dict[str, Any]  # one pass's columns of a row: name -> value (a checkpoint) or [group] tensor
NAN = float("nan")
# the groups table's columns, in the order its rows list them
GROUP_COLUMNS = ("acc", "Lc", "cand_acc", "L_seq", "swap_gap", "swap_gap_seq")


def same_group_row(ev: EvalSet, sel: np.ndarray) -> torch.Tensor:
    """Row of the evaluation set with each row's group and selector ``sel`` (rows are group-major)."""
    K = ev.task.cfg.K
    return torch.from_numpy((np.arange(len(ev.g)) // K) * K + sel).to(ev.tokens.device)


class _Clock:
    """Adds the seconds since the last lap to ``timings[name]`` (if given)."""

    def __init__(self, timings: dict[str, float] | None):
        self.timings, self.t = timings, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self.timings is not None:
            self.timings[name] = self.timings.get(name, 0.0) + now - self.t
        self.t = now


@torch.no_grad()
def checkpoint_passes(
    W: Weights,
    ev: EvalSet,
    *,
    step: int = 0,
    shifts: Sequence[int] = (1,),
    head_ablation: str = "zero",
    ablation: bool = True,
    sequence: bool | None = None,
    shuffle_seed: int = 0,
    min_gap: float = 0.05,
    chunk: int = 256,
    timings: dict[str, float] | None = None,
) -> dict[str, Rows]:
    """All passes at one checkpoint; returns tidy rows keyed "checkpoint", "heads", "groups",
    "patching", "head_groups". They run on the device of ``W`` and ``ev`` (``EvalSet.on``); call
    it inside ``with device:`` so that the tensors it makes are there too (``analyze_run`` does).

    ``head_ablation`` names the registered head ablation the per-head passes run
    (``interventions.head_ablations``). With ``ablation=False`` only the cheap passes run (clean
    and swapped forwards: losses, accuracy, swap gap, selector attention); the per-head ablation
    columns are NaN and no patching rows are produced. ``sequence`` (default: ``ablation``) adds
    the paper family.
    ``timings``, if given, receives the seconds of each part: "forward" (the prefix packs of the
    clean and swapped inputs: losses, accuracy, swap gap, selector attention), "ablation" (every
    head on the clean and the swapped inputs), "patching".
    """
    clock = _Clock(timings)
    K = ev.task.cfg.K
    shifts = tuple(s % K for s in shifts if s % K) if ev.task.cfg.has_selector else ()
    seq = ablation if sequence is None else sequence
    run = packed_forward(W, ev, shifts, chunk=chunk, sequence=seq, attention=True, keep=ablation)
    shuffled = ev.s[derangement(len(ev.tokens), shuffle_seed)]
    ck_clean, g_clean = clean_pass(ev, run)
    ck_paper, g_paper = paper_pass(ev, run, shuffled)
    ck_swap, g_swap = swap_pass(ev, run)
    ck = {"step": step, **ck_clean, **ck_paper, **ck_swap, **shuffle_pass(ev, run, shuffled)}
    groups = group_rows(ev, step, {**g_clean, **g_paper, **g_swap})
    clock.lap("forward")
    if ablation:
        effects = ablation_pass(W, ev, run, head_ablation=head_ablation, chunk=chunk)
    else:
        effects = HeadEffects.nan(W.n_layers, W.n_heads, len(ev.groups), W.W_U.device)
    heads, head_groups = head_rows(ev, run, effects, step=step, swap_gap=ck["swap_gap"], min_gap=min_gap)
    clock.lap("ablation")
    patching: Rows = []
    if ablation and shifts:
        patching, ld = patching_pass(W, ev, run, step=step, chunk=chunk)
        ck.update(ld)
    clock.lap("patching")
    return {"checkpoint": [ck], "heads": heads, "groups": groups, "patching": patching, "head_groups": head_groups}


def _clean_Lc(ev: EvalSet, run: PackedRun) -> Tensor:
    return candidate_losses(run.clean_fp, ev.candidates, ev.cand_index)[0]


def clean_pass(ev: EvalSet, run: PackedRun) -> tuple[Columns, Columns]:
    """The first-token family on the clean rows: the checkpoint's Lc, L1, full target loss,
    candidate mass and accuracy numbers (``metrics.accuracy_stats``); per group, its accuracy
    and mean Lc."""
    lay, K = ev.task.layout, ev.task.cfg.K
    Lc, mass, L1 = first_token_rows(run.clean_fp, ev)
    acc = group_means(example_correct(run.clean, ev.tokens, lay).float(), K)
    ck = {
        "Lc": Lc.mean().item(),
        "L1": L1.mean().item(),
        "full_loss": target_loss(run.clean, ev.tokens, lay).item(),
        "cand_mass": mass.mean().item(),
        **accuracy_stats(acc, "first_token"),
    }
    return ck, {"acc": acc, "Lc": group_means(Lc, K)}


def paper_pass(ev: EvalSet, run: PackedRun, shuffled: np.ndarray) -> tuple[Columns, Columns]:
    """The paper family from the candidate scores: L_seq, candidate accuracy, the swap gap
    ``swap_gap_seq`` (averaged over the shifts) and the z-shuffle gap ``shuffle_gap_seq``
    (each row shown selector ``shuffled[row]``); per group, candidate accuracy, L_seq and the
    swap gap. A swapped or shuffled prompt is another row of the score matrix, read at the true
    target's index. NaN where the scores were not computed."""
    K = ev.task.cfg.K
    ck: Columns = {"L_seq": NAN, **accuracy_stats(None, "paper"), "swap_gap_seq": NAN, "shuffle_gap_seq": NAN}
    if run.scores is None:
        return ck, {"cand_acc": None, "L_seq": None, "swap_gap_seq": None}
    own = torch.from_numpy(ev.s).to(ev.tokens.device)
    L_seq, cand_ok = sequence_losses(run.scores, own)

    def seen_with(sel: np.ndarray) -> Tensor:  # per row: L_seq of its target with selector sel shown
        return sequence_losses(run.scores[same_group_row(ev, sel)], own)[0]

    cand = group_means(cand_ok.float(), K)
    ck.update({"L_seq": L_seq.mean().item(), **accuracy_stats(cand, "paper")})
    groups = {"cand_acc": cand, "L_seq": group_means(L_seq, K), "swap_gap_seq": None}
    if ev.task.cfg.has_selector:
        if run.shifts:
            sw = torch.stack([seen_with((ev.s + s) % K) for s in run.shifts]).mean(0)
            ck["swap_gap_seq"] = (sw.mean() - L_seq.mean()).item()
            groups["swap_gap_seq"] = group_means(sw - L_seq, K)
        ck["shuffle_gap_seq"] = (seen_with(shuffled).mean() - L_seq.mean()).item()
    return ck, groups


def swap_pass(ev: EvalSet, run: PackedRun) -> tuple[Columns, Columns]:
    """z-dependence in the first-token family: ``swap_Lc``, Lc with the selector replaced
    (averaged over the shifts), and ``swap_gap = swap_Lc - Lc``; per group, the swap gap."""
    if not run.shifts:
        return {"swap_gap": NAN, "swap_Lc": NAN}, {"swap_gap": None}
    Lc = _clean_Lc(ev, run)
    Lc_sw = torch.zeros(len(ev.tokens), device=Lc.device)
    for lg in run.swapped_fp:
        Lc_sw += candidate_losses(lg, ev.candidates, ev.cand_index)[0] / len(run.shifts)
    ck = {"swap_gap": (Lc_sw.mean() - Lc.mean()).item(), "swap_Lc": Lc_sw.mean().item()}
    return ck, {"swap_gap": group_means(Lc_sw - Lc, ev.task.cfg.K)}


def shuffle_pass(ev: EvalSet, run: PackedRun, shuffled: np.ndarray) -> Columns:
    """The z-shuffle in the first-token family: ``shuffle_gap = Lc(row shown selector
    shuffled[row]) - Lc``. For B-target directions a shuffled prompt is no clean row (the
    prompt holds the row's own A), so it is defined for A-target directions only (else NaN)."""
    if not (ev.task.cfg.has_selector and ev.task.cfg.targets_A):
        return {"shuffle_gap": NAN}
    Lc_sh = candidate_losses(run.clean_fp[same_group_row(ev, shuffled)], ev.candidates, ev.cand_index)[0]
    return {"shuffle_gap": (Lc_sh.mean() - _clean_Lc(ev, run).mean()).item()}


def group_rows(ev: EvalSet, step: int, cols: Columns) -> Rows:
    """One row per group: the per-group columns of the passes (``GROUP_COLUMNS``; NaN where a
    pass left one undefined), which the bootstrap intervals over groups read."""
    G = len(ev.groups)
    vals = {k: cols[k].tolist() if cols.get(k) is not None else [NAN] * G for k in GROUP_COLUMNS}
    return [
        {"step": step, "group": int(g), **{k: float(v[i]) for k, v in vals.items()}} for i, g in enumerate(ev.groups)
    ]


@torch.no_grad()
def ablation_pass(
    W: Weights, ev: EvalSet, run: PackedRun, *, head_ablation: str = "zero", chunk: int = 256
) -> HeadEffects:
    """Every head ablated, layer by layer (``packed_twins.ablate_layer``), as the registered
    head ablation ``head_ablation`` defines (its ``hook_z`` set to 0 by "zero", to its mean over
    the evaluation set at each position by "mean", ...); on the clean and on the swapped inputs."""
    K, L, P = ev.task.cfg.K, W.n_layers, ev.task.layout.seq_len - 1
    iv = head_ablation_named(head_ablation)
    base = Baseline.of(ev, run)
    clean = torch.arange(len(ev.tokens), device=W.W_U.device)
    # what the ablation reads from the clean run, from every clean row's hook_z [row, pos, head, d_head]
    ctx = [iv.context(run.pk.gather(z, clean, range(P)), K) for z in run.z] if iv.context else [None] * L
    per_layer = []
    for l in range(L):
        dL, dLc, dL1, dLc_sw, per_ex = ablate_layer(W, l, ev, run.pk, run.resid[l], run.z[l], iv, ctx[l], base, chunk)
        g_dL, g_dLc, g_sw = (group_means(v, K) for v in per_ex)
        # gap with head h ablated = (Lc_sw + dLc_sw) - (Lc + dLc): the swap gap it removes
        per_layer.append((dL, dLc, dL1, dLc - dLc_sw, g_dL, g_dLc, g_dLc - g_sw))
    fx = HeadEffects(*(torch.stack(c) for c in zip(*per_layer)))
    if not run.shifts:  # no swapped input: no swap gap to remove
        fx.swap_contrib.fill_(NAN)
        fx.group_swap_contrib.fill_(NAN)
    return fx


def head_rows(
    ev: EvalSet, run: PackedRun, fx: HeadEffects, *, step: int, swap_gap: float, min_gap: float
) -> tuple[Rows, Rows]:
    """The per-head scores of ``head_scores.HEAD_SCORES`` (selector attention ``sel_attn``, dL,
    dLc, dL1, ``swap_contrib`` and ``causal_share = swap_contrib / swap_gap``, NaN while the
    swap gap is below ``min_gap``, and any score registered there): rows per head ("heads", one
    column per score) and per head and group ("head_groups", the scores with per-group values)."""
    at = HeadInputs(ev, run, fx, swap_gap, min_gap)
    scores = {s.name: s.compute(at).tolist() for s in HEAD_SCORES.values()}
    grouped = {s.name: s.per_group(at).tolist() for s in HEAD_SCORES.values() if s.per_group is not None}
    _, L, H = run.sel_attn.shape
    names = head_names(L, H)
    heads: Rows = []
    per_group: Rows = []
    for l in range(L):
        for h in range(H):
            head = names[l * H + h]
            heads.append(
                {"step": step, "head": head, "layer": l, "head_index": h, **{k: v[l][h] for k, v in scores.items()}}
            )
            per_group += [
                {"step": step, "head": head, "group": int(g), **{k: v[l][h][i] for k, v in grouped.items()}}
                for i, g in enumerate(ev.groups)
            ]
    return heads, per_group


@torch.no_grad()
def patching_pass(W: Weights, ev: EvalSet, run: PackedRun, *, step: int, chunk: int = 256) -> tuple[Rows, Columns]:
    """Causal patching of the selector positions from the swapped input (the first shift), layer
    by layer at every registered hook (``interventions.resid_patches``): rows (hook, layer,
    ``patch_frac``, ``ld_moved``, the mean change of the logit difference), and the
    checkpoint's ``ld_clean`` and ``ld_swap``. Each hook's packed twin restarts at
    ``hook_resid_pre`` of some layer (``ResidPatch.restart``), computed once per layer."""
    task, K, L = ev.task, ev.task.cfg.K, W.n_layers
    fp = task.layout.first_pred
    s = run.shifts[0]
    # logit difference: clean answer's A1 minus the swapped selector's A1
    other = (
        torch.from_numpy(task.targets[ev.g, (ev.s + s) % K, 0] + CHAR0).to(ev.tokens.device)
        if task.cfg.targets_A
        else ev.target_first
    )
    ld_clean = logit_diff(run.clean_fp, ev.target_first, other)
    ld_swap = logit_diff(run.swapped_fp[0], ev.target_first, other)
    denom = (ld_swap - ld_clean).mean().item()
    Wd = run.pk.width(fp + 1)  # the nodes the patched rows restart from: every node of depth <= fp
    moved: dict[int | None, tuple[float, float]] = {None: (0.0, 0.0)}  # restart layer -> (frac, ld_moved)
    rows = []
    for iv in resid_patches():
        for l in range(L):
            r = iv.restart(l, L)
            if r not in moved:
                lg = patch_layer(W, r, ev, run.pk, run.resid[r][:, :Wd], chunk)
                mv = (logit_diff(lg, ev.target_first, other) - ld_clean).mean().item()
                moved[r] = (mv / denom if abs(denom) > 1e-6 else NAN, mv)
            frac, mv = moved[r]
            rows.append({"step": step, "hook": iv.name, "layer": l, "patch_frac": frac, "ld_moved": mv})
    return rows, {"ld_clean": ld_clean.mean().item(), "ld_swap": ld_swap.mean().item()}
