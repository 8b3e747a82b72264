"""The sweep recipes: ``mi-plateau reproduce k_sweep`` and the others of ``registry.RECIPES``
with a builder (the paper's sweep tables; the builders in ``scaling``, ``seeds``, ``boundary``,
``mechanisms`` and ``direction``).

Each recipe is a sweep file shipped in ``mi_plateau/sweeps/recipes/`` (run by the sweep runner,
so every point is an ordinary run folder under ``checkpoints/<sweep>/``, resumable) and a builder
that turns the sweep's runs into tables and figure specs. ``run_sweep_recipe`` trains, collects
the runs once (``records.collect``), builds, writes the tables (Markdown, CSV, JSON) and static
figures (``writer.write_built``), one interactive HTML page for the whole sweep, and the log.
Builders read whatever runs exist: a partial sweep gives a partial table, with each run's status.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError
from ..report import sweep_report
from ..settle import settle
from ..summaries import nan_to_none, num
from ..sweeps import RunOptions, Sweep, plan, run_sweep, select, sweep_in_precision
from .cost import dry_run as priced
from .records import Collected, collect, log_path, read_log, traceable, write_log
from .registry import DOCS, DryRun, Recipe, recipe
from .shipped import recipe_sweep
from .writer import Built, write_built


def own_tables_kept(r: Recipe, o: RunOptions) -> None:
    """A sweep recipe in another precision must not write over the recipe's own tables."""
    own = recipe_sweep(r.name)
    if sweep_in_precision(own, o.precision).name != own.name and Path(o.docs) == Path(DOCS):
        raise ValueError(
            f"reproduce {r.name} --precision {o.precision}: its tables would replace the recipe's own in "
            f"{DOCS}; give --docs another folder"
        )


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    """The recipe's runs, their state and what is left of each (``cost.dry_run``), and the total."""
    from ..devices import resolve  # here, not at the top: torch (a rebuild of the tables needs none)

    own_tables_kept(r, o)
    rows = priced(r.name, o)
    todo = [row for row in rows if row["est_core_min"] > 0]
    return DryRun(
        rows,
        f"{len(rows)} runs, {len(rows) - len(todo)} with nothing left to train; the rest should take about "
        f"{sum(row['est_core_min'] for row in todo):.0f} core-minutes on {resolve(o.device)} here (one thread per run)",
    )


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    own_tables_kept(r, o)
    return run_sweep_recipe(r.name, o)


def build(
    name: str, collected: Collected, sweep: Sweep, root: str | Path, docs: str | Path, n_boot: int, seed: int
) -> Built:
    """The recipe ``name``'s tables and figures from ``collected`` (``sweep``'s runs), with the
    runs of the other recipes it reads (``Recipe.reads``) collected from the same ``root`` and ``docs``."""
    r = recipe(name)
    reads = {kw: recipe_sweep(other) for kw, other in r.reads.items()}
    others = {kw: shown(s, collect(s, root, docs)) for kw, s in reads.items()}
    return r.build_function()(shown(sweep, collected), sweep, n_boot, seed, **others)


def shown(sweep: Sweep, collected: Collected) -> Collected:
    """``collected`` as the tables show it (``records.traceable``): a recorded run without its
    curves keeps its name and swept settings, not its numbers."""
    keys = tuple(k for p in sweep.points for k in p.settings)
    return traceable(collected, tuple(dict.fromkeys(keys)))


def page_curves(sweep: Sweep, collected: Collected) -> dict[str, dict[str, Any]]:
    """Every run's loss curves (both families) for the sweep page, by its swept settings; runs
    without curves (not started, or recorded before curves were kept) are left out."""
    pages = {}
    for p, r in zip(sweep.points, collected.rows):
        if r["run"] in collected.curves:
            label = ", ".join(f"{k}={v}" for k, v in p.settings.items()) or p.name
            c = collected.curves[r["run"]]
            pages[label] = {"steps": c["step"], "L_seq": c["L_seq"], "Lc": c["Lc"], "log_K": p.cfg.task.log_K}
    return pages


def settle_runs(sweep: Sweep, root: Path, progress: bool) -> None:
    """``settle`` on every started run of ``sweep`` (its default questions)."""
    for p in sweep.points:
        path = sweep.folder(root) / p.name
        if (path / "manifest.json").exists():
            note = settle(Run(path)).note()
            if progress:
                print(f"{sweep.name}/{p.name}: settled, {note['full_sets_now']} full scorings now", file=sys.stderr)


