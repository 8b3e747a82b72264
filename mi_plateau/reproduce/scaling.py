"""The recipes that read tau against one swept setting: ``k_sweep`` (Table 3, the fit tau ~
D^delta, Table 5, Figure 4), ``fixed_d`` and ``fixed_d_noclip`` (Figure 5), ``len_z`` (Table 7)
and ``batch_size`` / ``batch_size_noclip`` (Table 1).

Each builder is data in, tables out: ``records.collect``'s rows become a ``writer.Built`` (tables
and figure specs, the paper's columns from ``mi_plateau.paper`` beside ours); nothing is written
here.
"""

from __future__ import annotations

from typing import Any

from .. import figures, paper
from ..fits import power_law
from ..summaries import tau as tau_at
from ..sweeps import Sweep
from .records import FAMILY_KEYS, Collected
from .writer import Built, Plot, Table

ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7)  # Table 5's thresholds, fractions of log K


def fit_row(name: str, fit: dict[str, Any], **extra) -> dict[str, Any]:
    """One row of a fit table from ``fits.power_law``'s result: slope, both 95% intervals
    (bootstrap ``ci``, OLS ``ci_t``), R^2 and the number of runs fitted."""
    return {
        "fit": name,
        "slope": fit["slope"],
        "ci_lo": fit["ci"][0],
        "ci_hi": fit["ci"][1],
        "ci_t_lo": fit["ci_t"][0],
        "ci_t_hi": fit["ci_t"][1],
        "r2": fit["r2"],
        "n": fit["n"],
        **extra,
    }


def series(rows: list[dict[str, Any]], x: str, label=None) -> dict[str, dict[str, list]]:
    """Both families' (x, tau) points from rows, for ``figures.tau_power_law``; ``label(row)``
    names each point (default ``x=value``)."""
    label = label or (lambda r: f"{x}={r[x]}")
    return {
        fam: {"x": [r[x] for r in rows], "tau": [r[f"tau_{fam}"] for r in rows], "label": [label(r) for r in rows]}
        for fam in FAMILY_KEYS
    }


def table3(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The collected rows with the paper's tau at their K (n_b = 1000 only), our paper-family tau
    over it, and ``tau_first_token_after``: for a finished run without a first-token tau, the
    step it stopped at (its first-token tau is later)."""
    out = []
    for r in rows:
        ref = paper.TABLE3.get(r["K"]) if r["n_b"] == 1000 else None
        out.append(
            {
                **r,
                "tau_first_token_after": r["steps"]
                if r["tau_first_token"] is None and r["status"] == "finished"
                else None,
                "paper_tau": ref,
                "tau_paper_over_paper": r["tau_paper"] / ref if r["tau_paper"] and ref else None,
            }
        )
    return out


def table3_fits(rows: list[dict[str, Any]], fits: dict[str, dict], n_boot: int, seed: int) -> list[dict[str, Any]]:
    """The fit tau ~ D^delta per family, the paper's Table 3 taus fitted the same way (all of
    them, and those at the K our paper-family fit covers: the paper's local slope differs across
    D), and the paper's printed fit."""
    ref = paper.TABLE3
    out = [fit_row(f"tau ~ D^delta, {fam} definition", fits[fam]) for fam in FAMILY_KEYS]
    out.append(
        fit_row(
            "the paper's Table 3 taus, fitted here",
            power_law([1000 * k for k in ref], list(ref.values()), n_boot=n_boot, seed=seed),
        )
    )
    ours = [r["K"] for r in rows if r["tau_paper"] and r["K"] in ref and r["n_b"] == 1000]
    if 1 < len(ours) < len(ref):
        same = power_law([1000 * k for k in ours], [ref[k] for k in ours], n_boot=n_boot, seed=seed)
        out.append(fit_row(f"the paper's taus at our fitted K ({', '.join(map(str, ours))})", same))
    f = paper.FIT
    printed = {"fit": "the paper (as printed)", "slope": f["slope"], "ci_lo": f["ci"][0], "ci_hi": f["ci"][1]}
    return out + [printed | {"r2": f["r2"], "n": len(ref)}]


