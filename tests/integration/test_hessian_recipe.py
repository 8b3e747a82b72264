"""``reproduce hessian`` (Table 10 as a recipe) on a tiny run placed where the K sweep's K = 3 run
lives: the pass's rows go into the log with what they came from, a second call computes nothing,
a rebuild from the log alone writes the same tables, and changed settings are recomputed."""

import json
import math
import shutil

import numpy as np
import pytest
from conftest import fake_export

import mi_plateau.reproduce.hessian as recipe
from mi_plateau.checkpoints import Run, RunError
from mi_plateau.estimators.hessian import plateau_checkpoints
from mi_plateau.settle import run_summary
from mi_plateau.sweeps import RunOptions

SMALL = {"n_examples": 16, "seed": 0, "k": 1, "tol": 1e-3, "dtype": "float64", "maxiter": 100}
STEMS = ("table10", "table10_checkpoints")


def fake_pass(run, steps, *, estimators=("original_power", "lanczos"), progress=False, **kw):
    """A stand-in for ``hessian_pass`` with its columns and values that follow the step (the pass
    itself is tested in test_hessian_run): the recipe's bookkeeping in seconds."""
    from mi_plateau.frames import frame

    tau = run_summary(run)["definitions"]["paper"]["tau"]
    rows = []
    for s in steps:
        for e in estimators:
            top, bottom = 1.0 + s / 100, -0.5 - s / 1000 - (e == "lanczos")
            rows.append(
                {
                    "run": run.name,
                    "K": run.config().task.K,
                    "tau": tau,
                    "step": s,
                    "t_over_tau": s / tau,
                    "loss": 1.0,
                    "estimator": e,
                    "lambda_max": top,
                    "lambda_min": bottom,
                    "anisotropy": abs(top / bottom),
                    "residual_max": 1e-5,
                    "residual_min": math.inf if s == steps[-1] else 1e-5,
                    "tol": kw["tol"],
                    "converged": s != steps[-1],
                    "n_hvp": 10,
                    "seconds": 0.5,
                }
            )
    return frame(rows)


@pytest.fixture
def placed(tmp_path, tiny_run, monkeypatch):
    """A root with the tiny run as the K sweep's K3_seed0, and a docs folder; figures not exported."""
    root = tmp_path / "checkpoints"
    shutil.copytree(tiny_run.path if isinstance(tiny_run, Run) else tiny_run, root / "paper_k_sweep" / "K3_seed0")
    fake_export(monkeypatch)
    monkeypatch.setattr(recipe, "hessian_pass", fake_pass)
    return root, tmp_path / "docs"


def _tables(docs):
    return {f"{s}{x}": (docs / f"{s}{x}").read_text() for s in STEMS for x in (".md", ".csv", ".json")}


def test_the_pass_is_kept_in_the_log_and_rebuilt_from_it(placed, tmp_path, monkeypatch):
    root, docs = placed
    recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=root, docs=docs), settings=SMALL)
    log = json.loads((docs / recipe.LOG).read_text())
    run = Run(root / "paper_k_sweep" / "K3_seed0")
    tau = run_summary(run)["definitions"]["paper"]["tau"]
    entry = log["runs"]["K3_seed0"]
    plateau = plateau_checkpoints(run.steps(), tau)
    rows = entry["rows"]
    assert sorted({r["step"] for r in rows if r["role"] == "plateau"}) == plateau
    assert {(r["role"], r["estimator"]) for r in rows} == {
        ("plateau", "original_power"),
        ("plateau", "lanczos"),
        ("across", "lanczos"),
    }
    across = sorted({r["step"] for r in rows if r["role"] == "across"})
    assert run.steps()[0] in across and run.steps()[-1] in across and not set(across) & set(plateau)
    assert entry["weights_sha256"] == {str(s): h for s, h in sorted(run.weights_sha256(plateau + across).items())}

    assert any(r["residual_min"] is None for r in rows)  # an infinite residual: JSON's None in the log
    t10 = {r["run"]: r for r in json.loads((docs / "table10.json").read_text())}
    assert set(t10) == set(recipe.run_names()) and t10["K5_seed0"]["status"] == "not computed"
    assert t10["K5_seed0"]["paper_anisotropy"] == 11700  # the paper's row beside an empty one
    lz = [r["anisotropy"] for r in rows if r["role"] == "plateau" and r["estimator"] == "lanczos"]
    mine = t10["K3_seed0"]
    assert mine["status"] == "computed" and mine["K"] == 4  # the tiny run's own K
    assert math.isclose(mine["anisotropy_lanczos"], float(np.mean(lz)))
    assert mine["all_converged_lanczos"] is False  # the last plateau checkpoint's pair did not converge
    first = _tables(docs)

    def refuse(*a, **k):  # noqa: ARG001
        raise AssertionError("the pass ran again")

    monkeypatch.setattr(recipe, "hessian_pass", refuse)
    recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=root, docs=docs), settings=SMALL)
    assert _tables(docs) == first  # nothing recomputed, the same tables

    elsewhere = tmp_path / "elsewhere"  # another machine: the log alone, no run folders
    elsewhere.mkdir()
    shutil.copy(docs / recipe.LOG, elsewhere)
    recipe.run_hessian_recipe(
        RunOptions(train=False, progress=False, root=tmp_path / "empty", docs=elsewhere), settings=SMALL
    )
    assert _tables(elsewhere) == first

    with pytest.raises(AssertionError, match="ran again"):  # other settings: computed anew
        recipe.run_hessian_recipe(
            RunOptions(train=False, progress=False, root=root, docs=docs), settings={**SMALL, "seed": 1}
        )


