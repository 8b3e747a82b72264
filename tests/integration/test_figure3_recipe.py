"""``reproduce figure3``: the lead and the displacement cosine over the K sweep's runs, written as
tables and a log, rebuilt from the log alone where the run folders are gone."""

import json
import shutil

import pytest
from conftest import fake_export, stub_svg

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.config import RunOptions
from mi_plateau.passes.lead import original_onsets, original_series, original_tau, z_onsets
from mi_plateau.reproduce import figure3 as recipe


@pytest.fixture
def placed(tmp_path, tiny_run):
    root = tmp_path / "checkpoints"
    shutil.copytree(tiny_run.path, root / recipe.SWEEP / "K4_seed0")
    return root, tmp_path / "docs", tmp_path / "analyses"


def test_the_recipe_writes_the_lead_and_rebuilds_from_its_log(placed, tmp_path, monkeypatch):
    root, docs, analyses = placed
    fake_export(monkeypatch, stub_svg)
    monkeypatch.setattr(recipe, "DESCENT_KS", (4,))  # the tiny run gets Figure 3(b) too
    log = recipe.run_figure3_recipe(RunOptions(root=root, docs=docs, progress=False), analyses=analyses, delta=20)
    lead = json.loads((docs / "figure3_lead.json").read_text())
    ck = json.loads((docs / recipe.LOG).read_text())["runs"]["K4_seed0"]
    assert [r["K"] for r in lead] == [4] and lead[0]["loss_onset"] == ck["onsets"]["loss_onset"]
    # the original's quantity: the series of the run's records, its onsets recomputed from them
    run = Run(root / recipe.SWEEP / "K4_seed0")
    assert ck["a_original"] == original_series(run.records(), 4) and ck["a_original"]
    on = original_onsets(ck["a_original"], 4)
    assert lead[0]["loss_onset_original"] == on["loss_onset"] and lead[0]["z_onset_original_0.1"] == on["z_onset_0.1"]
    # ours: the onsets are those of the passes' own checkpoint rows
    from mi_plateau.passes.analyze import PassConfig, analyze_run

    rows = analyze_run(run, tmp_path / "again", PassConfig(), progress=False, heavy=False)
    assert ck["onsets"] == z_onsets(rows["checkpoint"], 4)
    d = json.loads((docs / "figure3_descent.json").read_text())
    assert d[0]["source"] == recipe.REFERENCE_SOURCE and "not found" in d[0]["note"]  # no reference under docs
    assert d[1]["K"] == 4 and d[1]["tau"] == original_tau(ck["a_original"], 4)
    assert d[1]["note"] is not None or d[1]["grid_end"] > 0
    assert {"figure3a.svg", "figure3b.svg"} <= {p.split("/")[-1] for p in log["written"]}
    s = json.loads((docs / "figure3_lead_summary.json").read_text())
    assert [(r["quantity"], r["gap"]) for r in s] == [(q, g) for q in ("original", "ours (Lc)") for g in (0.1, 0.05)]
    assert s[0]["paper_mean_lead_frac"] == 0.5
    before = {f: (docs / f).read_text() for f in ("figure3_lead.md", "figure3_descent.md", "figure3_lead_summary.md")}
    shutil.rmtree(root)  # the log alone rebuilds every table
    recipe.run_figure3_recipe(RunOptions(root=root, docs=docs, progress=False), analyses=analyses, delta=20)
    assert {f: (docs / f).read_text() for f in before} == before


def test_no_run_and_no_log_is_one_line(tmp_path, run_cli):
    p = run_cli("reproduce", "figure3", "--root", str(tmp_path / "ck"), "--docs", str(tmp_path / "docs"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no K-sweep run here" in p.stderr
    with pytest.raises(RunError, match="no K-sweep run"):
        recipe.run_figure3_recipe(
            RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs", progress=False), analyses=tmp_path / "an"
        )


def test_the_lead_sweeps_run_of_a_k_replaces_the_k_sweeps(tmp_path, tiny_run):
    root = tmp_path / "checkpoints"
    for sweep, name in ((recipe.SWEEP, "K4_seed0"), (recipe.SWEEP, "K6_seed0"), (recipe.LEAD_SWEEP, "K4_seed0")):
        shutil.copytree(tiny_run.path, root / sweep / name)
    assert recipe.sweep_runs(root) == [root / recipe.LEAD_SWEEP / "K4_seed0", root / recipe.SWEEP / "K6_seed0"]
