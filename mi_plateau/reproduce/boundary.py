"""The recipes read by the original's transition clock: ``phase_boundary`` (Tables 4 and 8) and
``lr_sweep`` (the abstract's 3.6x), both from the transition width (``summaries.transition_width``).

Each builder is data in, tables out: the rows ``records.collect`` gives (one per point, with both
families' widths read off the run's curves) become tidy tables and figure specs (a
``writer.Built``); ``writer.write_built`` puts them on disk. A budget smaller than the original's
is carried by every number it affects: a run that did not escape reads "no escape by N steps"
(``no_escape_by``), never "fail".
"""

from __future__ import annotations

import math
from typing import Any

from .. import figures, paper
from ..sweeps import Sweep
from .records import FAMILY_KEYS, Collected
from .seeds import lr_figure, per_condition
from .writer import Built, Plot, Table

FAMILIES = tuple(FAMILY_KEYS)
# The original's success rule for a phase-boundary run: the final L_seq below 0.05 log K, or its
# minimum below 0.01 log K (the early stop). Fractions of log K.
SUCCESS_FINAL, SUCCESS_MIN = 0.05, 0.01


def outcome(row: dict[str, Any]) -> str:
    """ "escaped" by the original's success rule, "no escape" (the run used its whole budget
    without), or "undecided" (still running, not started, or recorded without its curves)."""
    log_K = math.log(row["K"])
    lo, final = row.get("min_L_seq"), row.get("final_L_seq")
    if lo is not None and lo < SUCCESS_MIN * log_K:
        return "escaped"
    if row.get("status") == "finished":
        return "escaped" if final is not None and final < SUCCESS_FINAL * log_K else "no escape"
    return "undecided"


def _stats(xs: list[float]) -> tuple[float | None, float | None, float | None]:
    """Mean, standard deviation with ddof 0 (the original's numpy default) and CV = std / mean."""
    if not xs:
        return None, None, None
    mean = sum(xs) / len(xs)
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
    return mean, std, std / mean if mean else None


def width_stats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 4 by the width: per (D, K, lr) and family, the runs, how many escaped, every escaped
    seed's width, their mean, std (ddof 0) and CV, the crossing tau's mean beside, the budgets of
    the runs that did not escape, the widths of undecided runs that have one (final once t_end is
    reached; not in the mean), and the paper's mean, std and CV (paper family only)."""
    out = []
    for cond, fam, rs, lead in per_condition(rows):
        ref = paper.TABLE4.get(cond)
        ok = [r for r in rs if outcome(r) == "escaped" and r[f"tau_width_{fam}"] is not None]
        widths = [r[f"tau_width_{fam}"] for r in ok]
        mean, std, cv = _stats(widths)
        taus = [r[f"tau_{fam}"] for r in ok if r[f"tau_{fam}"] is not None]
        out.append(
            {
                **lead,
                "escaped": len(ok),
                "widths": widths,
                "t_starts": [r[f"t_start_{fam}"] for r in ok],
                "mean_width": mean,
                "std_width": std,
                "cv_width": cv,
                "mean_tau_crossing": sum(taus) / len(taus) if taus else None,
                "no_escape_by": [r["steps"] for r in rs if outcome(r) == "no escape"],
                "undecided": sum(outcome(r) == "undecided" for r in rs),
                "widths_undecided": [
                    r[f"tau_width_{fam}"]
                    for r in rs
                    if outcome(r) == "undecided" and r.get(f"tau_width_{fam}") is not None
                ],
                "paper_mean": ref[0] if ref and fam == "paper" else None,
                "paper_std": ref[1] if ref and fam == "paper" else None,
                "paper_cv": ref[1] / ref[0] if ref and fam == "paper" else None,
            }
        )
    return out