def table5(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> list[dict[str, Any]]:
    """Table 5: the exponent delta of tau ~ D^delta with tau recomputed from each run's curves at
    the threshold alpha log K, per alpha and family (runs without kept curves are left out)."""
    logk = {p.name: p.cfg.task.log_K for p in sweep.points}
    started = [(r, collected.curves[r["run"]]) for r in collected.rows if r["run"] in collected.curves]
    out = []
    for alpha in ALPHAS:
        for fam, key in FAMILY_KEYS.items():
            taus = [tau_at(curve["step"], curve[key], logk[r["run"]], alpha) for r, curve in started]
            f = power_law([r["D"] for r, _ in started], taus, n_boot=n_boot, seed=seed)
            ref = paper.TABLE5[alpha]
            out.append(
                {
                    "alpha": alpha,
                    "definition": fam,
                    "delta": f["slope"],
                    "ci_lo": f["ci"][0],
                    "ci_hi": f["ci"][1],
                    "r2": f["r2"],
                    "n": f["n"],
                    "paper_delta": ref[0] if fam == "paper" else None,
                    "paper_ci": f"[{ref[1][0]}, {ref[1][1]}]" if fam == "paper" else None,
                }
            )
    return out


def build_k_sweep(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 3 (tau per K, both families, the paper's beside), the fit tau ~ D^delta with its
    bootstrap interval over runs, Table 5 (delta at each alpha) and Figure 4."""
    rows = table3(collected.rows)
    fits = {
        fam: power_law([r["D"] for r in rows], [r[f"tau_{fam}"] for r in rows], n_boot=n_boot, seed=seed)
        for fam in FAMILY_KEYS
    }
    fig4 = figures.tau_power_law(
        series(rows, "D", lambda r: f"K={r['K']}"),
        fits,
        reference={"x": [1000 * k for k in paper.TABLE3], "tau": list(paper.TABLE3.values())},
        title="Figure 4: tau against D = 1000 K (log-log), both definitions",
    )
    return Built(
        {
            "Table 3": Table(
                "table3",
                rows,
                "Table 3: tau per K at n_b = 1000 (D = 1000 K)",
                "tau in steps: the first evaluated step with loss < 0.5 log K (paper: L_seq; first_token: Lc). "
                "tau_first_token_after: a finished run stopped (at 1.2 x the paper family's tau) before Lc fell "
                "below 0.5 log K; its first-token tau is later than this step. wall_s: the run's training wall "
                "time (one thread, two runs at a time). paper_tau: the paper's Table 3.",
                hide=("seed", "lr", "batch_size", "len_z"),
            ),
            "fit": Table(
                "table3_fit",
                table3_fits(rows, fits, n_boot, seed),
                "Power-law fit tau ~ D^delta",
                f"ci: 95% percentile bootstrap over runs ({n_boot} resamples, seed {seed}); ci_t: the OLS "
                "t interval on log-log axes; runs without a tau are left out (n says how many were fitted).",
            ),
            "Table 5": Table(
                "table5",
                table5(collected, sweep, n_boot, seed),
                "Table 5: the exponent delta at threshold alpha log K",
                "Each run's tau recomputed from its checkpoint records at each alpha; no new training "
                "(runs recorded before their curves were kept are left out: n says how many).",
            ),
        },
        {"Figure 4": Plot("figure4", fig4)},
    )


def nominal_d(Ds: list[int]) -> list[int]:
    """The D each fixed-D point belongs to: the smallest of the Ds within 1% above it (n_b = D / K
    is a whole number of groups, so at K = 36 D = 10,008 belongs to 10,000)."""
    level: dict[int, int] = {}
    for D in sorted(set(Ds)):
        low = min((d for d in level.values() if D <= d * 1.01), default=D)
        level[D] = low
    return [level[D] for D in Ds]


def build_fixed_d(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Figure 5: tau against K at fixed D, one shared slope with one level per D."""
    rows = collected.rows
    fits = {
        fam: power_law(
            [r["K"] for r in rows],
            [r[f"tau_{fam}"] for r in rows],
            groups=nominal_d([r["D"] for r in rows]),
            n_boot=n_boot,
            seed=seed,
        )
        for fam in FAMILY_KEYS
    }
    fit_rows = [fit_row(f"tau ~ K^delta at fixed D, {fam} definition", fits[fam]) for fam in FAMILY_KEYS]
    fit_rows.append({"fit": "the paper (as printed)", "slope": paper.FIXED_D_SLOPE})
    fig = figures.tau_power_law(
        series(rows, "K", lambda r: f"D={r['D']}, n_b={r['n_b']}"),
        fits,
        x_label="K (at fixed D)",
        x_symbol="K",
        title=f"Figure 5: tau against K at fixed D ({sweep.name})",
    )
    stem = sweep.name.removeprefix("paper_")
    note = (
        f"One slope, one intercept per D (Ds within 1% one D); ci: 95% percentile bootstrap over runs within each D "
        f"({n_boot} resamples, seed {seed}); R^2 of the within-D variation."
    )
    return Built(
        {
            "Figure 5": Table(
                stem,
                rows,
                f"Figure 5 data ({sweep.name}): tau at fixed D",
                "n_b = D / K. tau in steps; None: not reached by `steps`.",
            ),
            "fit": Table(f"{stem}_fit", fit_rows, "Slope of tau against K at fixed D", note),
        },
        {"Figure 5": Plot(stem, fig)},
    )


def table7(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 7's rows: per selector length and data seed, both families' plateau height, its
    ratio to log K and tau, beside the paper's plateau, ratio and tau."""
    out = []
    for r in rows:
        ref = paper.TABLE7.get(r["len_z"], (None, None, None))
        out.append(
            {
                "len_z": r["len_z"],
                "seed": r.get("seed", 0),  # the grid's runs name no seed: 0
                "plateau_paper": r["plateau_paper"],
                "plateau_ratio_paper": r["plateau_ratio_paper"],
                "tau_paper": r["tau_paper"],
                # the crossing's interval where it is the live estimate's (None: exact, or not recorded)
                **{k: r.get(k) for k in ("tau_paper_lo", "tau_paper_hi", "tau_paper_exact")},
                "plateau_first_token": r["plateau_first_token"],
                "plateau_ratio_first_token": r["plateau_ratio_first_token"],
                "tau_first_token": r["tau_first_token"],
                "paper_plateau": ref[0],
                "paper_ratio": ref[1],
                "paper_tau": ref[2],
                "steps": r["steps"],
                "status": r["status"],
            }
        )
    return out


def build_len_z(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 7: plateau height (the paper's: mean L_seq over steps 100-500; ours: the median Lc
    plateau), ratio to log K, tau, per selector length."""
    rows = table7(collected.rows)
    fig = figures.tau_power_law(
        series(rows, "len_z"),
        {},
        x_label="selector length len_z (K = 10)",
        log_x=False,
        reference={"x": list(paper.TABLE7), "tau": [v[2] for v in paper.TABLE7.values()]},
        title="Table 7: tau against the selector length",
    )
    note = "plateau_paper: mean L_seq over steps 100-500 (nats); plateau_first_token: median Lc on the plateau."
    return Built(
        {"Table 7": Table("table7", rows, "Table 7: selector length at K = 10", note)},
        {"tau against len_z": Plot("table7", fig)},
    )


def compares(r: dict[str, Any]) -> bool:
    """The row the paper's Table 1 row of its B most likely is (SPEC 7): B = 32 at K = 20 with a
    constant learning rate, B >= 64 at K = 10 with a cosine schedule."""
    cosine = r.get("schedule") == "cosine"
    return (r["batch_size"] == 32 and r["K"] == 20 and not cosine) or (
        r["batch_size"] >= 64 and r["K"] == 10 and cosine
    )


def table1(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 1's rows, per family and batch size (``rows`` sorted by it): tau in steps and in
    examples seen (steps x B, in thousands), both over those of the largest B with a tau at the
    same K and schedule, the paper's tau in steps, and whether the row compares with the paper's
    (``compares``)."""
    out = []
    kind = lambda r: (r["K"], r.get("schedule") or "constant")  # noqa: E731
    for fam in FAMILY_KEYS:
        for r in rows:
            base = next((b for b in reversed(rows) if b[f"tau_{fam}"] and kind(b) == kind(r)), None)
            t = r[f"tau_{fam}"]
            ex = t * r["batch_size"] if t else None
            out.append(
                {
                    "definition": fam,
                    "B": r["batch_size"],
                    "K": r["K"],
                    "schedule": kind(r)[1],
                    "compares": compares(r),
                    "tau_steps": t,
                    "tau_examples_k": ex / 1000 if ex else None,
                    "step_ratio": t / base[f"tau_{fam}"] if t and base else None,
                    "example_ratio": ex / (base[f"tau_{fam}"] * base["batch_size"]) if ex and base else None,
                    "paper_tau_steps": paper.TABLE1.get(r["batch_size"]) if fam == "paper" else None,
                    # a finished run without this tau used its whole budget (or stopped at the
                    # other family's rule): its tau is later than this step
                    "not_reached_by": r["steps"] if t is None and r["status"] == "finished" else None,
                    "steps": r["steps"],
                    "status": r["status"],
                }
            )
    return out


def table1_figure(rows: list[dict[str, Any]], unit: str, clip: str):
    """tau against B in steps (``unit`` "steps") or in examples seen (tau x B, "examples"), both
    families fitted, the paper's Table 1 beside; finished runs without a paper-family tau drawn
    as lower bounds at the step they stopped."""
    scale = (lambda r: 1) if unit == "steps" else (lambda r: r["batch_size"])
    pts = {
        fam: {
            "x": [r["batch_size"] for r in rows],
            "tau": [r[f"tau_{fam}"] * scale(r) if r[f"tau_{fam}"] else None for r in rows],
            # lower bounds for the stopping family only: the runs stop by design before Lc's tau
            "reached": [r["steps"] * scale(r) if r["steps"] and fam == "paper" else None for r in rows],
            "label": [f"B={r['batch_size']} ({r['status']})" for r in rows],
        }
        for fam in FAMILY_KEYS
    }
    ref = paper.TABLE1
    return figures.tau_power_law(
        pts,
        {fam: power_law(p["x"], p["tau"], n_boot=0) for fam, p in pts.items()},
        x_label="batch size B (K = 20, lr 1e-3)",
        x_symbol="B",
        y_label="tau (steps)" if unit == "steps" else "tau x B (examples seen)",
        reference={"x": list(ref), "tau": [t * (1 if unit == "steps" else b) for b, t in ref.items()]},
        title=f"Table 1: tau in {unit} against B ({clip})",
    )


def build_batch_size(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 1: tau in steps and in examples seen (steps x B), and both ratios to the largest B;
    the figure draws the recipe's constant-lr runs (the K = 10 cosine rows are in the table)."""
    rows = sorted(collected.rows, key=lambda r: r["batch_size"])
    drawn = [r for r in rows if r.get("schedule") != "cosine"]
    # the original's recipe (clipping 1.0) writes table1; the unclipped variant table1_noclip
    stem = "table1" if sweep.name.endswith("_clip") else "table1_noclip"
    clip = "clipping 1.0" if stem == "table1" else "no clipping"
    note = (
        "tau_examples_k: tau x B in thousands (the paper's tau_tok); ratios to the largest B with a tau at the same "
        "K and schedule; compares: the row the paper's most likely is (B = 32 at K = 20, B >= 64 at K = 10 cosine); "
        "not_reached_by: a finished run without that tau, the step it stopped at."
    )
    return Built(
        {"Table 1": Table(stem, table1(rows), f"Table 1: batch size, lr 1e-3, {clip}", note)},
        {
            f"tau in {unit} against B": Plot(f"{stem}_{unit}", table1_figure(drawn, unit, clip))
            for unit in ("steps", "examples")
        },
    )
