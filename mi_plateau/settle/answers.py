"""The reader's side of the settlement: a question's answer (tau at alpha, or the transition
width) on settled records, and a run's summary with its questions settled (``settlement``):
``run_summary`` is what ``mi-plateau summary`` and ``api.summary`` show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import crossings
from ..summaries import every_group_live, nan_to_none, seq_band, seq_bands, summarize
from .settlement import Crossing, Width, default_questions, settle


def answer(
    q: Crossing | Width, records: Sequence[dict[str, Any]], log_K: float, exact_live: bool = False
) -> dict[str, Any]:
    """A question's answer on (settled) records, each crossing a value with its interval and
    whether it is exact (``crossings``): tau at alpha, or t_start, t_end and tau_width; ``text``
    reads it in one line (``tau 1,050 [1,000, 1,100] (estimate)``). ``exact_live``: the run
    scored every group live (a record without a standard error is then exact)."""
    steps = [int(r["step"]) for r in records]
    vals, ses = seq_bands(records, exact_live)
    if isinstance(q, Crossing):
        c = crossings.first_below(steps, vals, ses, q.alpha * log_K)
        return {"question": f"tau at {q.alpha:g} log K", "alpha": q.alpha, **crossings.columns("tau", c),
                "text": f"tau {c.text()}"}  # fmt: skip
    w = crossings.width(steps, vals, ses, q.hi * log_K, q.lo * log_K)
    out = {"question": f"width {q.hi:g} -> {q.lo:g} log K", "hi": q.hi, "lo": q.lo}
    for name, c in w.items():
        out.update(crossings.columns(name, c))
    out["text"] = f"t_start {w['t_start'].text()}, t_end {w['t_end'].text()}, width {w['tau_width'].text()}"
    return out


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
        and seq_band(r["metrics"], every_group_live(cfg))[1] != 0.0
    ]
    s["definitions"]["paper"]["plateau_estimates"] = len(window)
    s["paper_crossings"] = [
        answer(q, st.records, cfg.task.log_K, every_group_live(cfg)) for q in dict.fromkeys(questions)
    ]
    s["settlement"] = st.note()
    return s


def run_summary(run, questions=None, *, settle: bool = False) -> dict[str, Any]:
    """Plateau height, tau (both definition families) and convergence of ``run`` (a
    ``checkpoints.Run``), from its checkpoint records (``summaries.summarize``) with every
    crossing the ``questions`` ask (default: tau at eval.alpha and Table 5's alphas, the
    transition width) settled on the full evaluation set (``settled_summary``), with the run's
    status and path; NaN becomes None. Without ``settle`` only the cached exact values are used
    (no torch) and ``settlement`` names the steps left unsettled, whose crossings read the live
    estimate."""
    manifest = run.manifest()
    s = settled_summary(run, questions, allow_scoring=settle)
    s["status"] = manifest.get("status")
    s["run"] = str(run.path)
    return nan_to_none(s)