def boundary(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Table 8 and its cells: per K (D = n_b K), each lr's seeds escaped / no escape / undecided;
    the largest lr at which every seed escaped, the smallest at which one did not within its
    budget, eta* = their geometric mean, and the budgets that the "no escape" rests on."""
    cells: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        c = cells.setdefault(
            (r["K"], r["D"], r["lr"]),
            {"K": r["K"], "D": r["D"], "lr": r["lr"], "escaped": 0, "no_escape": 0, "undecided": 0, "budget": []},
        )
        o = outcome(r)
        c[o.replace(" ", "_")] += 1
        if o == "no escape":
            c["budget"].append(r["steps"])
    for c in cells.values():
        c["outcome"] = (
            "some did not escape"
            if c["no_escape"]
            else "undecided"
            if c["undecided"] or not c["escaped"]
            else "all escaped"
        )
        c["budget"] = min(c["budget"]) if c["budget"] else None
    table = []
    for K, D in sorted({(k, d) for k, d, _ in cells}):
        cs = sorted((c for c in cells.values() if (c["K"], c["D"]) == (K, D)), key=lambda c: c["lr"])
        ok = [c["lr"] for c in cs if c["outcome"] == "all escaped"]
        bad = [c for c in cs if c["no_escape"]]
        hi, lo = (max(ok) if ok else None), (bad[0] if bad else None)
        ref = paper.TABLE8.get(K) if D == 1000 * K else None
        table.append(
            {
                "K": K,
                "D": D,
                "lrs": [c["lr"] for c in cs],
                "escaped": [c["escaped"] for c in cs],
                "no_escape": [c["no_escape"] for c in cs],
                "undecided": [c["undecided"] for c in cs],
                "max_all_succeed": hi,
                "min_any_fail": lo["lr"] if lo else None,
                "no_escape_by": lo["budget"] if lo else None,
                "eta_star": math.sqrt(hi * lo["lr"]) if hi and lo else None,
                "paper_max_all_succeed": ref[0] if ref else None,
                "paper_min_any_fail": ref[1] if ref else None,
                "paper_eta_star": ref[2] if ref else None,
            }
        )
    return table, list(cells.values())


def run_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run: its outcome, both clocks in both families, the curve's ends."""
    keep = (
        "run",
        "K",
        "D",
        "lr",
        "seed",
        "status",
        "steps",
        "tau_paper",
        "t_start_paper",
        "t_end_paper",
        "tau_width_paper",
        "tau_first_token",
        "t_start_first_token",
        "t_end_first_token",
        "tau_width_first_token",
        "final_L_seq",
        "min_L_seq",
        "wall_s",
        "source",
    )
    return [{**{k: r.get(k) for k in keep}, "outcome": outcome(r)} for r in rows]


def widths_figure(runs: list[dict[str, Any]]):
    """Each seed's paper-family transition width against lr, one series per K (runs with no escape
    drawn open at the step they stopped), the paper's mean widths as crosses."""
    return lr_figure(
        runs,
        lambda r: r["tau_width_paper"],
        lambda r: r["steps"] if r["outcome"] == "no escape" else None,
        lambda r: f"{r['run']} ({r['outcome']})",
        "Table 4: each seed's transition width (L_seq) against lr<br><sup>crosses: the paper's mean widths "
        "(K = 5 below, K = 10 above where both have the rate; 3e-3 is K = 10's only); open markers: no escape "
        "by that step</sup>",
        y_label="transition width (steps)",
    )


def width_panels(rows: list[dict[str, Any]], curves: dict[str, dict], panel, label) -> dict[str, dict]:
    """The curves ``figures.width_curves`` draws: per panel, each run with kept curves (``label``
    reads its row) as L_seq / log K against step with its paper-family t_start and t_end; runs
    without curves are left out. ``panel`` reads a row's panel as (name, value) pairs: the panels
    are in the order of their values and titled "name = value, ..."."""
    keyed: dict[tuple, dict] = {}
    for r in rows:
        c = curves.get(r["run"]) or {}
        if not c.get("step"):
            continue
        log_K = math.log(r["K"])
        keyed.setdefault(tuple(panel(r)), {})[label(r)] = {
            "steps": c["step"],
            "y": [None if v is None or v != v else v / log_K for v in c["L_seq"]],
            "t_start": r.get("t_start_paper"),
            "t_end": r.get("t_end_paper"),
        }
    return {
        ", ".join(f"{k} = {v:g}" for k, v in key): keyed[key]
        for key in sorted(keyed, key=lambda key: [v for _, v in key])
    }


def curves_figure(collected: Collected, sweep: Sweep, panel, label, title: str):
    """Every run's L_seq / log K with its width's two ends, the thresholds of the sweep's runs."""
    ev = sweep.points[0].cfg.eval
    panels = width_panels(collected.rows, collected.curves, panel, label)
    return figures.width_curves(
        panels,
        ev.width_lo,
        ev.width_hi,
        f"{title}<br><sup>dashed: {ev.width_hi:g} and "
        f"{ev.width_lo:g} log K; open circle: t_start, filled: t_end (a run still running or without an "
        "escape has neither)</sup>",
    )


def build_phase_boundary(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Tables 4 and 8 as the original ran them: the transition width's mean, std (ddof 0) and CV
    over seeds per condition; eta* per K from the original's success rule; the phase diagram."""
    rows = collected.rows
    t4, (t8, cells), runs = width_stats(rows), boundary(rows), run_rows(rows)
    diagram = figures.phase_diagram(
        cells,
        {K: v[2] for K, v in paper.TABLE8.items()},
        title="Table 8: the phase boundary (seeds escaped / run; the paper's eta* as crosses)",
    )
    return Built(
        {
            "Table 4 (width)": Table(
                "phase_boundary_table4",
                t4,
                "Table 4 by the transition width (phase_boundary)",
                "width = t_end - t_start (L_seq < 0.05 log K; the last evaluation before with L_seq > 0.95 "
                "log K, 0 if none); std with ddof 0, CV = std / mean, over the seeds that escaped. "
                "mean_tau_crossing: the 0.5 log K crossing of the same seeds. no_escape_by: the step budgets "
                "of seeds that did not escape (a budget below the original's 200,000 says nothing past it). "
                "widths_undecided: the widths of seeds not yet escaped by the success rule (still running) that "
                "have one; a width is final once t_end is reached, but these are not in the mean.",
            ),
            "Table 8": Table(
                "phase_boundary_table8",
                t8,
                "Table 8: the phase boundary (phase_boundary)",
                "A run escapes when its final L_seq < 0.05 log K or its minimum < 0.01 log K (the original's "
                "rule). min_any_fail: the smallest lr with a seed that did not escape within no_escape_by "
                "steps; eta_star: the geometric mean of max_all_succeed and min_any_fail.",
            ),
            "runs": Table(
                "phase_boundary_runs",
                runs,
                "Every run of phase_boundary",
                "outcome, both clocks in both families (steps), final and smallest L_seq (nats).",
            ),
        },
        {
            "Table 4: widths": Plot("phase_boundary_widths", widths_figure(runs)),
            "Table 8: phase diagram": Plot("phase_boundary_diagram", diagram),
            "curves": Plot(
                "phase_boundary_curves",
                curves_figure(
                    collected,
                    sweep,
                    lambda r: (("K", r["K"]), ("lr", r["lr"])),
                    lambda r: f"seed {r['seed']}",
                    "The phase-boundary runs: L_seq against step per condition",
                ),
            ),
        },
    )


def lr_width_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per family and lr: the width (t_start, t_end), the crossing tau, the width over the
    smallest lr's, the paper's width; where a run has no width, the step it got to."""
    rows = sorted(rows, key=lambda r: r["lr"])
    out = []
    for fam in FAMILIES:
        base = next((r[f"tau_width_{fam}"] for r in rows if r[f"tau_width_{fam}"]), None)
        for r in rows:
            w = r[f"tau_width_{fam}"]
            out.append(
                {
                    "definition": fam,
                    "K": r["K"],
                    "lr": r["lr"],
                    "t_start": r[f"t_start_{fam}"],
                    "t_end": r[f"t_end_{fam}"],
                    "tau_width": w,
                    "tau_crossing": r[f"tau_{fam}"],
                    "width_over_smallest_lr": w / base if w and base else None,
                    "paper_width": paper.LR_SWEEP.get(r["lr"]) if fam == "paper" else None,
                    "no_width_by": r["steps"] if w is None else None,
                    "status": r["status"],
                    "wall_s": r["wall_s"],
                }
            )
    return out


def lr_ratio_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per family: the width at the largest lr over the width at the smallest (``rows`` from
    ``lr_width_rows``, sorted by lr), beside the paper's 3.6x; while a rate at either end has no
    width, also the ratio over the widest range of rates that have one, beside the paper's over
    the same rates."""
    out = []
    for fam in FAMILIES:
        rs = [r for r in rows if r["definition"] == fam]
        if not rs:
            continue
        have = [r for r in rs if r["tau_width"]]
        ranges = [("all rates", rs[0], rs[-1])]
        if len(have) >= 2 and (have[0] is not rs[0] or have[-1] is not rs[-1]):
            ranges.append(("rates with a width", have[0], have[-1]))
        for what, lo, hi in ranges:
            ref = (paper.LR_SWEEP.get(lo["lr"]), paper.LR_SWEEP.get(hi["lr"]))
            paper_ratio = None
            if fam == "paper":
                paper_ratio = paper.LR_RATIO if what == "all rates" else ref[1] / ref[0] if all(ref) else None
            out.append(
                {
                    "definition": fam,
                    "range": what,
                    "lr_range": f"{lo['lr']:g} to {hi['lr']:g}",
                    "ratio": hi["tau_width"] / lo["tau_width"] if hi["tau_width"] and lo["tau_width"] else None,
                    "paper_ratio": paper_ratio,
                }
            )
    return out


def lr_widths_figure(rows: list[dict[str, Any]]):
    """Both families' transition width against lr (runs without a width drawn open at the step
    they got to), the paper's widths as crosses."""
    pts = {
        fam: {
            "x": [r["lr"] for r in rows if r["definition"] == fam],
            "tau": [r["tau_width"] for r in rows if r["definition"] == fam],
            "reached": [r["no_width_by"] for r in rows if r["definition"] == fam],
            "label": [f"lr={r['lr']:g} ({r['status']})" for r in rows if r["definition"] == fam],
        }
        for fam in FAMILIES
    }
    return figures.tau_power_law(
        pts,
        {},
        x_label="learning rate (K = 20, batch 128)",
        x_symbol="lr",
        y_label="transition width (steps)",
        reference={"x": list(paper.LR_SWEEP), "tau": list(paper.LR_SWEEP.values())},
        title="The learning-rate sweep: transition width against lr (crosses: the paper's)",
    )


def build_lr_width(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """The learning-rate sweep by the transition width: each rate's width beside the paper's
    (2,100 / 2,200 / 3,400 / 7,550 at 3e-4 / 5e-4 / 1e-3 / 2e-3) and the ratio across the range
    (largest rate's width over the smallest's; the paper: 3.6x)."""
    rows = lr_width_rows(collected.rows)
    return Built(
        {
            "widths": Table(
                "lr_sweep",
                rows,
                "The learning-rate sweep by the transition width (K = 20)",
                "width = t_end - t_start in steps (t_end: first loss < 0.05 log K; t_start: the last evaluation "
                "before it with loss > 0.95 log K, 0 if none); tau_crossing: the 0.5 log K crossing; no_width_by: "
                "the step a run without a width got to (its budget, or where it stands).",
            ),
            "ratio": Table(
                "lr_sweep_ratio",
                lr_ratio_rows(rows),
                "The width's ratio across the lr range",
                "The width at the largest lr over the width at the smallest (the paper: 7,550 / 2,100 = 3.6x); "
                "where a rate at either end has no width yet, also over the widest range of rates that have one, "
                "beside the paper's widths at the same two rates.",
            ),
        },
        {
            "widths against lr": Plot("lr_sweep_widths", lr_widths_figure(rows)),
            "curves": Plot(
                "lr_sweep_curves",
                curves_figure(
                    collected,
                    sweep,
                    lambda r: (("K", r["K"]),),
                    lambda r: f"lr {r['lr']:g}",
                    "The learning-rate sweep: L_seq against step per rate",
                ),
            ),
        },
    )
