"""Every recipe of ``mi-plateau reproduce``, declared once, in ``RECIPES``: its name, what it
rebuilds (its part of the command's help), the options it reads in each mode
(``commands.applies.USES``: the one check refuses the others) and where its code is. The
command line, the option check and the tests read this table; no other place names a recipe.

A recipe's code is two functions of its module (``module``, under ``mi_plateau.reproduce``), one
signature for every recipe: ``dry_run(recipe, options) -> DryRun`` (one row per run or artifact
it reads, with its state, and where there is one a closing line: the sweep recipes' cost) and
``run(recipe, options) -> log`` (its tables, title -> rows; the files it wrote; where static
figures were skipped, the line that says so). The command prints both the same way for every
recipe. A sweep recipe is its sweep file (``mi_plateau/sweeps/recipes/<name>.toml``), whose
``[recipe]`` table declares it (``shows``, ``builder``: "module.function" under
``mi_plateau.reproduce``, ``reads``), and its builder; its code is ``sweeps``
(``shipped_sweep_recipes``).

Standard library only: the command line reads the table at start-up, and a recipe's module (with
torch, pandas or plotly) is imported when the recipe is run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import tomllib

if TYPE_CHECKING:  # annotations only: the command line imports this table at start-up
    from ..config.options import RunOptions

DOCS = "docs/reproduction"  # --docs' default: the committed tables
SHIPPED = Path(__file__).resolve().parents[1] / "sweeps" / "recipes"  # the sweep files the package ships
# mode -> the options a sweep recipe reads there (every sweep recipe the same); the modes are
# those of ``commands.applies``: a plain run, --no-train, --dry-run
SWEEP_USES = {
    "": "device threads precision jobs batch_runs max_steps only skip_recorded progress root docs static settle",
    "--no-train": "train threads precision max_steps progress root docs static settle",
    "--dry-run": "dry_run device precision max_steps only skip_recorded root docs",
}
FROM_TABLES = {"": "docs", "--dry-run": "dry_run docs"}  # the recipes that read the committed tables


class DryRun(NamedTuple):
    rows: list[dict[str, Any]]
    note: str | None = None


@dataclass(frozen=True)
class Recipe:
    """One recipe: ``name``; ``shows``, what it rebuilds (the command's help); ``uses``, mode ->
    the options it reads; ``module``, the module of ``mi_plateau.reproduce`` with its ``dry_run``
    and ``run``; a sweep recipe's ``builder`` ("module.function" under ``mi_plateau.reproduce``)
    and ``reads`` (keyword -> another sweep recipe whose runs the builder also reads)."""

    name: str
    shows: str
    builder: str | None = None
    uses: dict[str, str] = field(default_factory=lambda: SWEEP_USES)
    module: str = "sweeps"
    reads: dict[str, str] = field(default_factory=dict)

    @property
    def is_sweep(self) -> bool:
        return self.builder is not None

    def code(self):
        return importlib.import_module(f"{__package__}.{self.module}")

    def dry_run(self, options: RunOptions) -> DryRun:
        return self.code().dry_run(self, options)

    def run(self, options: RunOptions) -> dict[str, Any]:
        if options.threads is not None:  # torch's threads here (devices imports torch: only when asked)
            from ..devices import use_threads

            use_threads(options.threads)
        return self.code().run(self, options)

    def build_function(self):
        """A sweep recipe's builder: build(collected, sweep, n_boot, seed, **reads) -> ``writer.Built``."""
        module, name = self.builder.rsplit(".", 1)
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def shipped_sweep_recipes() -> list[Recipe]:
    """The sweep recipes: every sweep file of ``mi_plateau/sweeps/recipes/`` with a ``[recipe]``
    table (``shows``, ``builder``, optionally ``reads``), named by its file, in file-name order.
    The file is the whole declaration: a new sweep recipe is its file and its builder."""
    out = []
    for path in sorted(SHIPPED.glob("*.toml")):
        table = tomllib.loads(path.read_text()).get("recipe")
        if table:
            out.append(Recipe(path.stem, table["shows"], table["builder"], reads=dict(table.get("reads", {}))))
    return out


RECIPES = {
    r.name: r
    for r in (
        Recipe(
            "core",
            "the per-run reproduction",
            uses={
                "": "device threads jobs progress root docs static",
                "--no-train": "train device threads progress root docs static",
                "--dry-run": "dry_run root",
            },
            module="core",
        ),
        *shipped_sweep_recipes(),
        Recipe(
            "hessian",
            "Table 10, the Hessian pass over the K sweep's runs at K = 3, 5, 10, 20 and 36",
            uses={  # the pass itself runs on the CPU: --device is where the K sweep trains
                "": "device threads jobs only progress root docs static",
                "--no-train": "train threads only progress root docs static",
                "--dry-run": "dry_run only root docs",
            },
            module="hessian",
        ),
        Recipe(
            "figure3",
            "Figure 3 and the ~50% lead as the paper computed them, over the K sweep's runs",
            uses={"": "device threads progress root docs static", "--dry-run": "dry_run root"},  # trains nothing
            module="figure3",
        ),
        Recipe(
            "noise_estimator",
            "Figure 2b's p = 0.2 crossing under the original's 32-sample estimator, over replays on "
            "docs/sweeps/noise_f2b.toml's runs",
            uses={"": "threads progress root docs static", "--dry-run": "dry_run root"},  # trains nothing
            module="noise_estimator",
        ),
        Recipe(
            "controls",
            "Table 12, every tested mechanism beside the paper's, read from the other recipes' committed tables",
            uses=FROM_TABLES,
            module="pages",
        ),
        Recipe(
            "scorecard",
            "docs/scorecard.md, each of the paper's tables, figures and claims beside ours, read from the "
            "committed tables",
            uses=FROM_TABLES,
            module="pages",
        ),
    )
}
SWEEP_RECIPES = tuple(name for name, r in RECIPES.items() if r.is_sweep)


def recipe(name: str) -> Recipe:
    """The recipe ``name`` of ``RECIPES``."""
    if name not in RECIPES:
        raise ValueError(f"reproduce: no recipe named {name!r}")
    return RECIPES[name]


def help_text() -> str:
    """What each recipe rebuilds, in ``RECIPES``' order, neighbours that rebuild the same
    artifact under one entry ("fixed_d, fixed_d_noclip: Figure 5")."""
    groups: list[tuple[list[str], str]] = []
    for r in RECIPES.values():
        if groups and groups[-1][1] == r.shows:
            groups[-1][0].append(r.name)
        else:
            groups.append(([r.name], r.shows))
    return "; ".join(f"{', '.join(names)}: {shows}" for names, shows in groups)
