"""Every recipe of ``mi-plateau reproduce`` as one kind of thing: a ``Recipe`` holds what its
dry run lists and what a real run does, both read from one ``RunOptions``.

A dry run answers rows (one per run or artifact the recipe reads, with its state) and, where
there is one, a closing line (the sweep recipes' cost here). A run answers the recipe's log: its
tables (title -> rows), the files it wrote and, where static figures were skipped, the line that
says so. The command prints both the same way for every recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..scorecard import SOURCES as SCORECARD_SOURCES
from ..scorecard import write_scorecard
from ..scorecard.controls import SOURCES as CONTROLS_SOURCES
from ..scorecard.controls import write_controls
from ..sweeps import RunOptions, status, sweep_in_precision
from . import sweeps
from .core import plan, run_recipe
from .cost import dry_run
from .figure3 import run_figure3_recipe, seed_runs
from .noise_estimator import run_noise_estimator_recipe, sweep_runs
from .sweeps import BUILDERS, recipe_sweep

DOCS = "docs/reproduction"  # --docs' default: the committed tables


class DryRun(NamedTuple):
    rows: list[dict[str, Any]]
    note: str | None = None


@dataclass(frozen=True)
class Recipe:
    name: str
    dry_run: Callable[[RunOptions], DryRun]
    run: Callable[[RunOptions], dict[str, Any]]


def recipe(name: str) -> Recipe:
    """The recipe ``name`` (``cli.RECIPE_NAMES``); a sweep recipe unless it is one of the others."""
    own = {
        "core": Recipe("core", _core_dry, _core_run),
        "hessian": Recipe("hessian", _hessian_dry, _hessian_run),
        "figure3": Recipe("figure3", _runs_dry(_figure3_runs), _figure3_run),
        "noise_estimator": Recipe("noise_estimator", _runs_dry(_noise_runs), _noise_run),
        "controls": Recipe("controls", _sources_dry("controls"), _table_run("controls")),
        "scorecard": Recipe("scorecard", _sources_dry("scorecard"), _table_run("scorecard")),
    }
    if name in own:
        return own[name]
    if name not in BUILDERS:
        raise ValueError(f"reproduce: no recipe named {name!r}")
    return Recipe(name, lambda o: _sweep_dry(name, o), lambda o: _sweep_run(name, o))


def _core_dry(o: RunOptions) -> DryRun:
    return DryRun(
        [
            {"run": str(p), "preset": c.preset, "K": c.task.K, "seed": c.task.data_seed, "status": status(p)}
            for p, c in plan("core", o.root)
        ]
    )


def _core_run(o: RunOptions) -> dict[str, Any]:
    return run_recipe("core", o)


def _hessian_dry(o: RunOptions) -> DryRun:
    from .hessian import dry_run_rows  # here, not at the top: it imports torch (for this recipe only)

    return DryRun(dry_run_rows(o))


def _hessian_run(o: RunOptions) -> dict[str, Any]:
    from .hessian import run_hessian_recipe  # here, not at the top: it imports torch

    return run_hessian_recipe(o)


def _figure3_runs(root: Path) -> list[Path]:
    return seed_runs(root)


def _noise_runs(root: Path) -> list[Path]:
    return sweep_runs(root)


def _runs_dry(runs: Callable[[Path], list[Path]]) -> Callable[[RunOptions], DryRun]:
    """A dry run that lists the runs a recipe reads and the state of each."""
    return lambda o: DryRun([{"run": str(p), "status": status(p)} for p in runs(Path(o.root))])


def _figure3_run(o: RunOptions) -> dict[str, Any]:
    return run_figure3_recipe(o.root, o.docs, progress=o.progress, device=o.device, static=o.static)


def _noise_run(o: RunOptions) -> dict[str, Any]:
    return run_noise_estimator_recipe(o.root, o.docs, progress=o.progress, static=o.static)


def _page_builders(name: str):
    """(the artifacts it reads, the function that writes it) of a recipe built from committed tables."""
    if name == "controls":
        return CONTROLS_SOURCES, write_controls
    return SCORECARD_SOURCES, write_scorecard


def _sources_dry(name: str) -> Callable[[RunOptions], DryRun]:
    """A dry run that lists the committed artifacts a recipe reads and whether each is there."""

    def dry(o: RunOptions) -> DryRun:
        sources, _ = _page_builders(name)
        return DryRun([{"artifact": s, "present": (Path(o.docs) / s).exists()} for s in sources])

    return dry


def _table_run(name: str) -> Callable[[RunOptions], dict[str, Any]]:
    """A recipe that writes one table from the committed ones (nothing is trained)."""

    def run(o: RunOptions) -> dict[str, Any]:
        _, write = _page_builders(name)
        if name == "scorecard":  # the committed page, and beside the analyses its interactive twin
            report = Path("analyses") / "scorecard.html" if Path(o.docs) == Path(DOCS) else None
            rows, paths = write(o.docs, static=o.static, report=report)
        else:
            rows, paths = write(o.docs)
        if name == "scorecard":  # the page's rows are long; the terminal gets the verdicts
            rows = [{k: r[k] for k in ("artifact", "verdict")} for r in rows]
        return {"recipe": name, "tables": {name: rows}, "written": [str(p) for p in paths]}

    return run


def _own_tables_kept(name: str, o: RunOptions) -> None:
    """A sweep recipe in another precision must not write over the recipe's own tables."""
    own = recipe_sweep(name)
    if sweep_in_precision(own, o.precision).name != own.name and Path(o.docs) == Path(DOCS):
        raise ValueError(
            f"reproduce {name} --precision {o.precision}: its tables would replace the recipe's own in "
            f"{DOCS}; give --docs another folder"
        )


def _sweep_dry(name: str, o: RunOptions) -> DryRun:
    from ..devices import resolve  # here, not at the top: torch (for a sweep recipe only)

    _own_tables_kept(name, o)
    rows = dry_run(name, o)
    todo = [r for r in rows if r["est_core_min"] > 0]
    return DryRun(
        rows,
        f"{len(rows)} runs, {len(rows) - len(todo)} with nothing left to train; the rest should take about "
        f"{sum(r['est_core_min'] for r in todo):.0f} core-minutes on {resolve(o.device)} here (one thread per run)",
    )


def _sweep_run(name: str, o: RunOptions) -> dict[str, Any]:
    _own_tables_kept(name, o)
    return sweeps.run_sweep_recipe(name, o)  # looked up when called: a test replaces it there
