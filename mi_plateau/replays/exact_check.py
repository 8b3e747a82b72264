"""Settled against all-exact (``mi-plateau summary RUN --exact-check``): every checkpoint up to
the lowest crossing scored on the full evaluation set, and each default question's answer and
both families' clocks compared with the run's settlement (``settle``)."""

from __future__ import annotations

import sys
from typing import Any

from ..checkpoints.settled import EXACT_KEYS, KEY
from ..settle import Crossing, answer, default_questions, settle
from ..summaries import nan_to_none, num, summarize


def exact_check(run, progress: bool = False) -> dict[str, Any]:
    """Settled against all-exact: score every checkpoint on the full evaluation set, in step
    order, up to the first whose L_seq is below the lowest threshold the default questions ask
    (no later checkpoint moves a first crossing or a width), and compare every default
    question's answer and both families' summary clocks from the all-exact records with the
    settled ones. The check's own scorings are not cached (it is the independent reference)."""
    cfg = run.config()
    log_K = cfg.task.log_K
    questions = default_questions(cfg)
    st = settle(run, questions)
    records = run.records()
    lowest = min(min(q.alpha for q in questions if isinstance(q, Crossing)), cfg.eval.width_lo) * log_K
    ev, exact_recs = run.eval_set(), []
    for r in records:
        if progress:
            print(f"  exact check: scoring step {r['step']}", file=sys.stderr)
        m = score_exact(run, int(r["step"]), ev)
        exact_recs.append({**r, "metrics": {**r["metrics"], **{k: m[k] for k in EXACT_KEYS}, f"{KEY}_se": 0.0}})
        if num(m[KEY]) < lowest:
            break
    n_scored = len(exact_recs)
    exact_recs += records[n_scored:]  # after the lowest crossing: as recorded (no question reads them)
    full, settled = summarize(cfg, exact_recs), summarize(cfg, st.records)
    crossings, widths, equal = [], {}, True
    for q in questions:
        a, b = answer(q, exact_recs, log_K), answer(q, st.records, log_K)
        if isinstance(q, Crossing):
            crossings.append(
                {"definition": "paper", "fraction": q.alpha, "tau_exact": a["tau"], "tau_settled": b["tau"]}
            )
            equal &= a["tau"] == b["tau"]
        else:
            pick = ("t_start", "t_end", "tau_width")
            widths["paper"] = {"exact": [a[k] for k in pick], "settled": [b[k] for k in pick]}
            equal &= widths["paper"]["exact"] == widths["paper"]["settled"]
    for fam in ("paper", "first_token"):
        for k in ("tau", "t_start", "t_end", "tau_width"):
            equal &= full["definitions"][fam][k] == settled["definitions"][fam][k]
    return nan_to_none(
        {
            "run": str(run.path),
            "checkpoints": len(records),
            "checkpoints_scored": n_scored,
            "last_step_scored": int(exact_recs[n_scored - 1]["step"]) if n_scored else None,
            "settlement": st.note(),
            "settled_full_sets": len(st.full),
            "unsettled_steps": st.unsettled,
            "crossings": crossings,
            "widths": widths,
            "definitions": {"exact": full["definitions"], "settled": settled["definitions"]},
            "all_equal": bool(equal),
        }
    )


def score_exact(run, step: int, ev=None) -> dict[str, Any]:
    """Both families' checkpoint metrics at ``step`` on the full evaluation set (every group and
    row): what a run that scored everything live records."""
    from ..metrics import evaluate  # here, not at the top: metrics imports torch (the API imports this module)

    return evaluate(run.load_model(step), ev if ev is not None else run.eval_set())
