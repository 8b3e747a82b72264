"""Table 10 as a recipe: ``mi-plateau reproduce hessian`` runs the Hessian pass
(``estimators.hessian``: the original code's power iteration and converged Lanczos) over the K sweep's
runs at Table 10's K (3, 5, 10, 20, 36), the run folders of the ``k_sweep`` recipe (training
them, where they are missing, goes through that recipe), and writes Table 10 beside the paper's,
every checkpoint's row, and the spectrum's extremes across each run as a figure.

Per run (finished, with a paper-family tau): both estimators at the original's five plateau
checkpoints (``plateau_checkpoints``: evenly spaced in [max(100, 0.2 tau), 0.8 tau], snapped),
which are Table 10's; Lanczos alone at the first checkpoint, at tau and at the last checkpoint
(the K sweep stops at 1.2 tau), which with the plateau ones make the figure.

The pass costs hundreds of Hessian-vector products per checkpoint, so its rows are kept in the
recipe's log (``docs/reproduction/paper_hessian_log.json``) with the pass's settings and the
checksums of the weights they came from. A run whose rows the log holds for the same settings and
weights is not recomputed; a rebuild without the run folders (``--no-train``, another machine)
writes the same tables from the log alone; a run trained here with other weights is recomputed.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import torch

from .. import paper
from ..checkpoints import Run, RunError
from ..config import HessianSettings
from ..estimators.hessian import hessian_pass, plateau_checkpoints, table10
from ..figures import PALETTE
from ..frames import records
from ..settle import run_summary
from ..summaries import nan_to_none, nearest
from ..sweeps import RunOptions
from .logged import read_log, run_logged
from .registry import DryRun, Recipe
from .shipped import recipe_sweep
from .sweeps import run_sweep_recipe
from .writer import Built, Plot, Table

READS = "k_sweep"  # the recipe whose runs the pass reads
LOG = "paper_hessian_log.json"
K_VALUES = (3, 5, 10, 20, 36)  # the paper's Table 10 rows
SETTINGS: dict[str, Any] = asdict(HessianSettings())  # the pass's, as the log keeps them (config.HessianSettings)
ACROSS = (0.0, 1.0)  # Lanczos-only checkpoints as fractions of tau, besides the last one
CHECKPOINT_KEYS = (
    "run",
    "K",
    "tau",
    "step",
    "t_over_tau",
    "role",
    "loss",
    "estimator",
    "lambda_max",
    "lambda_min",
    "anisotropy",
    "residual_max",
    "residual_min",
    "converged",
    "n_hvp",
    "seconds",
)


def run_names(only: list[str] | None = None) -> list[str]:
    """The K sweep's runs the recipe reads (``K{K}_seed0``), or those of ``only``."""
    names = [f"K{K}_seed0" for K in K_VALUES]
    if only is None:
        return names
    unknown = [n for n in only if n not in names]
    if unknown:
        raise RunError(f"reproduce hessian --only {','.join(unknown)}: not a run of Table 10 ({', '.join(names)})")
    return [n for n in names if n in only]


def pass_steps(steps: list[int], tau: int) -> tuple[list[int], list[int]]:
    """The plateau checkpoints (Table 10's, both estimators) and the other checkpoints the figure
    reads (Lanczos only: the checkpoints nearest 0 and tau, and the last), each once."""
    plateau = plateau_checkpoints(steps, tau)
    across = {nearest(steps, f * tau) for f in ACROSS} | {steps[-1]}
    return plateau, sorted(across - set(plateau))


def _pass_kwargs(settings: dict[str, Any]) -> dict[str, Any]:
    return {**settings, "dtype": getattr(torch, settings["dtype"])}


class Target(NamedTuple):
    """A finished run here, ready for the pass: its tau, the plateau checkpoints, the other
    checkpoints the figure reads, and the checksums of all their weights (taken before the pass)."""

    run: Run
    tau: int
    plateau: list[int]
    across: list[int]
    sha: dict[str, str]


def _target(path: Path) -> Target | str:
    """The run here ready for the pass, or why not: "not here" (not started), "unreadable",
    "running", "no tau" (finished without a paper-family tau)."""
    run = Run(path)
    if not (path / "manifest.json").exists():
        return "not here"
    try:
        s = run_summary(run)
        steps = run.steps()
        tau = s["definitions"]["paper"]["tau"]
        if s["status"] != "finished":
            return "running"
        if tau is None:
            return "no tau"
        plateau, across = pass_steps(steps, tau)
        sha = run.weights_sha256(plateau + across)
    except (RunError, OSError):
        return "unreadable"
    return Target(run, tau, plateau, across, {str(k): sha[k] for k in sorted(sha)})


