"""What a recipe's builder returns, and the one loop that puts it on disk.

A builder is data in, tables out: from the runs ``records.collect`` gives it returns a ``Built``
(its tables and figure specs, nothing written); ``write_built`` writes every table, then every
figure. The figures go last because the static export (kaleido's Chromium) is the step that
fails under load: a failed export then loses no table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..outputs import write_figures, write_table


@dataclass(frozen=True)
class Table:
    """One table: its rows, the file stem it is written as under the docs folder (``<stem>.md``,
    ``.csv``, ``.json``), the title above it and the note below it in the Markdown, and the
    columns the files leave out (the log and the sweep page keep every column)."""

    stem: str
    rows: list[dict[str, Any]]
    title: str = ""
    note: str = ""
    hide: tuple[str, ...] = ()

    def written_rows(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in self.hide} for r in self.rows]


@dataclass(frozen=True)
class Plot:
    """One figure spec (a plotly figure) and the file stem of its static export (``<stem>.svg``)."""

    stem: str
    fig: Any


@dataclass(frozen=True)
class Built:
    """A builder's output: tables and figures by name (the names the recipe's log and its sweep
    page show), in the order they are written."""

    tables: dict[str, Table]
    figures: dict[str, Plot] = field(default_factory=dict)

    def rows(self) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows by name: what the log records and the sweep page shows."""
        return {name: t.rows for name, t in self.tables.items()}

    def figs(self) -> dict[str, Any]:
        """Every figure by name, for the sweep page."""
        return {name: p.fig for name, p in self.figures.items()}


def write_built(docs: str | Path, built: Built, static: bool | None = None) -> tuple[list[Path], str]:
    """Write every table of ``built`` under ``docs`` (.md, .csv, .json), then every figure
    (.svg; ``static`` as in ``outputs.write_figures``: None exports them where a browser is
    found); returns the paths in the order written and the one-line note of skipped figures."""
    docs = Path(docs)
    written: list[Path] = []
    for t in built.tables.values():
        written += write_table(docs / t.stem, t.written_rows(), title=t.title, note=t.note)
    figs, note = write_figures([(docs / f"{p.stem}.svg", p.fig, {}) for p in built.figures.values()], static)
    return written + figs, note