def train_points(sweep: Sweep, docs: Path, todo: list[str], options: RunOptions) -> str:
    """Train the points ``todo`` (less, with ``options.skip_recorded``, those the log records as
    finished elsewhere) with ``sweeps.run_sweep`` as ``options`` ask, rewriting the log after each
    run ends; returns the failed runs' errors, "" if none."""
    root = Path(options.root)
    if options.skip_recorded:
        rows = {r["run"]: r for r in collect(sweep, root, docs).rows}
        todo = [n for n in todo if not (rows[n]["source"] == "recorded" and rows[n]["status"] == "finished")]
    table = run_sweep(sweep, replace(options, only=tuple(todo)), on_done=lambda: write_log(docs, sweep, root))
    bad = table[table["error"].notna() & table["run"].isin(todo)] if "error" in table else table.iloc[:0]
    return "; ".join(f"{r.run}: {r.error}" for r in bad.itertuples())


def run_sweep_recipe(
    name: str,
    options: RunOptions = RunOptions(),
    *,
    sweep: Sweep | None = None,
    analyses: str | Path = "analyses",
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Train (unless ``options.train`` is False) the recipe's sweep, then build its tables,
    figures and the sweep's HTML page (``analyses/<sweep>.html``); writes ``docs/<sweep>_log.json``,
    which also records every run's row, config and loss curves (``records``: after each run ends,
    and at the end), so that a rebuild on another machine keeps the runs trained here.

    Reads of ``options``: ``root``, ``docs``; ``max_steps`` (the recipe's step budget replaced,
    ``recipe_sweep``) and ``precision`` (``sweeps.sweep_in_precision``); ``only`` (train just these
    points) and ``skip_recorded`` (do not train the points the log records as finished elsewhere:
    a recipe continued across machines), the tables using every run either way; ``jobs``,
    ``batch_runs``, ``device`` and ``progress`` (``sweeps.run_sweep``); ``static`` (the static
    figures, ``outputs.write_figures``; the log's ``static_note`` says when they were skipped).
    ``sweep``: a sweep of your own (a variant of the recipe's file, with its own budget) built by
    the recipe ``name``'s tables. Runs that fail are named in an error raised after the log is
    written."""
    sweep = sweep_in_precision(sweep or recipe_sweep(name, options.max_steps), options.precision)
    root, docs, progress = Path(options.root), Path(options.docs), options.progress
    last = read_log(docs, sweep)  # an unreadable log is refused before any work: it may hold the only record of runs
    todo = [p.name for p in sweep.points] if options.only is None else select(sweep, options.only)
    failed, t_train = "", last.get("recipe_wall_s")  # a rebuild trains nothing: the last training call's time
    if options.train:
        t0 = time.perf_counter()
        failed = train_points(sweep, docs, todo, options)
        t_train = time.perf_counter() - t0
    elif options.only is not None or options.skip_recorded:
        raise RunError("--only and --skip-recorded choose what to train: a rebuild (--no-train) trains nothing")
    else:
        plan(sweep, root)  # refuse runs whose config changed
    if options.settle:  # exact crossings on request only: the full scorings each run pays are cached in it
        settle_runs(sweep, root, progress)
    collected = collect(sweep, root, docs)  # the one read of the runs: the builder, the page and the log share it
    if not options.train and not any(r["source"] for r in collected.rows):
        raise RunError(
            f"{sweep.folder(root)}: no run of this recipe has started here or is recorded in "
            f"{log_path(docs, sweep)}; run it without --no-train first"
        )
    built = build(name, collected, sweep, root, docs, n_boot, seed)
    docs.mkdir(parents=True, exist_ok=True)
    written, static_note = write_built(docs, built, options.static)
    note = (recipe(name).build_function().__doc__ or "").strip()
    page = Path(analyses) / f"{sweep.name}.html"
    html = sweep_report(page, sweep.name, built.rows(), built.figs(), page_curves(sweep, collected), note=note)
    walls = [num(r["wall_s"]) for r in collected.rows]
    extra = {
        "recipe": name,
        "sweep": sweep.name,
        "tables": built.rows(),
        "recipe_wall_s": t_train,
        "sum_of_run_train_wall_s": sum(w for w in walls if math.isfinite(w)),
        "written": [str(w) for w in [*written, html]],
        "static_note": static_note,
    }
    log = write_log(docs, sweep, root, extra, collected)
    if log["without_curves"] and progress:  # recorded before the logs kept curves: tau at other alphas is lost
        print(
            f"{sweep.name}: {len(log['without_curves'])} recorded runs have no loss curves in {log_path(docs, sweep)} "
            f"({', '.join(log['without_curves'])}): the tables show them as 'no curves', without their numbers; "
            f"retrain them with --only to bring the numbers back",
            file=sys.stderr,
        )
    differ = {run: c["differences"] for run, c in (log.get("retrained") or {}).items() if c.get("equal") is False}
    if (
        differ and progress
    ):  # a run retrained for its curves does not equal its record: training should be deterministic
        print(f"{sweep.name}: retrained runs differ from their records: {differ}", file=sys.stderr)
    if failed:
        raise RunError(f"{sweep.name}: runs failed: {failed}")
    return nan_to_none({k: v for k, v in log.items() if k not in ("records", "superseded")})
