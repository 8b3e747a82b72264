"""Does the guarded subset keep every tau exact? A replay of ``metrics.SeqGuard`` on a run.

The pass scores every example of the evaluation set at each checkpoint (the full-set L_seq, what
a run without a subset records), and replays, on the same per-group numbers, what a run with
``eval.seq_subset = n`` and ``eval.seq_guard = z`` would have recorded: the subset's estimate,
or the full-set mean where the guard fires. Both curves then give every crossing the run
reports (``RunConfig.seq_thresholds``: tau at Table 5's alphas, the width's ends, the floor stop)
and the transition width; the pass returns both side by side. The guard's decisions depend only
on the subset's per-group values, which are the same numbers a guarded run computes, so the
replay is what that run would have recorded, up to float rounding in the sums.

Scoring stops at the first checkpoint whose full-set L_seq is below the lowest threshold: no
later checkpoint moves a first crossing or the width.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError, load_state_checked
from ..metrics import SeqGuard, seq_guard
from ..summaries import tau, transition_width


def guard_check(run: str | Run, subset: int = 40, z: float = 5.0, progress: bool = False) -> dict[str, Any]:
    """Per checkpoint (``rows``): the full-set L_seq, what the guarded subset records, whether the
    guard scored every group there, and the subset's standard error; and (``crossings``) each
    reported threshold's tau from both curves, with the width (t_start, t_end) from both.
    ``share_scored``: the strings the guarded run scores over those of full scoring, on the
    checkpoints read."""
    import torch

    from ..metrics import example_losses

    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; the paper's L_seq is undefined")
    cfg = replace(cfg, eval=replace(cfg.eval, seq_subset=subset, seq_guard=z, seq_max_strings=0))
    K, log_K = cfg.task.K, cfg.task.log_K
    ev = run.eval_set()
    if subset >= ev.n_groups:
        raise RunError(f"subset={subset}: the evaluation set has {ev.n_groups} groups; take fewer")
    lowest = min(cfg.seq_thresholds()) * log_K
    model = run.load_model(run.steps()[0])
    rows = []
    for step in run.steps():
        load_state_checked(model, run.weights(step), run.weights_path(step))
        with torch.no_grad():
            per_group = example_losses(model, ev)["L_seq"].reshape(-1, K).mean(1).astype(np.float64)
        g: SeqGuard = seq_guard(cfg, ev, step)
        est, se = g.estimate(per_group[np.isin(ev.groups, g.groups)], ev.n_groups)
        full = g.must_score_all(est, se)
        rows.append({"step": step, "L_seq_full": float(per_group.mean()), "L_seq_guarded": float(per_group.mean()) if full else est,
                     "scored_all": full, "se": se})
        if progress:
            print(f"\r{run.path.name}: step {step}, L_seq {rows[-1]['L_seq_full']:.3f}", end="", flush=True, file=sys.stderr)
        if per_group.mean() < lowest:
            break
    if progress:
        print(file=sys.stderr)
    steps = [r["step"] for r in rows]
    curves = {k: [r[f"L_seq_{k}"] for r in rows] for k in ("full", "guarded")}
    crossings = [{"fraction": f, **{f"tau_{k}": tau(steps, c, log_K, f) for k, c in curves.items()}}
                 for f in cfg.seq_thresholds()]
    width = {k: transition_width(steps, c, log_K, cfg.eval.width_hi, cfg.eval.width_lo) for k, c in curves.items()}
    n_all = sum(r["scored_all"] for r in rows)
    return {"run": str(run.path), "K": K, "subset": subset, "z": z, "eval_groups": ev.n_groups, "checkpoints": len(rows),
            "scored_all": n_all, "share_scored": (n_all * ev.n_groups + (len(rows) - n_all) * subset) / (len(rows) * ev.n_groups),
            "crossings": crossings, "width_full": width["full"], "width_guarded": width["guarded"],
            "all_equal": all(c["tau_full"] == c["tau_guarded"] for c in crossings) and width["full"] == width["guarded"],
            "rows": rows}
