"""Does the guarded evaluation subset keep every tau exact? A replay of ``metrics.EvalGuard`` on a run.

The pass scores every example of the evaluation set at each checkpoint (the full-set values, what
a run without a subset records), and replays, on the same per-group numbers, what a run with
``eval.seq_subset = n`` and ``eval.seq_guard = z`` would have recorded: the first-token losses
over every group, L_seq over the guard's stages as far as they go given the thresholds the
replayed record leaves active (``metrics.guard``). Both give every crossing the run reports
(``RunConfig.seq_thresholds``: tau at Table 5's alphas, the width's ends, the floor stop, the
dense spacing's ends) in both families, and the transition widths; the pass returns them side by
side. The guard's decisions depend only on the subset's per-group values, which are the numbers
a guarded run computes, so the replay is what that run would have recorded, up to float
rounding in the sums.

Scoring stops at the first checkpoint whose full-set L_seq and Lc are both below the lowest
threshold: no later checkpoint moves a first crossing or a width.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError, load_state_checked
from ..metrics import EvalGuard, eval_guard
from ..summaries import tau, transition_width

FAMILY_KEYS = {"paper": "L_seq", "first_token": "Lc"}


def _row(
    step: int, per_group: dict[str, np.ndarray], g: EvalGuard, groups: np.ndarray, sampled: np.ndarray | None = None
) -> dict[str, Any]:
    """One checkpoint: the full-set means, what the guarded run records (L_seq over the guard's
    stages as far as they go; the first-token losses over every group, or with
    ``EvalGuard.first_token`` over the same stages), how many groups it scored there, and the
    standard deviation of the full set's group means of L_seq. ``sampled``: each group's L_seq
    mean over the guard's sampled rows (``EvalGuard.row_mask``), what a stage short of every
    group reads."""
    row: dict[str, Any] = {"step": step}
    for k, v in per_group.items():
        row[f"{k}_full"] = row[f"{k}_guarded"] = float(v.mean())
    position = {int(x): i for i, x in enumerate(groups)}
    for n in g.stages():
        at = [position[int(x)] for x in g.order[:n]]
        est = {k: g.estimate(v[at], len(groups)) for k, v in per_group.items()}
        if sampled is not None and n < len(groups):
            est["L_seq"] = g.estimate(sampled[at], len(groups), rows_sampled=True)
        if n >= len(groups) or not (
            g.undecided(*est["L_seq"]) or g.undecided_first_token(est["Lc"], est.get("swap_gap"))
        ):
            break
    row.update({"L_seq_guarded": est["L_seq"][0], "L_seq_se": est["L_seq"][1], "groups_scored": n})
    if g.first_token:
        row.update({f"{k}_guarded": est[k][0] for k in ("Lc", "swap_gap") if k in est})
    row["scored_all"] = n >= len(groups)
    v = per_group["L_seq"]
    row["L_seq_group_sd"] = float(v.std(ddof=1)) if len(v) > 1 else None  # the spread a subset samples from
    return row


def guard_check(
    run: str | Run,
    subset: int = 20,
    z: float = 5.0,
    progress: bool = False,
    first_token: bool = False,
    seq_rows: int = 0,
) -> dict[str, Any]:
    """Per checkpoint (``rows``): each watched quantity's full-set mean, what the guarded subset
    records, whether the guard scored every group there; and (``crossings``) every reported
    threshold's tau in both families from both, with the widths. ``share_scored``: the groups a
    guarded run scores (the subset everywhere, plus every group where the guard fires) over those
    of full scoring, on the checkpoints read. ``first_token``: replay ``eval.guard_first_token``
    (the first-token losses on the stages too, guarded by Lc's and the swap gap's thresholds);
    ``seq_rows``: replay ``eval.seq_rows`` (L_seq on that many seeded rows of each group on the
    stages short of every group)."""
    import torch

    from ..metrics import example_losses

    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(
            f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; the paper's L_seq is undefined"
        )
    cfg = replace(
        cfg,
        eval=replace(
            cfg.eval,
            seq_subset=subset,
            seq_guard=z,
            seq_max_strings=0,
            guard_first_token=first_token,
            seq_rows=seq_rows,
        ),
    )
    K, log_K = cfg.task.K, cfg.task.log_K
    m = seq_rows if 0 < seq_rows < K else K  # rows of a group L_seq reads on a partial stage
    ev = run.eval_set()
    if subset >= ev.n_groups:
        raise RunError(f"subset={subset}: the evaluation set has {ev.n_groups} groups; take fewer")
    lowest = min(cfg.seq_thresholds()) * log_K
    model = run.load_model(run.steps()[0])
    rows = []
    for step in run.steps():
        load_state_checked(model, run.weights(step), run.weights_path(step))
        with torch.no_grad():
            ex = example_losses(model, ev)
        per_group = {k: v.reshape(-1, K).mean(1).astype(np.float64) for k, v in ex.items() if np.isfinite(v).all()}
        history = [[r.get(f"{k}_guarded") for r in rows] for k in ("L_seq", "Lc", "swap_gap")]
        g = eval_guard(cfg, ev, step, *history)
        sampled = None
        if g is not None and g.row_mask is not None:
            mask = g.row_mask.reshape(-1, K)
            sampled = (ex["L_seq"].reshape(-1, K) * mask).sum(1).astype(np.float64) / mask.sum(1)
        rows.append(_row(step, per_group, g, ev.groups, sampled))
        if progress:
            print(
                f"\r{run.path.name}: step {step}, L_seq {rows[-1]['L_seq_full']:.3f}",
                end="",
                flush=True,
                file=sys.stderr,
            )
        if rows[-1]["L_seq_full"] < lowest and rows[-1]["Lc_full"] < lowest:
            break
    if progress:
        print(file=sys.stderr)
    steps = [r["step"] for r in rows]
    crossings, widths = [], {}
    for fam, key in FAMILY_KEYS.items():
        curves = {k: [r[f"{key}_{k}"] for r in rows] for k in ("full", "guarded")}
        crossings += [
            {"definition": fam, "fraction": f, **{f"tau_{k}": tau(steps, c, log_K, f) for k, c in curves.items()}}
            for f in cfg.seq_thresholds()
        ]
        widths[fam] = {
            k: transition_width(steps, c, log_K, cfg.eval.width_hi, cfg.eval.width_lo) for k, c in curves.items()
        }
    n_all = sum(r["scored_all"] for r in rows)
    return {
        "run": str(run.path),
        "K": K,
        "subset": subset,
        "z": z,
        "first_token": first_token,
        "seq_rows": m,
        "share_rows_scored": sum(r["groups_scored"] * (K if r["scored_all"] else m) for r in rows)
        / (len(rows) * ev.n_groups * K),
        "eval_groups": ev.n_groups,
        "checkpoints": len(rows),
        "scored_all": n_all,
        "share_scored": sum(r["groups_scored"] for r in rows) / (len(rows) * ev.n_groups),
        "crossings": crossings,
        "widths": widths,
        "all_equal": all(c["tau_full"] == c["tau_guarded"] for c in crossings)
        and all(w["full"] == w["guarded"] for w in widths.values()),
        "rows": rows,
    }
