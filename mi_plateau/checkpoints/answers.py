"""The reader's side of the settlement: a question's answer (tau at alpha, or the transition
width) on settled records, and a run's summary with its questions settled (``settle``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..summaries import num, summarize, tau, transition_width
from .settle import KEY, Crossing, Width, band, default_questions, every_group_live, settle


def answer(q: Crossing | Width, records: Sequence[dict[str, Any]], log_K: float) -> dict[str, Any]:
    """A question's answer on (settled) records: tau at alpha, or (t_start, t_end, tau_width)."""
    steps = [int(r["step"]) for r in records]
    vals = [num(r["metrics"].get(KEY)) for r in records]
    if isinstance(q, Crossing):
        return {"question": f"tau at {q.alpha:g} log K", "alpha": q.alpha, "tau": tau(steps, vals, log_K, q.alpha)}
    t_start, t_end, width = transition_width(steps, vals, log_K, q.hi, q.lo)
    return {
        "question": f"width {q.hi:g} -> {q.lo:g} log K",
        "hi": q.hi,
        "lo": q.lo,
        "t_start": t_start,
        "t_end": t_end,
        "tau_width": width,
    }


def settled_summary(run, questions=None, *, allow_scoring: bool = True, score=None) -> dict[str, Any]:
    """``summaries.summarize`` on the run's records with ``questions`` (default
    ``default_questions``) settled, each question's answer (``paper_crossings``, L_seq), and what
    the settlement did (``settlement``: full scorings now and cached, the steps it could not
    settle). ``allow_scoring=False``: from the cache only (no torch); what that leaves unsettled
    is named, and those crossings read the live estimate."""
    cfg = run.config()
    questions = tuple(questions) if questions is not None else default_questions(cfg)
    st = settle(run, questions, allow_scoring=allow_scoring, score=score)
    s = summarize(cfg, st.records)
    # Table 7's plateau height is a mean over a window, not a crossing: say how many of its
    # values are live estimates (0: every one exact)
    window = [
        r
        for r in st.records
        if cfg.eval.seq_plateau_start <= r["step"] <= cfg.eval.seq_plateau_end
        and band(r["metrics"], every_group_live(cfg))[1] != 0.0
    ]
    s["definitions"]["paper"]["plateau_estimates"] = len(window)
    s["paper_crossings"] = [answer(q, st.records, cfg.task.log_K) for q in dict.fromkeys(questions)]
    s["settlement"] = st.note()
    return s
