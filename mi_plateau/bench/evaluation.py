"""The evaluation's share of training at each K (``mi-plateau bench --only eval``).

At a checkpoint the trainer scores both families on the evaluation set (``metrics.evaluate``).
The paper family costs K (K - 1) suffix strings per group, so its share of training grows as K^2
when every group is scored; with ``eval.seq_subset`` (``metrics.EvalGuard``) a checkpoint scores
L_seq on a first stage of groups, and more stages only where a threshold the run reads is near.
This section times, on the paper model at each K, alternated with the training step (ABBA,
medians): the step; the evaluation with every group scored ("full"); with the subset where the
guard stays quiet ("subset"); the same with the first-token losses on the subset too
("subset_both": ``eval.guard_first_token``); that with L_seq on ``seq_rows`` seeded rows of each
first-stage group ("subset_rows": ``eval.seq_rows``; at K <= seq_rows every row); where it goes to the
last stage ("fired": every group); the first-token family alone (every position of every
group, what an unguarded checkpoint computes besides L_seq); and the first-token losses alone
("losses_A1": the packs up to the position that predicts A1, what a guarded checkpoint computes
on every group). Each is reported as a share of the
training between two checkpoints (``every`` steps), the issue's measure: seconds of evaluation /
(every x seconds per step).
"""

from __future__ import annotations

import statistics
from typing import Any

from ..config import preset, with_overrides
from .fast import make_candidate
from .timing import alternate

KINDS = ("full", "subset", "subset_both", "subset_rows", "fired", "first_token", "losses_A1")


def bench_eval_share(
    Ks=(10, 20, 36), subset: int = 20, every: int = 50, reps: int = 3, device: str = "cpu", seq_rows: int = 10
) -> list[dict[str, Any]]:
    """One row per K: seconds per step and per evaluation of each kind, and each kind's share."""
    import torch

    from ..metrics import EvalGuard, eval_guard, evaluate, first_token_losses
    from ..model import build_model
    from ..task import make_eval_set, make_task

    rows = []
    for K in Ks:
        cfg = with_overrides(
            preset("paper"), {"K": K, "eval.seq_max_strings": 0, "eval.seq_subset": subset, "eval.seq_rows": seq_rows}
        )
        step = make_candidate(cfg, "toolkit")
        for _ in range(2):
            step()
        model = build_model(cfg).eval()
        if device != "cpu":
            model = model.to(device)
        ev = make_eval_set(make_task(cfg.task), cfg.eval)
        g = eval_guard(cfg, ev, cfg.eval.seq_plateau_end + 1)
        quiet = EvalGuard(g.order, g.first, (), cfg.eval.seq_guard)  # no threshold near: the first stage only
        quiet_both = EvalGuard(g.order, g.first, (), cfg.eval.seq_guard, first_token=True)
        quiet_rows = EvalGuard(g.order, g.first, (), cfg.eval.seq_guard, first_token=True, row_mask=g.row_mask)
        fired = EvalGuard(g.order, g.first, g.thresholds, cfg.eval.seq_guard, force=True)  # every group
        with torch.no_grad():
            evaluate(model, ev, guard=quiet)  # the packing is built once, outside the timing
        cands = {
            "step": step,
            "full": lambda: evaluate(model, ev),
            "subset": lambda: evaluate(model, ev, guard=quiet),
            "subset_both": lambda: evaluate(model, ev, guard=quiet_both),
            "subset_rows": lambda: evaluate(model, ev, guard=quiet_rows),
            "fired": lambda: evaluate(model, ev, guard=fired),
            "first_token": lambda: evaluate(model, ev, sequence=False),
            "losses_A1": lambda: first_token_losses(model, ev),
        }
        t = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
        between = every * t["step"]
        rows.append(
            {
                "K": K,
                "groups": ev.n_groups,
                "subset": subset,
                "rows": min(seq_rows, K),
                "strings_full": ev.n_groups * K * (K - 1),
                "s_per_step": t["step"],
                **{f"{k}_s": t[k] for k in KINDS},
                **{f"{k}_share": t[k] / between for k in KINDS},
            }
        )
    return rows
