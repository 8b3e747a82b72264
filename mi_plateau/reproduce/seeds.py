"""The recipes that read tau across seeds by the crossing clock: ``seeds_warmup`` (Table 4's
conditions with a 500-step warm-up, the init fixed) and ``seeds_init`` (the init varied too), each
also a first cut of Table 8 (the phase boundary). The paper's own recipe and clock (no warm-up, the
transition width) are ``phase_boundary`` (``boundary``).

Data in, tables out, as in ``scaling``: each builder returns a ``writer.Built``, the paper's
columns from ``mi_plateau.paper``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from typing import Any

from .. import figures, paper
from ..fits import smaller_spread_p
from ..sweeps import Sweep
from .records import FAMILY_KEYS, Collected
from .writer import Built, Plot, Table


def per_condition(rows: list[dict[str, Any]]) -> Iterator[tuple[tuple, str, list[dict[str, Any]], dict[str, Any]]]:
    """The rows by condition (D, K, lr), in the order the conditions first appear, once per
    definition family: (the condition, the family, the condition's rows, the leading columns of
    its table row: D, K, lr, definition and the number of runs). Table 4 by tau (``seed_stats``)
    and by width (``boundary.width_stats``) has one row for each."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["D"], r["K"], r["lr"]), []).append(r)
    for (D, K, lr), rs in by.items():
        for fam in FAMILY_KEYS:
            yield (D, K, lr), fam, rs, {"D": D, "K": K, "lr": lr, "definition": fam, "runs": len(rs)}


def seed_stats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (D, K, lr) and family: the runs, the taus of the seeds that escaped, their mean, sample
    standard deviation and CV = std / mean (None where fewer than two escaped), the paper's mean
    and std, and ``p_smaller_spread``: the one-sided F test of our spread against the paper's
    three seeds (``fits.smaller_spread_p``)."""
    out = []
    for cond, fam, rs, lead in per_condition(rows):
        taus = [r[f"tau_{fam}"] for r in rs if r[f"tau_{fam}"]]
        mean = statistics.mean(taus) if taus else None
        std = statistics.stdev(taus) if len(taus) > 1 else None
        ref = paper.TABLE4.get(cond, (None, None))
        paper_std = ref[1] if fam == "paper" else None
        out.append(
            {
                **lead,
                "with_tau": len(taus),
                "taus": taus,
                "mean_tau": mean,
                "std_tau": std,
                "cv": std / mean if std is not None and mean else None,
                "paper_mean": ref[0] if fam == "paper" else None,
                "paper_std": paper_std,
                "p_smaller_spread": smaller_spread_p(std, len(taus), paper_std),
            }
        )
    return out


def compare_seed_stats(varied: list[dict[str, Any]], fixed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``seed_stats`` of two sets of tau rows side by side, one row per condition and family of
    the first set (``varied_init_*``, ``fixed_init_*``: runs, taus, mean, std, CV; the paper's)."""
    keys = ("runs", "taus", "mean_tau", "std_tau", "cv", "p_smaller_spread")
    by = {(r["D"], r["K"], r["lr"], r["definition"]): r for r in seed_stats(fixed)}
    comp = []
    for v in seed_stats(varied):
        f = by.get((v["D"], v["K"], v["lr"], v["definition"]), {})
        comp.append(
            {
                "D": v["D"],
                "K": v["K"],
                "lr": v["lr"],
                "definition": v["definition"],
                **{f"fixed_init_{k}": f.get(k) for k in keys},
                **{f"varied_init_{k}": v[k] for k in keys},
                "paper_mean": v["paper_mean"],
                "paper_std": v["paper_std"],
            }
        )
    return comp


