"""The paper's sweep tables as named recipes: ``mi-plateau reproduce k_sweep`` (Table 3, Figure 4,
Table 5), ``fixed_d`` and ``fixed_d_noclip`` (Figure 5), ``len_z`` (Table 7), ``batch_size``
(Table 1), ``seeds``, ``seeds_init`` and ``seeds_warmup`` (Table 4 as the paper ran it, with the
init varied too, with a warm-up; each also a first cut of Table 8, the phase boundary) and
``lr_sweep`` (Figure 2b).

Each recipe is a sweep file shipped in ``mi_plateau/sweeps/recipes/`` (run by the sweep runner,
so every point is an ordinary run folder under ``checkpoints/<sweep>/``, resumable) and a builder
that turns the sweep's runs into tables (Markdown, CSV, JSON), static figures and one
interactive HTML page for the whole sweep. Builders read whatever runs exist: a partial sweep
gives a partial table, with each run's status.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from .. import paper
from ..checkpoints import RunError
from ..fits import power_law, smaller_spread_p
from ..summaries import nan_to_none, num
from ..summaries import tau as tau_at
from ..sweeps import Sweep, load_sweep, parse_sweep, plan, run_sweep, select
from ..tabular import write_figure, write_table
from .boundary import build_lr_width, build_phase_boundary
from .direction import build_direction
from .mechanisms import build_dissipation, build_label_noise
from .records import collect, log_path, read_log, write_log

FAMILY_KEYS = {"paper": "L_seq", "first_token": "Lc"}

# the paper's numbers (mi_plateau.paper), under the names the builders and the dry run use
PAPER_TABLE3, PAPER_FIT, PAPER_TABLE5, PAPER_FIXED_D_SLOPE = paper.TABLE3, paper.FIT, paper.TABLE5, paper.FIXED_D_SLOPE
PAPER_TABLE7, PAPER_TABLE1, PAPER_TABLE4, PAPER_TABLE8 = paper.TABLE7, paper.TABLE1, paper.TABLE4, paper.TABLE8
ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7)


def recipe_file(name: str) -> Path:
    path = Path(str(files("mi_plateau.sweeps").joinpath("recipes", f"{name}.toml")))
    if name not in BUILDERS or not path.is_file():
        raise RunError(f"unknown sweep recipe {name!r}: choose one of {', '.join(BUILDERS)}")
    return path


def recipe_sweep(name: str, max_steps: int | None = None) -> Sweep:
    """The recipe's sweep; ``max_steps`` replaces its step budget (a smaller budget on a slow
    machine: runs that do not escape read as "no escape by max_steps"; raising it later
    continues them)."""
    if max_steps is None:
        return load_sweep(recipe_file(name))
    import tomllib

    data = tomllib.loads(recipe_file(name).read_text())
    data.setdefault("overrides", {})["max_steps"] = max_steps
    for p in data.get("points", []):  # a point's own budget is capped too
        if "max_steps" in p:
            p["max_steps"] = min(p["max_steps"], max_steps)
    return parse_sweep(data)


def _fit_row(name: str, fit: dict[str, Any], **extra) -> dict[str, Any]:
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


def _tau_rows(sweep: Sweep, root: Path, docs: Path) -> list[dict[str, Any]]:
    """One row per point: the swept settings, K, n_b, D, both families' tau (None where not
    reached), plateau heights, steps, status and where the row comes from (``records.collect``:
    a run folder here, or the recipe log's record of a run trained elsewhere)."""
    return collect(sweep, root, docs)[0]


def _clean(rows: list[dict[str, Any]], drop: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def build_k_sweep(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 3 (tau per K, both families, the paper's beside), the fit tau ~ D^delta with its
    bootstrap interval over runs, Table 5 (delta at each alpha) and Figure 4."""
    from .. import figures

    rows, curves, _ = collect(sweep, root, docs)  # one read: Table 5 needs the curves too
    for r in rows:
        # a run that stopped before its first-token tau: that tau is later than the last step
        r["tau_first_token_after"] = r["steps"] if r["tau_first_token"] is None and r["status"] == "finished" else None
        r["paper_tau"] = PAPER_TABLE3.get(r["K"]) if r["n_b"] == 1000 else None
        r["tau_paper_over_paper"] = r["tau_paper"] / r["paper_tau"] if r["tau_paper"] and r["paper_tau"] else None
    fits = {
        fam: power_law([r["D"] for r in rows], [r[f"tau_{fam}"] for r in rows], n_boot=n_boot, seed=seed)
        for fam in FAMILY_KEYS
    }
    ref_fit = power_law([1000 * k for k in PAPER_TABLE3], list(PAPER_TABLE3.values()), n_boot=n_boot, seed=seed)
    fit_rows = [_fit_row(f"tau ~ D^delta, {fam} definition", fits[fam]) for fam in FAMILY_KEYS]
    fit_rows.append(_fit_row("the paper's Table 3 taus, fitted here", ref_fit))
    # the paper's taus at the K of the runs that went into our paper-family fit (a partial sweep
    # covers part of the D range, and the paper's local slope differs across it)
    ours = [r["K"] for r in rows if r["tau_paper"] and r["K"] in PAPER_TABLE3 and r["n_b"] == 1000]
    if 1 < len(ours) < len(PAPER_TABLE3):
        same = power_law([1000 * k for k in ours], [PAPER_TABLE3[k] for k in ours], n_boot=n_boot, seed=seed)
        fit_rows.append(_fit_row(f"the paper's taus at our fitted K ({', '.join(map(str, ours))})", same))
    fit_rows.append(
        {
            "fit": "the paper (as printed)",
            "slope": PAPER_FIT["slope"],
            "ci_lo": PAPER_FIT["ci"][0],
            "ci_hi": PAPER_FIT["ci"][1],
            "r2": PAPER_FIT["r2"],
            "n": 10,
        }
    )
    t5 = []
    logk = {p.name: p.cfg.task.log_K for p in sweep.points}
    started = [(r, curves[r["run"]]) for r in rows if r["run"] in curves]  # runs whose curves exist here or in the log
    for alpha in ALPHAS:
        for fam, key in FAMILY_KEYS.items():
            taus = [tau_at(curve["step"], curve[key], logk[r["run"]], alpha) for r, curve in started]
            f = power_law([r["D"] for r, _ in started], taus, n_boot=n_boot, seed=seed)
            ref = PAPER_TABLE5[alpha]
            t5.append(
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
    points = {
        fam: {
            "x": [r["D"] for r in rows],
            "tau": [r[f"tau_{fam}"] for r in rows],
            "label": [f"K={r['K']}" for r in rows],
        }
        for fam in FAMILY_KEYS
    }
    fig4 = figures.tau_power_law(
        points,
        fits,
        reference={"x": [1000 * k for k in PAPER_TABLE3], "tau": list(PAPER_TABLE3.values())},
        title="Figure 4: tau against D = 1000 K (log-log), both definitions",
    )
    written = write_table(
        docs / "table3",
        _clean(rows, ("seed", "lr", "batch_size", "len_z")),
        title="Table 3: tau per K at n_b = 1000 (D = 1000 K)",
        note="tau in steps: the first evaluated step with loss < 0.5 log K (paper: L_seq; first_token: Lc). "
        "tau_first_token_after: a finished run stopped (at 1.2 x the paper family's tau) before Lc fell "
        "below 0.5 log K; its first-token tau is later than this step. wall_s: the run's training wall "
        "time (one thread, two runs at a time). paper_tau: the paper's Table 3.",
    )
    written += write_table(
        docs / "table3_fit",
        fit_rows,
        title="Power-law fit tau ~ D^delta",
        note=f"ci: 95% percentile bootstrap over runs ({n_boot} resamples, seed {seed}); ci_t: the OLS "
        "t interval on log-log axes; runs without a tau are left out (n says how many were fitted).",
    )
    written += write_table(
        docs / "table5",
        t5,
        title="Table 5: the exponent delta at threshold alpha log K",
        note="Each run's tau recomputed from its checkpoint records at each alpha; no new training "
        "(runs recorded before their curves were kept are left out: n says how many).",
    )
    written.append(write_figure(docs / "figure4.svg", fig4))
    return {
        "tables": {"Table 3": rows, "fit": fit_rows, "Table 5": t5},
        "figures": {"Figure 4": fig4},
        "written": written,
    }


def build_fixed_d(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Figure 5: tau against K at fixed D, one shared slope with one level per D."""
    from .. import figures

    rows = _tau_rows(sweep, root, docs)
    fits = {
        fam: power_law(
            [r["K"] for r in rows],
            [r[f"tau_{fam}"] for r in rows],
            groups=[r["D"] for r in rows],
            n_boot=n_boot,
            seed=seed,
        )
        for fam in FAMILY_KEYS
    }
    fit_rows = [_fit_row(f"tau ~ K^delta at fixed D, {fam} definition", fits[fam]) for fam in FAMILY_KEYS]
    fit_rows.append({"fit": "the paper (as printed)", "slope": PAPER_FIXED_D_SLOPE})
    points = {
        fam: {
            "x": [r["K"] for r in rows],
            "tau": [r[f"tau_{fam}"] for r in rows],
            "label": [f"D={r['D']}, n_b={r['n_b']}" for r in rows],
        }
        for fam in FAMILY_KEYS
    }
    fig = figures.tau_power_law(
        points, fits, x_label="K (at fixed D)", x_symbol="K", title=f"Figure 5: tau against K at fixed D ({sweep.name})"
    )
    stem = sweep.name.removeprefix("paper_")
    written = write_table(
        docs / stem,
        _clean(rows, ()),
        title=f"Figure 5 data ({sweep.name}): tau at fixed D",
        note="n_b = D / K. tau in steps; None: not reached by `steps`.",
    )
    written += write_table(
        docs / f"{stem}_fit",
        fit_rows,
        title="Slope of tau against K at fixed D",
        note=f"One slope, one intercept per D; ci: 95% percentile bootstrap over runs within each D "
        f"({n_boot} resamples, seed {seed}); R^2 of the within-D variation.",
    )
    written.append(write_figure(docs / f"{stem}.svg", fig))
    return {"tables": {"Figure 5": rows, "fit": fit_rows}, "figures": {"Figure 5": fig}, "written": written}


def build_len_z(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 7: plateau height (the paper's: mean L_seq over steps 100-500; ours: the median Lc
    plateau), ratio to log K, tau, per selector length."""
    from .. import figures

    rows = []
    for r in _tau_rows(sweep, root, docs):
        ref = PAPER_TABLE7.get(r["len_z"], (None, None, None))
        rows.append(
            {
                "len_z": r["len_z"],
                "plateau_paper": r["plateau_paper"],
                "plateau_ratio_paper": r["plateau_ratio_paper"],
                "tau_paper": r["tau_paper"],
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
    written = write_table(
        docs / "table7",
        rows,
        title="Table 7: selector length at K = 10",
        note="plateau_paper: mean L_seq over steps 100-500 (nats); plateau_first_token: median Lc on the plateau.",
    )
    fig = figures.tau_power_law(
        _series(rows, "len_z"),
        {},
        x_label="selector length len_z (K = 10)",
        log_x=False,
        reference={"x": list(PAPER_TABLE7), "tau": [v[2] for v in PAPER_TABLE7.values()]},
        title="Table 7: tau against the selector length",
    )
    written.append(write_figure(docs / "table7.svg", fig))
    return {"tables": {"Table 7": rows}, "figures": {"tau against len_z": fig}, "written": written}


def _series(rows: list[dict[str, Any]], x: str) -> dict[str, dict[str, list]]:
    """Both families' (x, tau) points from table rows, for ``figures.tau_power_law``."""
    return {
        fam: {"x": [r[x] for r in rows], "tau": [r[f"tau_{fam}"] for r in rows], "label": [f"{x}={r[x]}" for r in rows]}
        for fam in FAMILY_KEYS
    }


def build_batch_size(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 1: tau in steps and in examples seen (steps x B), and both ratios to the largest B."""
    from .. import figures

    rows = sorted(_tau_rows(sweep, root, docs), key=lambda r: r["batch_size"])
    out = []
    for fam in FAMILY_KEYS:
        base = next((r for r in reversed(rows) if r[f"tau_{fam}"]), None)
        for r in rows:
            t = r[f"tau_{fam}"]
            ex = t * r["batch_size"] if t else None
            out.append(
                {
                    "definition": fam,
                    "B": r["batch_size"],
                    "tau_steps": t,
                    "tau_examples_k": ex / 1000 if ex else None,
                    "step_ratio": t / base[f"tau_{fam}"] if t and base else None,
                    "example_ratio": ex / (base[f"tau_{fam}"] * base["batch_size"]) if ex and base else None,
                    "paper_tau_steps": PAPER_TABLE1.get(r["batch_size"]) if fam == "paper" else None,
                    # a finished run without this tau used its whole budget (or stopped at the
                    # other family's rule): its tau is later than this step
                    "not_reached_by": r["steps"] if t is None and r["status"] == "finished" else None,
                    "steps": r["steps"],
                    "status": r["status"],
                }
            )
    # the original's recipe (clipping 1.0) writes table1; the unclipped variant table1_noclip
    stem = "table1" if sweep.name.endswith("_clip") else "table1_noclip"
    clip = "clipping 1.0" if stem == "table1" else "no clipping"
    written = write_table(
        docs / stem,
        out,
        title=f"Table 1: batch size at K = 20, lr 1e-3, {clip}",
        note="tau_examples_k: tau x B in thousands (the paper's tau_tok); ratios to the largest B with a tau; "
        "not_reached_by: a finished run without that tau, the step it stopped at.",
    )
    figs = {}
    for unit, scale, ylab in (("steps", 1, "tau (steps)"), ("examples", None, "tau x B (examples seen)")):
        pts = {
            fam: {
                "x": [r["batch_size"] for r in rows],
                "tau": [r[f"tau_{fam}"] * (scale or r["batch_size"]) if r[f"tau_{fam}"] else None for r in rows],
                # lower bounds for the stopping family only: the runs stop by design before Lc's tau
                "reached": [
                    r["steps"] * (scale or r["batch_size"]) if r["steps"] and fam == "paper" else None for r in rows
                ],
                "label": [f"B={r['batch_size']} ({r['status']})" for r in rows],
            }
            for fam in FAMILY_KEYS
        }
        fits = {fam: power_law(p["x"], p["tau"], n_boot=0) for fam, p in pts.items()}
        ref = {"x": list(PAPER_TABLE1), "tau": [t * (1 if scale else b) for b, t in PAPER_TABLE1.items()]}
        figs[f"tau in {unit} against B"] = figures.tau_power_law(
            pts,
            fits,
            x_label="batch size B (K = 20, lr 1e-3)",
            x_symbol="B",
            y_label=ylab,
            reference=ref,
            title=f"Table 1: tau in {unit} against B ({clip})",
        )
        written.append(write_figure(docs / f"{stem}_{unit}.svg", figs[f"tau in {unit} against B"]))
    return {"tables": {"Table 1": out}, "figures": figs, "written": written}


def build_seeds(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 4: mean, std and CV of tau over seeds at each (D, K, lr), every seed's tau against
    lr, and Table 8's phase boundary from the same runs."""
    from .. import figures

    rows = _tau_rows(sweep, root, docs)
    out = seed_stats(rows)
    stem = "table4" if sweep.name == "paper_seeds" else sweep.name.removeprefix("paper_")
    written = write_table(
        docs / stem,
        out,
        title=f"Table 4 ({sweep.name}): tau across seeds",
        note="std: sample standard deviation; CV = std / mean; taus: the seeds that escaped "
        "within the budget (with_tau of runs). p_smaller_spread: one-sided F test of our std against "
        "the paper's (three seeds; df with_tau - 1 and 2): small means our seeds vary less.",
    )
    pts = {
        f"K={K}": {
            "x": [r["lr"] for r in rs],
            "tau": [r["tau_paper"] for r in rs],
            "reached": [r["steps"] for r in rs],
            "label": [f"{r['run']} ({r['status']})" for r in rs],
        }
        for K in sorted({r["K"] for r in rows})
        for rs in [[r for r in rows if r["K"] == K]]
    }
    ref = [(lr, m) for (D, K, lr), (m, _) in PAPER_TABLE4.items()]
    fig = figures.tau_power_law(
        pts,
        {},
        x_label="learning rate (n_b = 1000)",
        x_symbol="lr",
        dodge=1.04,
        reference={"x": [a for a, _ in ref], "tau": [b for _, b in ref]},
        title=f"Table 4 ({sweep.name}): each seed's tau (L_seq) against lr<br><sup>crosses: the paper's "
        "means per condition (K = 5 below, K = 10 above); each K drawn a little "
        "left or right of its lr</sup>",
    )
    t8 = phase_boundary(rows)
    written += write_table(
        docs / f"{stem}_boundary",
        t8,
        title=f"Table 8, first cut ({sweep.name}): the phase boundary",
        note="A run escapes when L_seq falls below 0.5 log K within its step budget (max_steps); it fails "
        "when it finishes the budget without. max_all_succeed: the largest lr at which every seed "
        "escaped; min_any_fail: the smallest at which one failed; eta_star: their geometric mean; "
        "undecided: runs not yet finished and not yet escaped.",
    )
    written.append(write_figure(docs / f"{stem}.svg", fig))  # after the tables: a failed export loses none
    return {"tables": {"Table 4": out, "Table 8": t8}, "figures": {"Table 4": fig}, "written": written}


def seed_stats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (D, K, lr) and family: the runs, the taus of the seeds that escaped, their mean, sample
    standard deviation and CV = std / mean (None where fewer than two escaped), the paper's mean
    and std, and ``p_smaller_spread``: the one-sided F test of our spread against the paper's
    three seeds (``fits.smaller_spread_p``)."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["D"], r["K"], r["lr"]), []).append(r)
    out = []
    for (D, K, lr), rs in by.items():
        for fam in FAMILY_KEYS:
            taus = [r[f"tau_{fam}"] for r in rs if r[f"tau_{fam}"]]
            mean = statistics.mean(taus) if taus else None
            std = statistics.stdev(taus) if len(taus) > 1 else None
            ref = PAPER_TABLE4.get((D, K, lr), (None, None))
            paper_std = ref[1] if fam == "paper" else None
            out.append(
                {
                    "D": D,
                    "K": K,
                    "lr": lr,
                    "definition": fam,
                    "runs": len(rs),
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
                **{
                    f"fixed_init_{k}": f.get(k)
                    for k in ("runs", "taus", "mean_tau", "std_tau", "cv", "p_smaller_spread")
                },
                **{f"varied_init_{k}": v[k] for k in ("runs", "taus", "mean_tau", "std_tau", "cv", "p_smaller_spread")},
                "paper_mean": v["paper_mean"],
                "paper_std": v["paper_std"],
            }
        )
    return comp


def build_seeds_init(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 4 with the init varied (each seed its own init), and beside it the same conditions
    with the init fixed (the ``seeds_warmup`` recipe: the same points but the init): does the
    spread of tau across seeds come from the data and batch order or from the init?"""
    out = build_seeds(sweep, root, docs, n_boot, seed)
    comp = compare_seed_stats(_tau_rows(sweep, root, docs), _tau_rows(recipe_sweep("seeds_warmup"), root, docs))
    out["written"] += write_table(
        docs / "seeds_init_vs_fixed",
        comp,
        title="Table 4: the init fixed (seed 42) or varied with the seed",
        note="Both with 500 warm-up steps, budget 20,000 (fixed: `seeds_warmup`; varied: `seeds_init`). "
        "taus: the seeds that escaped; std: sample standard deviation; CV = std / mean.",
    )
    out["tables"]["init fixed vs varied"] = comp
    return out


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
        ref = PAPER_TABLE8.get(K, (None, None, None)) if D == 1000 * K else (None, None, None)
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


BUILDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "k_sweep": build_k_sweep,
    "fixed_d": build_fixed_d,
    "fixed_d_noclip": build_fixed_d,
    "len_z": build_len_z,
    "batch_size": build_batch_size,
    "batch_size_noclip": build_batch_size,
    "seeds": build_seeds,
    "seeds_init": build_seeds_init,
    "seeds_warmup": build_seeds,
    "lr_sweep": build_lr_width,
    "phase_boundary": build_phase_boundary,
    "dissipation": build_dissipation,
    "label_noise": build_label_noise,
    "direction": build_direction,
}


def run_sweep_recipe(
    name: str,
    *,
    jobs: int | None = None,
    train: bool = True,
    progress: bool = True,
    root: str | Path = "checkpoints",
    docs: str | Path = "docs/reproduction",
    analyses: str | Path = "analyses",
    n_boot: int = 2000,
    seed: int = 0,
    batch_runs: int = 1,
    only: list[str] | None = None,
    skip_recorded: bool = False,
    sweep: Sweep | None = None,
    max_steps: int | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Train (unless ``train=False``) the recipe's sweep, then build its tables, figures and the
    sweep's HTML page (``analyses/<sweep>.html``); writes ``docs/<sweep>_log.json``, which also
    records every run's row, config and loss curves (``records``: after each run ends, and at the
    end), so that a rebuild on another machine keeps the runs trained here. ``only``: train just
    these points (run names); ``skip_recorded``: do not train the points the log records as
    finished elsewhere (a recipe continued across machines); the tables use every run either way.
    ``sweep``: a sweep of your own (a variant of the recipe's file) built by the recipe
    ``name``'s tables; ``max_steps``: the recipe's step budget replaced (``recipe_sweep``); ``device``: where the runs
    train (``devices.resolve``). Runs that fail are named in an error raised after the log is written."""
    from ..report import sweep_report

    if name not in BUILDERS:
        raise RunError(f"unknown sweep recipe {name!r}: choose one of {', '.join(BUILDERS)}")
    sweep = sweep or recipe_sweep(name, max_steps)
    root, docs = Path(root), Path(docs)
    last = read_log(docs, sweep)  # an unreadable log is refused before any work: it may hold the only record of runs
    todo = [p.name for p in sweep.points] if only is None else select(sweep, only)
    t0 = time.perf_counter()
    failed = ""
    if train:
        if skip_recorded:
            rows = {r["run"]: r for r in collect(sweep, root, docs)[0]}
            todo = [n for n in todo if not (rows[n]["source"] == "recorded" and rows[n]["status"] == "finished")]
        table = run_sweep(
            sweep,
            root=root,
            jobs=jobs,
            progress=progress,
            batch_runs=batch_runs,
            only=todo,
            on_done=lambda: write_log(docs, sweep, root),
            device=device,
        )
        bad = table[table["error"].notna() & table["run"].isin(todo)] if "error" in table else table.iloc[:0]
        failed = "; ".join(f"{r.run}: {r.error}" for r in bad.itertuples())
    else:
        if only is not None or skip_recorded:
            raise RunError("--only and --skip-recorded choose what to train: a rebuild (--no-train) trains nothing")
        plan(sweep, root)  # refuse runs whose config changed
        if not any(r["source"] for r in collect(sweep, root, docs)[0]):
            raise RunError(
                f"{sweep.folder(root)}: no run of this recipe has started here or is recorded in "
                f"{log_path(docs, sweep)}; run it without --no-train first"
            )
    # a rebuild trains nothing: keep the wall time of the last call that trained
    t_train = time.perf_counter() - t0 if train else last.get("recipe_wall_s")
    docs.mkdir(parents=True, exist_ok=True)
    built = BUILDERS[name](sweep, root, docs, n_boot, seed)
    rows, curves, _ = collect(sweep, root, docs)
    pages = {}
    for p, r in zip(sweep.points, rows):
        if r["run"] in curves:
            label = ", ".join(f"{k}={v}" for k, v in p.settings.items()) or p.name
            c = curves[r["run"]]
            pages[label] = {"steps": c["step"], "L_seq": c["L_seq"], "Lc": c["Lc"], "log_K": p.cfg.task.log_K}
    html = sweep_report(
        Path(analyses) / f"{sweep.name}.html",
        sweep.name,
        built["tables"],
        built["figures"],
        pages,
        note=(BUILDERS[name].__doc__ or "").strip(),
    )
    log = write_log(
        docs,
        sweep,
        root,
        {
            "recipe": name,
            "sweep": sweep.name,
            "tables": built["tables"],
            "recipe_wall_s": t_train,
            "sum_of_run_train_wall_s": sum(num(r["wall_s"]) for r in rows if math.isfinite(num(r["wall_s"]))),
            "written": [str(w) for w in built["written"]] + [str(html)],
        },
    )
    if log["without_curves"] and progress:  # recorded before the logs kept curves: tau at other alphas is lost
        print(
            f"{sweep.name}: {len(log['without_curves'])} recorded runs have no loss curves in {log_path(docs, sweep)} "
            f"({', '.join(log['without_curves'])}): tables that read curves leave them out",
            file=sys.stderr,
        )
    if failed:
        raise RunError(f"{sweep.name}: runs failed: {failed}")
    return nan_to_none({k: v for k, v in log.items() if k not in ("records", "superseded")})
