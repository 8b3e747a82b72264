"""Every committed doc table against its rebuild from the committed recipe logs.

A recipe's log (``docs/reproduction/<sweep>_log.json`` for a sweep recipe; its own for a pass over
another recipe's runs: ``paper_hessian_log.json``, ``figure3_log.json``,
``noise_estimator_log.json``) records every run's row, config and curves, or every run's pass,
so ``mi-plateau reproduce NAME --no-train`` rebuilds the recipe's tables on any machine. Here every
recipe of the registry (``reproduce.registry.RECIPES``, less those of ``NOT_FROM_A_LOG``) is
rebuilt that way into a temporary docs folder holding a copy of the committed logs (and the
original code's reference data), with an empty run root (every row comes from the logs), and
every table it writes (.md, .csv, .json) must equal the committed file of the same name: a doc
table cannot drift from its data, and a recipe added to the registry is compared without an edit
here. Figures are not compared (their SVG depends on the plotly and kaleido versions) and not
exported: the static export (Chromium) is most of a rebuild's time, so it is replaced by a no-op;
the tables and the sweep page are written as the command writes them. Regenerate the committed
tables the same way, from the logs alone: ``mi-plateau reproduce NAME --no-train --root
EMPTY_FOLDER`` (with the run folders present, a row reads ``source`` "here").

Markdown is compared as text (it prints 3 significant digits). JSON and CSV are compared cell by
cell, numbers to a relative 1e-9: a fit's least squares (numpy's LAPACK) rounds differently on
another CPU in the 15th digit, which is not a drift of the table from its data. A recipe whose
committed tables are stale (written by an older version of the code) is a strict xfail naming why;
it flips to a failure once the docs are regenerated, and then its mark goes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from conftest import fake_export

import mi_plateau.scorecard.controls as controls
from mi_plateau.reproduce import RECIPES
from mi_plateau.sweeps import RunOptions

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproduction"
REPO = DOCS.parents[1]
TABLE_SUFFIXES = (".md", ".csv", ".json")
REFERENCE = "reference"  # the original code's own runs (figure3 reads them beside its log)

# recipes that do not rebuild from a log of their own, and why
NOT_FROM_A_LOG = {
    "core": "one tables.md of five sections, no CSV: rebuilt from its log (recipe_log.json) by "
    "test_reproduce.py::test_core_rebuilds_its_tables_from_its_log_alone",
    "controls": "read off the other committed tables (test_table12_equals_its_rebuild_from_the_committed_tables)",
    "scorecard": "read off the other committed tables (test_scorecard.py)",
}
FROM_LOGS = [name for name in RECIPES if name not in NOT_FROM_A_LOG]
# tables the measurement scripts under analyses/ build from their own committed logs
# (``python analyses/<script>.py --build``): script -> its tables
SCRIPT_TABLES = {
    "coverage": ("coverage", "coverage_rows"),
    "eval_precision": ("eval_precision",),
    "eval_share": ("eval_share",),
    "precision_check": ("precision_check", "precision_check_runs"),
    "seeds_tables": ("seeds_tables",),
    "unrun": ("unrun",),
}
# tables read off other committed tables (``reproduce controls``; ``reproduce scorecard``, compared in
# test_scorecard.py): rebuilt from the committed files
DERIVED_TABLES = (controls.STEM, "scorecard", "scorecard_points")

# committed tables that no recipe log rebuilds, and why
NOT_FROM_LOGS = {
    "tables": "`mi-plateau reproduce core`: rebuilt from recipe_log.json in test_reproduce.py",
    "linear_control": "`mi-plateau linear-control`: trains the linear control",
    "llc_calibration_tiny": "`mi-plateau llc RUN --calibrate --out FILE`: samples a run's checkpoints",
    "llc_K10": "`mi-plateau llc RUN --n 6 --out FILE`: samples a run's checkpoints",
    "settle_run_K10": "`mi-plateau summary RUN --json` after training: the run's settled summary and costs",
    "settle_run_K30": "`mi-plateau summary RUN --json` after training: the run's settled summary and costs",
    "settle_check_K10": "`mi-plateau summary RUN --exact-check --json`: scores a run's checkpoints",
    "settle_asked_K10": "`mi-plateau summary RUN --tau-at 0.25 --width-at 0.9,0.1 --json`: settles a run",
    "settle_asked_K10_s0": "`mi-plateau settle RUN --alpha 0.35 --width 0.9 0.1 --json`: settles a run",
    "plateau_run_K10_lr0.007_seed42": "`mi-plateau summary RUN --json`: a run's summary and costs",
    "spacing_check_phase_boundary_K5": "`mi-plateau summary RUN --spacing-check 3200 --json`: a run's records",
    "spacing_check_lr_sweep_K20": "`mi-plateau summary RUN --spacing-check 3200 --json`: a run's records",
    "spacing_check_k_sweep_K17": "`mi-plateau summary RUN --spacing-check 3200 --json`: a run's records",
    "sampled_width_phase_boundary_K5_seed42": "`mi-plateau summary RUN --sampled-width --json`: scores a run",
    "sampled_width_phase_boundary_K5_seed123": "`mi-plateau summary RUN --sampled-width --json`: scores a run",
    "sampled_width_phase_boundary_K5_seed7": "`mi-plateau summary RUN --sampled-width --json`: scores a run",
    "sampled_width_phase_boundary_K10_lr0.003_seed42": "`mi-plateau summary RUN --sampled-width --json`: scores a run",
    "sampled_width_phase_boundary_K5": "`mi-plateau sampled-pairs FILES --out FILE` (the three above)",
    "label_noise_split": "`mi-plateau noise-split RUNS --out FILE`: scores the label-noise runs",
    "threads_K5": "two trainings of one config on one and two threads (the commands are in the file)",
}
# committed logs that no table here is rebuilt from, and why
LOGS_WITHOUT_TABLES = {
    "recipe_log.json": "the core recipe's log: tables.md is rebuilt from it in test_reproduce.py",
}

# recipe -> why its committed tables are known to differ from their rebuild (a strict xfail)
STALE: dict[str, str] = {}


def _mark(reason: str | None):
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """``rebuilt(recipe)``: (the docs folder of the recipe's ``--no-train`` rebuild from the
    committed logs, the files the rebuild wrote there), one rebuild per recipe."""
    done: dict[str, tuple[Path, set[str]]] = {}

    def rebuild(recipe: str) -> tuple[Path, set[str]]:
        if recipe not in done:
            tmp = tmp_path_factory.mktemp(recipe)
            docs = tmp / "docs"
            docs.mkdir()
            for log in DOCS.glob("*_log.json"):
                shutil.copy(log, docs)
            shutil.copytree(DOCS / REFERENCE, docs / REFERENCE)
            before = {p.name: p.stat().st_ino for p in docs.iterdir()}
            with pytest.MonkeyPatch.context() as mp:
                fake_export(mp)
                mp.chdir(tmp)  # the sweep page and the passes' caches go under tmp/analyses
                RECIPES[recipe].run(RunOptions(train=False, progress=False, root=tmp / "checkpoints", docs=docs))
            # a file written is a new one (every writer writes a temporary file and renames it)
            written = {p.name for p in docs.iterdir() if p.is_file() and before.get(p.name) != p.stat().st_ino}
            done[recipe] = docs, written
        return done[recipe]

    return rebuild


def _tables(written: set[str]) -> set[str]:
    """The table stems among the files ``written`` (each .md, .csv, .json; logs left out)."""
    return {Path(n).stem for n in written if Path(n).suffix in TABLE_SUFFIXES and not n.endswith("_log.json")}


@pytest.mark.parametrize("recipe", [pytest.param(r, marks=_mark(STALE.get(r))) for r in FROM_LOGS])
def test_committed_tables_equal_their_rebuild(rebuilt, recipe):
    docs, written = rebuilt(recipe)
    stems = _tables(written)
    assert stems, f"{recipe}: the rebuild wrote no table"
    for stem in stems:
        assert {f"{stem}{x}" for x in TABLE_SUFFIXES} <= written, f"{stem}: not written as .md, .csv and .json"
    _equal_committed(docs, sorted(stems))


def _csv_cells(text: str) -> list[list]:
    """A CSV's cells, numbers parsed."""

    def cell(c: str):
        try:
            return float(c)
        except ValueError:
            return c

    return [[cell(c) for c in row] for row in csv.reader(io.StringIO(text))]