def test_rows_another_process_wrote_are_kept_and_other_settings_are_left_out(placed):
    root, docs = placed
    recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=root, docs=docs), settings=SMALL)
    log = json.loads((docs / recipe.LOG).read_text())
    k3 = log["runs"]["K3_seed0"]
    # another process's run (its rows, renamed), and a run computed with other settings
    log["runs"]["K5_seed0"] = {**k3, "rows": [{**r, "run": "K5_seed0", "K": 5} for r in k3["rows"]]}
    log["runs"]["K10_seed0"] = {**k3, "settings": {**SMALL, "seed": 7}, "rows": [{**r, "K": 10} for r in k3["rows"]]}
    (docs / recipe.LOG).write_text(json.dumps(log))
    out = recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=root, docs=docs), settings=SMALL)
    t10 = {r["run"]: r for r in out["tables"]["Table 10"]}
    assert t10["K5_seed0"]["status"] == "computed" and t10["K5_seed0"]["K"] == 5
    assert t10["K10_seed0"]["status"] == "other settings" and "anisotropy_lanczos" not in t10["K10_seed0"]
    assert {r["K"] for r in out["tables"]["Table 10 checkpoints"]} == {4, 5}  # not the other settings' rows
    assert set(json.loads((docs / recipe.LOG).read_text())["runs"]) == {"K3_seed0", "K5_seed0", "K10_seed0"}


def test_a_log_without_rows_is_refused_and_left_as_it_was(placed):
    root, docs = placed
    docs.mkdir()
    bad = {"runs": {"K3_seed0": {"settings": SMALL}}}  # an entry without its rows
    (docs / recipe.LOG).write_text(json.dumps(bad))
    with pytest.raises(RunError, match="not the hessian recipe's log"):
        recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=root, docs=docs), settings=SMALL)
    assert json.loads((docs / recipe.LOG).read_text()) == bad


def test_a_rebuild_with_nothing_to_read_and_an_unknown_run_are_refused(tmp_path):
    with pytest.raises(RunError, match="no finished run of Table 10"):
        recipe.run_hessian_recipe(RunOptions(train=False, progress=False, root=tmp_path / "c", docs=tmp_path / "d"))
    with pytest.raises(RunError, match="not a run of Table 10"):
        recipe.run_names(["K4_seed0"])
    assert not (tmp_path / "d" / recipe.LOG).exists()


@pytest.mark.long  # the real pass at eight checkpoints: CI's second step
def test_the_recipe_with_the_real_pass(tiny_run, tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    shutil.copytree(tiny_run.path if isinstance(tiny_run, Run) else tiny_run, root / "paper_k_sweep" / "K3_seed0")
    fake_export(monkeypatch)
    log = recipe.run_hessian_recipe(
        RunOptions(train=False, progress=False, root=root, docs=tmp_path / "d"), settings=SMALL
    )
    rows = json.loads((tmp_path / "d" / recipe.LOG).read_text())["runs"]["K3_seed0"]["rows"]
    lz = [r for r in rows if r["estimator"] == "lanczos"]
    assert all(r["converged"] for r in lz) and all(r["lambda_max"] >= r["lambda_min"] for r in lz)
    (mine,) = [r for r in log["tables"]["Table 10"] if r["run"] == "K3_seed0"]
    assert mine["all_converged_lanczos"] and mine["anisotropy_lanczos_min"] <= mine["anisotropy_lanczos"]
