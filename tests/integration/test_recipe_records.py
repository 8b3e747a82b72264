"""A recipe's log keeps its runs: rebuilt on a machine without the run folders, the tables are the
same; a run folder here replaces a record only when it went further; a record whose config is not
the point's is ignored; ``skip_recorded`` trains nothing the log has finished; bad input is one line."""

import json
import shutil

import pytest

from mi_plateau.checkpoints import RunError
from mi_plateau.reproduce import dry_run, run_sweep_recipe
from mi_plateau.reproduce.records import collect
from mi_plateau.sweeps import load_sweep

TINY = """
name = "tiny_rec"
preset = "tiny"
stop = "tau"
[overrides]
max_steps = 600
[[points]]
K = 3
[[points]]
K = 4
[[points]]
K = 5
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A tiny K sweep trained and built once: its run folders and the log the build wrote."""
    root = tmp_path_factory.mktemp("rec")
    f = root / "s.toml"
    f.write_text(TINY)
    sweep = load_sweep(f)
    log = run_sweep_recipe("k_sweep", sweep=sweep, root=root / "ck", docs=root / "docs", analyses=root / "an",
                           n_boot=50, jobs=2, progress=False)
    return sweep, root, log


def _without_folders(recorded, tmp_path):
    """The committed docs on a fresh machine: the log copied, no run folders."""
    sweep, root, _ = recorded
    shutil.copytree(root / "docs", tmp_path / "docs")
    return sweep, tmp_path / "empty", tmp_path / "docs"


def test_a_rebuild_without_the_run_folders_gives_the_same_tables(recorded, tmp_path):
    sweep, root, log = recorded
    assert {r["source"] for r in log["runs"]} == {"here"} and all(r["status"] == "finished" for r in log["runs"])
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    again = run_sweep_recipe("k_sweep", sweep=sweep, root=empty, docs=docs, analyses=tmp_path / "an", n_boot=50,
                             train=False, progress=False)
    assert not empty.exists()  # nothing trained, nothing written among the runs
    assert [r["source"] for r in again["runs"]] == ["recorded"] * 3
    keys = ("run", "K", "D", "tau_paper", "tau_first_token", "plateau_paper", "steps", "status", "wall_s")
    assert [{k: r[k] for k in keys} for r in again["runs"]] == [{k: r[k] for k in keys} for r in log["runs"]]
    # Table 5 needs every run's curve: the log's curves give the same exponents
    assert again["tables"]["Table 5"] == log["tables"]["Table 5"] and again["tables"]["fit"] == log["tables"]["fit"]
    stored = json.loads((docs / f"{sweep.name}_log.json").read_text())
    assert sorted(stored["curves"]) == sorted(p.name for p in sweep.points) and sorted(stored["configs"]) == sorted(stored["curves"])


def test_a_record_with_another_config_is_ignored_and_a_further_run_wins(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    log["configs"]["K3"]["train"]["lr"] = 0.5  # trained with another learning rate: not this point's run
    log["runs"][1]["steps"] = 10 ** 6  # K4's record claims more steps than its folder: the record wins
    path.write_text(json.dumps(log))
    rows = {r["run"]: r for r in collect(sweep, empty, docs)[0]}
    assert rows["K3"]["status"] == "not started" and rows["K3"]["source"] is None
    assert rows["K5"]["source"] == "recorded"
    sweep, root, _ = recorded
    rows = {r["run"]: r for r in collect(sweep, root / "ck", docs)[0]}
    assert rows["K3"]["source"] == "here" and rows["K5"]["source"] == "here"  # finished here: at least as far
    assert rows["K4"]["source"] == "here"  # a finished folder is never replaced
    # a partial run here (K5 cut back to its first two checkpoints) against the finished record
    part = tmp_path / "part" / sweep.name / "K5"
    shutil.copytree(root / "ck" / sweep.name / "K5", part)
    m = json.loads((part / "manifest.json").read_text())
    m["status"], m["checkpoints"] = "running", m["checkpoints"][:2]
    (part / "manifest.json").write_text(json.dumps(m))
    rows = {r["run"]: r for r in collect(sweep, tmp_path / "part", docs)[0]}
    assert rows["K5"]["source"] == "recorded" and rows["K5"]["status"] == "finished"
    assert rows["K5"]["steps"] > m["checkpoints"][-1]["step"]


def test_skip_recorded_trains_nothing_the_log_has_finished(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    rows = dry_run(sweep, root=empty, docs=docs, sec_per_step=0.1, skip_recorded=True)
    assert [r["status"] for r in rows] == ["finished (recorded)"] * 3 and all(r["est_core_min"] == 0 for r in rows)
    assert all(r["est_core_min"] > 0 for r in dry_run(sweep, root=empty, docs=docs, sec_per_step=0.1))
    out = run_sweep_recipe("k_sweep", sweep=sweep, root=empty, docs=docs, analyses=tmp_path / "an", n_boot=50,
                           skip_recorded=True, progress=False)
    assert not any((empty / sweep.name).glob("K*")) and [r["source"] for r in out["runs"]] == ["recorded"] * 3


def test_only_trains_the_named_points_and_refuses_unknown_names(recorded, tmp_path):
    sweep, _, _ = recorded
    with pytest.raises(RunError, match="no point named 'K9'"):
        run_sweep_recipe("k_sweep", sweep=sweep, root=tmp_path / "ck", docs=tmp_path / "docs", only=["K9"], progress=False)
    assert not (tmp_path / "ck" / sweep.name / "K3").exists()


def test_an_unreadable_log_is_refused_before_any_work(recorded, tmp_path):
    sweep, _, _ = recorded
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / f"{sweep.name}_log.json").write_text("[1, 2]")
    with pytest.raises(RunError, match="not a recipe log"):
        run_sweep_recipe("k_sweep", sweep=sweep, root=tmp_path / "ck", docs=tmp_path / "docs", progress=False)
    assert not (tmp_path / "ck").exists() and (tmp_path / "docs" / f"{sweep.name}_log.json").read_text() == "[1, 2]"


def test_the_cli_refuses_only_on_the_core_recipe_and_unknown_points(run_cli):
    p = run_cli("reproduce", "core", "--only", "K3")
    assert p.returncode != 0 and p.stderr.strip().splitlines() == [
        "mi-plateau reproduce: error: reproduce core: --only and --skip-recorded apply to the sweep recipes only"]
    p = run_cli("reproduce", "seeds_warmup", "--dry-run", "--only", "K5_n_b1000_lr0.005_seed0")
    assert p.returncode == 0 and p.stdout.count("K5_n_b1000_lr0.005_seed0") == 1 and "1 runs" in p.stdout