def compute_entry(t: Target, settings: dict[str, Any], progress: bool = False) -> dict[str, Any]:
    """The pass over one run: its rows (``role`` "plateau" or "across"), with what they came from."""
    kw = _pass_kwargs(settings)
    rows = [{**r, "role": "plateau"} for r in records(hessian_pass(t.run, t.plateau, progress=progress, **kw))]
    if t.across:
        extra = hessian_pass(t.run, t.across, estimators=("lanczos",), progress=progress, **kw)
        rows += [{**r, "role": "across"} for r in records(extra)]
    entry = {
        "settings": settings,
        "tau": t.tau,
        "weights_sha256": t.sha,
        "rows": sorted(rows, key=lambda r: (r["step"], r["estimator"])),
    }
    return json.loads(json.dumps(nan_to_none(entry)))  # as the log holds it: a rebuild from the log is the same


def _current(entry: Any, t: Target, settings: dict[str, Any]) -> bool:
    """Does the log's entry hold this run's rows: the same settings, tau and weights?"""
    return (
        isinstance(entry, dict)
        and entry.get("settings") == settings
        and entry.get("tau") == t.tau
        and entry.get("weights_sha256") == t.sha
    )


NUMERIC = ("lambda_max", "lambda_min", "anisotropy", "residual_max", "residual_min", "loss", "seconds")


def table10_rows(entries: dict[str, Any], settings: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per K of Table 10: ``estimators.hessian.table10`` over the plateau rows of each run
    the log holds for ``settings`` (both estimators); "not computed" where it holds none, "other
    settings" where its rows came from another pass (left out); the paper's beside."""
    rows = []
    for K, name in zip(K_VALUES, run_names()):
        entry = entries.get(name)
        ours = entry is not None and entry["settings"] == settings
        plateau = [  # the log's None (JSON's NaN; inf: an unconverged pair) back to NaN for the means
            {**r, **{k: math.nan if r.get(k) is None else r[k] for k in NUMERIC}}
            for r in (entry["rows"] if ours else [])
            if r.get("role") == "plateau"
        ]
        if plateau:
            row = records(table10(plateau))[0]
            row["steps"] = list(row["steps"])
            rows.append({**row, "status": "computed"})
        else:
            ref = paper.TABLE10.get(K, (None, None))
            status = "other settings" if entry is not None else "not computed"
            rows.append({"run": name, "K": K, "status": status, "paper_anisotropy": ref[0], "paper_lambda_max": ref[1]})
    return rows


def checkpoint_rows(entries: dict[str, Any], settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Every checkpoint's row (both roles, both estimators) of the runs computed with
    ``settings``, by K, step and estimator."""
    rows = [
        {k: r.get(k) for k in CHECKPOINT_KEYS} for e in entries.values() if e["settings"] == settings for r in e["rows"]
    ]
    return sorted(rows, key=lambda r: (r["K"], r["step"], r["estimator"]))


def spectrum_figure(rows: list[dict[str, Any]]):
    """Lanczos's lambda_max (solid) and lambda_min (dashed) against t / tau, one colour per K; the
    original estimator's lambda_max and lambda_min at the plateau checkpoints as crosses."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, K in enumerate(sorted({r["K"] for r in rows})):
        c = PALETTE[i % len(PALETTE)]
        for est, dash, mode in (("lanczos", None, "lines+markers"), ("original_power", None, "markers")):
            rs = sorted((r for r in rows if r["K"] == K and r["estimator"] == est), key=lambda r: r["step"])
            if not rs:
                continue
            x = [r["t_over_tau"] for r in rs]
            for key, d in (("lambda_max", dash), ("lambda_min", "dash")):
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=[r[key] for r in rs],
                        mode=mode,
                        name=f"K={K} {key} ({est})",
                        line={"color": c, "dash": d},
                        marker={"symbol": "x" if est == "original_power" else "circle", "size": 7},
                        legendgroup=f"K{K}",
                    )
                )
    fig.add_vrect(x0=0.2, x1=0.8, fillcolor="#dddddd", opacity=0.4, line_width=0)
    fig.update_layout(
        title="Hessian extremes across each run (Lanczos; crosses: the original's power iteration)<br>"
        "<sup>shaded: the plateau checkpoints of Table 10, 0.2-0.8 tau; dashed: lambda_min</sup>",
        xaxis_title="t / tau (paper family)",
        yaxis_title="eigenvalue of the Hessian (nats per unit parameter squared)",
        template="plotly_white",
        width=900,
        height=560,
    )
    return fig


