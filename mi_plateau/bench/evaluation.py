"""The evaluation's share of training at each K (``mi-plateau bench --only eval``).

At a checkpoint the trainer scores both families on the evaluation set (``metrics.evaluate``).
The paper family costs K (K - 1) suffix strings per group, so its share of training grows as K^2
when every group is scored; live (``eval.live_groups``) a checkpoint scores L_seq on a seeded
subset of groups and the first-token losses on every group, and ``settle`` scores the
full set afterwards only at the checkpoints a crossing needs. This section times, on the paper
model at each K, alternated with the training step (ABBA, medians): the step; the evaluation
with every group scored ("full": what one settling scoring costs); the live evaluation
("live"); the first-token family alone (every position of every group, "first_token"); and the
first-token losses alone ("losses_A1": the packs up to the position that predicts A1, what a
live checkpoint computes on every group). Each is reported as a share of the training between
two checkpoints (``every`` steps): seconds of evaluation / (every x seconds per step). The step,
the live evaluation and the first-token family run in the preset's precision (auto: bf16 where
the device has bf16 units), as a run evaluates its live checkpoints; the full scoring in fp32,
as ``settle`` scores.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..config import preset, with_overrides
from ..devices import resolve_precision
from ..metrics import evaluate, first_token_losses, live_subset
from ..model import build_model
from ..task import make_eval_set, make_task
from .candidates import make_candidate
from .timing import alternate

KINDS = ("full", "live", "first_token", "losses_A1")


def bench_eval_share(
    Ks=(10, 20, 36), subset: int = 20, every: int = 50, reps: int = 3, device: str = "cpu"
) -> list[dict[str, Any]]:
    """One row per K: seconds per step and per evaluation of each kind, and each kind's share."""
    import torch

    rows = []
    for K in Ks:
        cfg = with_overrides(preset("paper"), {"K": K, "eval.live_groups": subset})
        step = make_candidate(cfg, "toolkit")
        for _ in range(2):
            step()
        model = build_model(cfg).eval()
        if device != "cpu":
            model = model.to(device)
        ev = make_eval_set(make_task(cfg.task), cfg.eval)
        live = live_subset(subset, ev.groups, K, cfg.eval.eval_seed)
        with torch.no_grad():
            evaluate(model, ev, live=live)  # the packings are built once, outside the timing
        # a run's live checkpoints evaluate in its training precision (auto: bf16 where the device
        # has bf16 units), as the step does; settle's full scorings are fp32
        p = resolve_precision(cfg.train.precision, next(model.parameters()).device)
        cands = {
            "step": step,
            "full": lambda: evaluate(model, ev),
            "live": lambda: evaluate(model, ev, live=live, precision=p),
            "first_token": lambda: evaluate(model, ev, sequence=False, precision=p),
            "losses_A1": lambda: first_token_losses(model, ev),
        }
        t = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
        between = every * t["step"]
        rows.append(
            {
                "K": K,
                "precision": p,
                "groups": ev.n_groups,
                "subset": subset,
                "strings_full": ev.n_groups * K * (K - 1),
                "s_per_step": t["step"],
                **{f"{k}_s": t[k] for k in KINDS},
                **{f"{k}_share": t[k] / between for k in KINDS},
            }
        )
    return rows
