"""Every committed doc table against its rebuild from the committed recipe logs.

A sweep recipe's log (``docs/reproduction/<sweep>_log.json``) records every run's row, config
and curves, so ``mi-plateau reproduce NAME --no-train`` rebuilds the recipe's tables on any
machine. Here each recipe is rebuilt that way into a temporary docs folder holding only a copy
of its log, with an empty run root (every row comes from the log's records), and every table it
writes (.md, .csv, .json) must equal the committed file of the same name: a doc table cannot
drift from its data. Figures are not compared (their SVG depends on the plotly and kaleido
versions) and not exported: the static export (Chromium) is most of a rebuild's time, so it is
replaced by a no-op; the tables and the sweep page are written as the command writes them.
Regenerate the committed tables the same way, from the logs alone: ``mi-plateau reproduce NAME
--no-train --root EMPTY_FOLDER`` (with the run folders present, a row reads ``source`` "here").

Markdown is compared as text (it prints 3 significant digits). JSON and CSV are compared cell by
cell, numbers to a relative 1e-9: a fit's least squares (numpy's LAPACK) rounds differently on
another CPU in the 15th digit, which is not a drift of the table from its data. A table whose
committed file is stale (written by an older version of the code) is a strict xfail naming why;
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

import mi_plateau.reproduce.figure3 as figure3
import mi_plateau.reproduce.hessian as hessian
import mi_plateau.reproduce.noise_estimator as noise_estimator
import mi_plateau.scorecard.controls as controls
from mi_plateau.reproduce.shipped import recipe_sweep
from mi_plateau.reproduce.sweeps import run_sweep_recipe
from mi_plateau.sweeps import RunOptions

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproduction"
REPO = DOCS.parents[1]
TABLE_SUFFIXES = (".md", ".csv", ".json")

# recipe -> the tables its rebuild writes (file stems under docs/reproduction/, each .md, .csv, .json)
TABLES = {
    "k_sweep": ("table3", "table3_fit", "table5"),
    "fixed_d": ("fixed_d", "fixed_d_fit"),
    "fixed_d_noclip": ("fixed_d_noclip", "fixed_d_noclip_fit"),
    "len_z": ("table7",),
    "batch_size": ("table1",),
    "batch_size_noclip": ("table1_noclip",),
    "seeds_init": ("seeds_init", "seeds_init_boundary", "seeds_init_vs_fixed"),
    "seeds_warmup": ("seeds_warmup", "seeds_warmup_boundary"),
    "lr_sweep": ("lr_sweep", "lr_sweep_ratio"),
    "direction": ("table2",),
    "phase_boundary": ("phase_boundary_runs", "phase_boundary_table4", "phase_boundary_table8"),
    "dissipation": ("table11",),
    "label_noise": ("label_noise",),
    "selector_groups": ("table12_cancellation_runs", "table12_cancellation", "table12_beta"),
}
# pass recipes (a pass over another recipe's runs, its rows kept in a log of its own) -> their tables
PASS_TABLES = {
    "hessian": ("table10", "table10_checkpoints"),
    "figure3": ("figure3_lead", "figure3_lead_summary", "figure3_descent"),
    "noise_estimator": ("label_noise_estimator",),
}
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
# the other recipes whose logs a rebuild reads: seeds_init sets the fixed-init runs beside its own
ALSO_READS = {"seeds_init": ("seeds_warmup",)}

# committed tables that no recipe log rebuilds, and why
NOT_FROM_LOGS = {
    "tables": "`mi-plateau reproduce core`: analyses of run folders, no recipe log",
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
    "recipe_log.json": "the core recipe's log: summaries, no records to rebuild from",
}

# (recipe, table) -> why the committed file is known to differ from its rebuild (a strict xfail)
STALE: dict[tuple[str, str], str] = {}
# recipes that cannot be rebuilt here at all: why
NO_REBUILD: dict[str, str] = {}


def _mark(reason: str | None):
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _log(recipe: str) -> Path:
    return DOCS / f"{recipe_sweep(recipe).name}_log.json"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """``rebuilt(recipe)``: the docs folder of the recipe's ``--no-train`` rebuild from its
    committed log (one rebuild per recipe, shared by its tables)."""
    done: dict[str, Path] = {}

    def rebuild(recipe: str) -> Path:
        if recipe not in done:
            tmp = tmp_path_factory.mktemp(recipe)
            docs = tmp / "docs"
            docs.mkdir()
            for r in (recipe, *ALSO_READS.get(recipe, ())):
                assert _log(r).is_file(), f"{_log(r).name}: not committed"
                shutil.copy(_log(r), docs)
            with pytest.MonkeyPatch.context() as mp:
                fake_export(mp)
                run_sweep_recipe(
                    recipe,
                    RunOptions(train=False, progress=False, root=tmp / "checkpoints", docs=docs),
                    analyses=tmp / "analyses",
                )
            done[recipe] = docs
        return done[recipe]

    return rebuild


@pytest.mark.parametrize(
    "recipe, stem",
    [pytest.param(r, s, id=f"{r}-{s}", marks=_mark(STALE.get((r, s)))) for r, stems in TABLES.items() for s in stems],
)
def test_committed_table_equals_its_rebuild(rebuilt, recipe, stem):
    docs = rebuilt(recipe)
    for suffix in TABLE_SUFFIXES:
        name = f"{stem}{suffix}"
        ours, committed = (docs / name).read_text(), (DOCS / name).read_text()
        if suffix == ".json":
            assert _same(json.loads(ours), json.loads(committed)), (
                f"{name}: the rebuild's rows differ from the committed file's"
            )
        elif suffix == ".csv":
            assert _same(_csv_cells(ours), _csv_cells(committed)), (
                f"{name}: the rebuild differs from the committed file"
            )
        else:
            assert ours == committed, f"{name}: the rebuild differs from the committed file"


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


@pytest.mark.parametrize("recipe", [pytest.param(r, marks=_mark(NO_REBUILD.get(r))) for r in TABLES])
def test_rebuild_writes_the_listed_tables(rebuilt, recipe):
    """A table a builder starts writing is listed (and so compared) here."""
    written = {
        p.name for p in rebuilt(recipe).iterdir() if p.suffix in TABLE_SUFFIXES and not p.name.endswith("_log.json")
    }
    assert written == {f"{s}{x}" for s in TABLES[recipe] for x in TABLE_SUFFIXES}


def test_every_committed_table_and_log_is_accounted_for():
    """Each committed table is compared with its rebuild or named in NOT_FROM_LOGS; each
    committed log is read by a rebuild here or named in LOGS_WITHOUT_TABLES."""
    tables = {p.stem for p in DOCS.iterdir() if p.suffix in TABLE_SUFFIXES and not p.name.endswith("_log.json")}
    stems = (*TABLES.values(), *PASS_TABLES.values(), *SCRIPT_TABLES.values(), DERIVED_TABLES)
    rebuilt = {s for group in stems for s in group}
    assert tables == rebuilt | set(NOT_FROM_LOGS)
    logs = {p.name for p in DOCS.glob("*_log.json")}
    scripts = {f"{s}_log.json" for s in SCRIPT_TABLES}
    assert logs - {_log(r).name for r in TABLES} - {hessian.LOG, figure3.LOG, noise_estimator.LOG} - scripts == set(
        LOGS_WITHOUT_TABLES
    )


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


def test_the_hessian_tables_equal_their_rebuild_from_the_log(tmp_path, monkeypatch):
    """Table 10 from its committed log alone (no run folders): no pass is computed, every table
    equals the committed one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(DOCS / hessian.LOG, docs)
    fake_export(monkeypatch)
    monkeypatch.setattr(hessian, "hessian_pass", None)  # calling it would fail: the rebuild computes nothing
    hessian.run_hessian_recipe(RunOptions(train=False, progress=False, root=tmp_path / "checkpoints", docs=docs))
    _equal_committed(docs, PASS_TABLES["hessian"])


