"""The recipes built from the committed tables, nothing trained: ``controls`` (Table 12, every
tested mechanism beside the paper's) and ``scorecard`` (docs/scorecard.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..scorecard import SOURCES as SCORECARD_SOURCES
from ..scorecard import write_scorecard
from ..scorecard.controls import SOURCES as CONTROLS_SOURCES
from ..scorecard.controls import write_controls
from ..sweeps import RunOptions
from .registry import DOCS, DryRun, Recipe

# recipe -> (the committed artifacts it reads, the function that writes it)
PAGES = {"controls": (CONTROLS_SOURCES, write_controls), "scorecard": (SCORECARD_SOURCES, write_scorecard)}


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    """The committed artifacts the recipe reads and whether each is there."""
    sources, _ = PAGES[r.name]
    return DryRun([{"artifact": s, "present": (Path(o.docs) / s).exists()} for s in sources])


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    """Write the recipe's table from the committed ones under ``o.docs``."""
    _, write = PAGES[r.name]
    if r.name == "scorecard":  # the committed page, and beside the analyses its interactive twin
        report = Path("analyses") / "scorecard.html" if Path(o.docs) == Path(DOCS) else None
        rows, paths = write(o.docs, static=o.static, report=report)
        rows = [{k: row[k] for k in ("artifact", "verdict")} for row in rows]  # the terminal gets the verdicts
    else:
        rows, paths = write(o.docs)
    return {"recipe": r.name, "tables": {r.name: rows}, "written": [str(p) for p in paths]}