def _same(a, b) -> bool:
    """Equal structures, numbers to a relative 1e-9 (and bools, strings, None exactly)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        return a == b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (a != a and b != b)


def test_every_committed_table_and_log_is_accounted_for(rebuilt):
    """Each committed table is written by a recipe's rebuild, a script's or read off the other
    tables, or named in NOT_FROM_LOGS; each committed log is rewritten by a recipe's rebuild, is a
    script's, or is named in LOGS_WITHOUT_TABLES."""
    written = set().union(*(rebuilt(r)[1] for r in FROM_LOGS))
    tables = {p.stem for p in DOCS.iterdir() if p.suffix in TABLE_SUFFIXES and not p.name.endswith("_log.json")}
    others = {s for group in (*SCRIPT_TABLES.values(), DERIVED_TABLES) for s in group}
    assert tables == _tables(written) | others | set(NOT_FROM_LOGS)
    logs = {p.name for p in DOCS.glob("*_log.json")}
    scripts = {f"{s}_log.json" for s in SCRIPT_TABLES}
    assert logs - {n for n in written if n.endswith("_log.json")} - scripts == set(LOGS_WITHOUT_TABLES)


def _equal_committed(docs: Path, stems) -> None:
    """Each table ``stems`` names under ``docs`` equals the committed one (rows; CSV cells; Markdown)."""
    for stem in stems:
        for suffix in TABLE_SUFFIXES:
            ours, committed = (docs / f"{stem}{suffix}").read_text(), (DOCS / f"{stem}{suffix}").read_text()
            if suffix == ".json":
                assert _same(json.loads(ours), json.loads(committed)), f"{stem}{suffix}: the rebuild's rows differ"
            elif suffix == ".csv":
                assert _same(_csv_cells(ours), _csv_cells(committed)), f"{stem}{suffix}: the rebuild differs"
            else:
                assert ours == committed, f"{stem}{suffix}: the rebuild differs from the committed file"