def phase_boundary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 8 from tau rows: per (K, D), each lr's seeds are escaped (a paper-family tau), failed
    (finished the budget without one) or undecided (neither yet); the largest lr with every seed
    escaped, the smallest with any failed, and their geometric mean eta*."""
    by: dict[tuple, dict[float, list[str]]] = {}
    for r in rows:
        outcome = "escaped" if r["tau_paper"] else "failed" if r["status"] == "finished" else "undecided"
        by.setdefault((r["K"], r["D"]), {}).setdefault(r["lr"], []).append(outcome)
    out = []
    for (K, D), lrs in sorted(by.items()):
        ok = [lr for lr, o in lrs.items() if o and all(x == "escaped" for x in o)]
        bad = [lr for lr, o in lrs.items() if "failed" in o]
        hi, lo = (max(ok) if ok else None), (min(bad) if bad else None)
        ref = paper.TABLE8.get(K, (None, None, None)) if D == 1000 * K else (None, None, None)
        out.append(
            {
                "K": K,
                "D": D,
                "lrs": sorted(lrs),
                "escaped": [lrs[lr].count("escaped") for lr in sorted(lrs)],
                "failed": [lrs[lr].count("failed") for lr in sorted(lrs)],
                "undecided": [lrs[lr].count("undecided") for lr in sorted(lrs)],
                "max_all_succeed": hi,
                "min_any_fail": lo,
                "eta_star": math.sqrt(hi * lo) if hi and lo else None,
                "paper_max_all_succeed": ref[0],
                "paper_min_any_fail": ref[1],
                "paper_eta_star": ref[2],
            }
        )
    return out


def lr_figure(rows: list[dict[str, Any]], y, reached, label, title: str, y_label: str = "tau (steps)"):
    """One value per seed against lr, one series per K (``y``, ``reached`` and ``label`` read a
    row; ``reached``: the step a run without a value is drawn open at), Table 4's paper means as
    crosses, each K drawn a little left or right of its lr. Shared by Table 4's two clocks."""
    pts = {
        f"K={K}": {
            "x": [r["lr"] for r in rs],
            "tau": [y(r) for r in rs],
            "reached": [reached(r) for r in rs],
            "label": [label(r) for r in rs],
        }
        for K in sorted({r["K"] for r in rows})
        for rs in [[r for r in rows if r["K"] == K]]
    }
    ref = [(lr, m) for (_, _, lr), (m, _) in paper.TABLE4.items()]
    return figures.tau_power_law(
        pts,
        {},
        x_label="learning rate (n_b = 1000)",
        x_symbol="lr",
        y_label=y_label,
        dodge=1.04,
        reference={"x": [a for a, _ in ref], "tau": [b for _, b in ref]},
        title=title,
    )


def seeds_figure(rows: list[dict[str, Any]], name: str):
    """Every seed's paper-family tau against lr (runs without a tau drawn as lower bounds at
    their last step), the paper's Table 4 means as crosses."""
    return lr_figure(
        rows,
        lambda r: r["tau_paper"],
        lambda r: r["steps"],
        lambda r: f"{r['run']} ({r['status']})",
        f"Table 4 ({name}): each seed's tau (L_seq) against lr<br><sup>crosses: the paper's "
        "means per condition (K = 5 below, K = 10 above); each K drawn a little "
        "left or right of its lr</sup>",
    )


def build_seeds(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 4: mean, std and CV of tau over seeds at each (D, K, lr), every seed's tau against
    lr, and Table 8's phase boundary from the same runs."""
    rows = collected.rows
    stem = sweep.name.removeprefix("paper_")
    return Built(
        {
            "Table 4": Table(
                stem,
                seed_stats(rows),
                f"Table 4 ({sweep.name}): tau across seeds",
                "std: sample standard deviation; CV = std / mean; taus: the seeds that escaped "
                "within the budget (with_tau of runs). p_smaller_spread: one-sided F test of our std against "
                "the paper's (three seeds; df with_tau - 1 and 2): small means our seeds vary less.",
            ),
            "Table 8": Table(
                f"{stem}_boundary",
                phase_boundary(rows),
                f"Table 8, first cut ({sweep.name}): the phase boundary",
                "A run escapes when L_seq falls below 0.5 log K within its step budget (max_steps); it fails "
                "when it finishes the budget without. max_all_succeed: the largest lr at which every seed "
                "escaped; min_any_fail: the smallest at which one failed; eta_star: their geometric mean; "
                "undecided: runs not yet finished and not yet escaped, or recorded without their curves.",
            ),
        },
        {"Table 4": Plot(stem, seeds_figure(rows, sweep.name))},
    )


def build_seeds_init(collected: Collected, sweep: Sweep, n_boot: int, seed: int, *, fixed: Collected) -> Built:
    """Table 4 with the init varied (each seed its own init), and beside it the same conditions
    with the init fixed (the ``seeds_warmup`` recipe: the same points but the init): does the
    spread of tau across seeds come from the data and batch order or from the init?"""
    # (the docstring is the sweep page's note) ``fixed``: the seeds_warmup runs (sweeps.READS)
    built = build_seeds(collected, sweep, n_boot, seed)
    comp = Table(
        "seeds_init_vs_fixed",
        compare_seed_stats(collected.rows, fixed.rows),
        "Table 4: the init fixed (seed 42) or varied with the seed",
        "Both with 500 warm-up steps, budget 20,000 (fixed: `seeds_warmup`; varied: `seeds_init`). "
        "taus: the seeds that escaped; std: sample standard deviation; CV = std / mean.",
    )
    return Built({**built.tables, "init fixed vs varied": comp}, built.figures)