def build_hessian(entries: dict[str, Any], settings: dict[str, Any]) -> Built:
    """Table 10 (per K, both estimators, beside the paper's), every checkpoint's row, the figure."""
    s = settings
    note = (
        f"Hessian of the target positions' cross-entropy on {s['n_examples']} training examples (seed {s['seed']}), "
        f"every parameter, {s['dtype']}; original = the original code's power iteration (the mean over the plateau "
        f"checkpoints of |lambda_max| / max(|lambda_min|, 1e-10)); lanczos = ARPACK's Lanczos, the {s['k']} largest "
        f"and smallest eigenvalues, converged when every pair's relative residual is <= {s['tol']}. Checkpoints: 5 "
        "evenly spaced in [max(100, 0.2 tau), 0.8 tau] of the K sweep's runs (seed 0). original_filter: the same "
        "estimator over the checkpoints the original's filter keeps (on its 100-step grid, strictly before 0.8 tau: "
        "steps_original_filter), ours on our own checkpoints; *_over_paper: the ratio to the paper's anisotropy."
    )
    cps = checkpoint_rows(entries, settings)
    tables = {
        "Table 10": Table(
            "table10", table10_rows(entries, settings), "Table 10: Hessian anisotropy on the plateau", note
        ),
        "Table 10 checkpoints": Table(
            "table10_checkpoints",
            cps,
            "Table 10 per checkpoint (plateau: Table 10's; across: Lanczos at the first checkpoint, tau and the last)",
            note,
        ),
    }
    figures = {"Hessian extremes": Plot("hessian_spectrum", spectrum_figure(cps))} if cps else {}
    return Built(tables, figures)


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    return DryRun(dry_run_rows(o))


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    return run_hessian_recipe(o)


def dry_run_rows(options: RunOptions = RunOptions()) -> list[dict[str, Any]]:
    """Per run of Table 10 (``options.only``: these) under ``options.root``: its tau and
    checkpoints where it is ready here, and ``pass``: its rows are in the log (under
    ``options.docs``) for them ("computed"), would be computed ("to compute"), are in the log from a
    run elsewhere ("computed (log)"), or the run is not ready here ("not here", "running", "no
    tau", "unreadable")."""
    only, root, docs = options.only, options.root, options.docs
    entries = read_log(Path(docs) / LOG, "hessian", sound).get("runs") or {}
    out = []
    for name in run_names(only):
        t = _target(recipe_sweep(READS).folder(root) / name)
        row: dict[str, Any] = {"run": name, "tau": None, "plateau_steps": None, "also_steps": None}
        if isinstance(t, str):
            row["pass"] = "computed (log)" if t == "not here" and name in entries else t
        else:
            row |= {"tau": t.tau, "plateau_steps": t.plateau, "also_steps": t.across}
            row["pass"] = "computed" if _current(entries.get(name), t, SETTINGS) else "to compute"
        out.append(row)
    return out


def sound(entry: Any) -> bool:
    """A logged entry holds its settings and a list of rows."""
    return isinstance(entry, dict) and isinstance(entry.get("settings"), dict) and isinstance(entry.get("rows"), list)


def run_pass(t: Target, settings: dict[str, Any], progress: bool, logged: Any) -> dict[str, Any] | None:
    """The run's entry (``compute_entry``), None where the logged one holds it already."""
    if _current(logged, t, settings):
        return None
    if progress:
        print(f"hessian {t.run.name}: plateau checkpoints {t.plateau}, also {t.across} (tau {t.tau})", file=sys.stderr)
    return compute_entry(t, settings, progress)


def run_hessian_recipe(
    options: RunOptions = RunOptions(),
    *,
    analyses: str | Path = "analyses",
    settings: HessianSettings | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train the runs Table 10 reads, the K sweep's K = 3, 5, 10, 20 and 36 (``options.only``:
    these; unless ``options.train`` is False; through the ``k_sweep`` recipe with ``jobs``,
    ``device`` and ``progress``, which also rewrites its own tables), run the pass over every
    finished one here (of ``only``) whose rows the log does not hold for ``settings``, then write
    Table 10, its checkpoint rows, the figure (``options.static``) and the log (under
    ``options.docs``; ``logged.run_logged``). Two processes may share the log; nothing stops both
    from computing the same run, so give each its own ``only``. ``settings``: the pass's (a ``HessianSettings``
    or its fields as a dict, checked; default ``SETTINGS``; a smaller pass for tests); the tables
    read only the runs computed with them.
    Returns the log without the runs' rows."""
    settings = asdict(settings if isinstance(settings, HessianSettings) else HessianSettings(**(settings or {})))
    names = run_names(options.only)
    if options.only is not None and not names:
        raise RunError("reproduce hessian --only: no run named")
    if options.train:  # the K sweep's own runs: not its budget, precision or log's choices
        sweep_options = replace(options, only=tuple(names), max_steps=None, precision=None, skip_recorded=False)
        run_sweep_recipe(READS, sweep_options, analyses=analyses)
    folder = recipe_sweep(READS).folder(options.root)

    def passes():
        for name in names:
            t = _target(folder / name)
            if not isinstance(t, str):
                yield name, partial(run_pass, t, settings, options.progress)

    def extra(entries: dict[str, Any]) -> dict[str, Any]:
        ours = [r for e in entries.values() if e["settings"] == settings for r in e["rows"]]
        return {"reads": READS, "settings": settings, "pass_seconds": sum(r.get("seconds") or 0.0 for r in ours)}

    missing = (
        f"{folder}: no finished run of Table 10 here and none in {{log}}; run `mi-plateau reproduce hessian` first"
    )
    build = lambda entries: build_hessian(entries, settings)  # noqa: E731
    return run_logged(
        "hessian", options.docs, passes(), build, missing, options.static, log=LOG, sound=sound, extra=extra
    )