def test_table12_equals_its_rebuild_from_the_committed_tables(tmp_path):
    """Table 12 reads the other committed tables: rebuilt from them (into another folder), it
    equals the committed file, so it cannot lag behind a table it quotes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in controls.SOURCES:
        if (DOCS / name).exists():
            shutil.copy(DOCS / name, docs)
    controls.write_controls(docs)
    for suffix in TABLE_SUFFIXES:
        ours, committed = (
            (docs / f"{controls.STEM}{suffix}").read_text(),
            (DOCS / f"{controls.STEM}{suffix}").read_text(),
        )
        assert ours == committed, f"{controls.STEM}{suffix}: the rebuild differs (run `mi-plateau reproduce controls`)"


@pytest.mark.parametrize("script", sorted(SCRIPT_TABLES))
def test_a_measurement_scripts_tables_rebuild_from_its_log(tmp_path, script):
    """``python analyses/SCRIPT.py --build`` beside a copy of the committed log writes the committed tables."""
    import shutil
    import subprocess
    import sys

    shutil.copy(DOCS / f"{script}_log.json", tmp_path)
    env = {**os.environ, "MI_PLATEAU_DOCS": str(tmp_path)}
    p = subprocess.run([sys.executable, str(REPO / "analyses" / f"{script}.py"), "--build"], env=env,
                       capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 0, p.stderr
    _equal_committed(tmp_path, SCRIPT_TABLES[script])