def test_the_figure3_tables_equal_their_rebuild_from_the_log(tmp_path, monkeypatch):
    """Figure 3's lead and descent tables from the committed figure3_log.json and the original
    code's own run (the committed reference data) alone (no run folders): every table equals the
    committed one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(DOCS / figure3.LOG, docs)
    shutil.copytree(DOCS / figure3.REFERENCE, docs / figure3.REFERENCE)
    fake_export(monkeypatch)
    monkeypatch.setattr(figure3, "run_entry", None)  # calling it would fail: the rebuild computes nothing
    figure3.run_figure3_recipe(tmp_path / "checkpoints", docs, tmp_path / "analyses", progress=False)
    _equal_committed(docs, PASS_TABLES["figure3"])


def test_the_noise_estimator_table_equals_its_rebuild_from_the_log(tmp_path, monkeypatch):
    """Figure 2b by the original's estimator from the committed noise_estimator_log.json alone (no
    run folders): the table equals the committed one."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(DOCS / noise_estimator.LOG, docs)
    monkeypatch.setattr(noise_estimator, "run_entry", None)  # calling it would fail: the rebuild computes nothing
    noise_estimator.run_noise_estimator_recipe(tmp_path / "checkpoints", docs, progress=False, static=False)
    _equal_committed(docs, PASS_TABLES["noise_estimator"])


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
