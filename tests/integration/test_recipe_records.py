"""A recipe's log keeps its runs: rebuilt on a machine without the run folders, the tables are the
same; a run folder here replaces a record only when it went further; a record whose config is not
the point's is ignored; ``skip_recorded`` trains nothing the log has finished; bad input is one line."""

import json
import shutil

import pytest

from mi_plateau.checkpoints import RunError, manifest_digest
from mi_plateau.reproduce.cost import dry_run
from mi_plateau.reproduce.records import collect
from mi_plateau.reproduce.sweeps import run_sweep_recipe
from mi_plateau.sweeps import RunOptions, load_sweep, run_sweep

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
    log = run_sweep_recipe(
        "k_sweep",
        RunOptions(root=root / "ck", docs=root / "docs", jobs=2, progress=False),
        sweep=sweep,
        analyses=root / "an",
        n_boot=50,
    )
    return sweep, root, log


def _rounded(x):
    """A table with every float rounded to 10 significant digits, for comparisons."""
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    return x


def _without_folders(recorded, tmp_path):
    """The committed docs on a fresh machine: the log copied, no run folders."""
    sweep, root, _ = recorded
    shutil.copytree(root / "docs", tmp_path / "docs")
    return sweep, tmp_path / "empty", tmp_path / "docs"


def test_a_rebuild_without_the_run_folders_gives_the_same_tables(recorded, tmp_path):
    sweep, root, log = recorded
    assert {r["source"] for r in log["runs"]} == {"here"} and all(r["status"] == "finished" for r in log["runs"])
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    again = run_sweep_recipe(
        "k_sweep",
        RunOptions(root=empty, docs=docs, train=False, progress=False),
        sweep=sweep,
        analyses=tmp_path / "an",
        n_boot=50,
    )
    assert not empty.exists()  # nothing trained, nothing written among the runs
    assert [r["source"] for r in again["runs"]] == ["recorded"] * 3
    keys = ("run", "K", "D", "tau_paper", "tau_first_token", "plateau_paper", "steps", "status", "wall_s")
    assert [{k: r[k] for k in keys} for r in again["runs"]] == [{k: r[k] for k in keys} for r in log["runs"]]
    # Table 5 needs every run's curve: the log's curves give the same exponents
    # (to float rounding: the inputs are equal, and one failure under load was seen in the last
    # digits; suspected, not shown: the BLAS behind the least squares splitting its sums
    # differently from one call to the next, with the threads it has)
    for table in ("Table 5", "fit"):
        assert _rounded(again["tables"][table]) == _rounded(log["tables"][table])
    stored = json.loads((docs / f"{sweep.name}_log.json").read_text())
    assert sorted(stored["records"]) == sorted(p.name for p in sweep.points) and stored["without_curves"] == []
    assert all(r["config"] == p.cfg.to_dict() for p, r in zip(sweep.points, stored["records"].values()))


def test_a_record_with_another_config_is_ignored_and_a_further_run_wins(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    log["records"]["K3"]["config"]["train"]["lr"] = 0.5  # trained with another learning rate: not this point's run
    log["records"]["K4"]["row"]["steps"] = 10**6  # a finished record that claims more steps than its folder
    path.write_text(json.dumps(log))
    rows, _, kept = collect(sweep, empty, docs)
    rows = {r["run"]: r for r in rows}
    assert rows["K3"]["status"] == "not started" and rows["K3"]["source"] is None
    assert rows["K5"]["source"] == "recorded" and rows["K4"]["steps"] == 10**6
    assert kept["records"]["K3"]["config"]["train"]["lr"] == 0.5  # not used, not dropped
    sweep, root, _ = recorded
    rows, _, kept = collect(sweep, root / "ck", docs)
    rows = {r["run"]: r for r in rows}
    assert rows["K3"]["source"] == "here" and rows["K5"]["source"] == "here"  # finished here: at least as far
    assert rows["K4"]["source"] == "recorded"  # the record went further (finished, more steps)
    # the run here replaces the other config's record of its name, which is kept aside
    assert kept["records"]["K3"]["config"]["train"]["lr"] != 0.5
    assert [(s["run"], s["config"]["train"]["lr"]) for s in kept["superseded"]] == [("K3", 0.5)]
    # a partial run here (K5 cut back to its first two checkpoints) against the finished record
    part = tmp_path / "part" / sweep.name / "K5"
    shutil.copytree(root / "ck" / sweep.name / "K5", part)
    m = json.loads((part / "manifest.json").read_text())
    m["status"], m["checkpoints"] = "running", m["checkpoints"][:2]
    m["digest"] = manifest_digest(m)  # as its writer would have committed it at that step
    (part / "manifest.json").write_text(json.dumps(m))
    rows = {r["run"]: r for r in collect(sweep, tmp_path / "part", docs)[0]}
    assert rows["K5"]["source"] == "recorded" and rows["K5"]["status"] == "finished"
    assert rows["K5"]["steps"] > m["checkpoints"][-1]["step"]


def test_skip_recorded_trains_nothing_the_log_has_finished(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    rows = dry_run(sweep, RunOptions(root=empty, docs=docs, skip_recorded=True), sec_per_step=0.1)
    assert [r["status"] for r in rows] == ["finished (recorded)"] * 3 and all(r["est_core_min"] == 0 for r in rows)
    assert all(r["est_core_min"] > 0 for r in dry_run(sweep, RunOptions(root=empty, docs=docs), sec_per_step=0.1))
    out = run_sweep_recipe(
        "k_sweep",
        RunOptions(root=empty, docs=docs, skip_recorded=True, progress=False),
        sweep=sweep,
        analyses=tmp_path / "an",
        n_boot=50,
    )
    assert not any((empty / sweep.name).glob("K*")) and [r["source"] for r in out["runs"]] == ["recorded"] * 3


def test_only_trains_the_named_points_and_refuses_unknown_names(recorded, tmp_path):
    sweep, _, _ = recorded
    with pytest.raises(RunError, match="no point named 'K9'"):
        run_sweep_recipe(
            "k_sweep",
            RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs", only=("K9",), progress=False),
            sweep=sweep,
        )
    assert not (tmp_path / "ck" / sweep.name / "K3").exists()


def test_an_unreadable_log_is_refused_before_any_work(recorded, tmp_path):
    sweep, _, _ = recorded
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / f"{sweep.name}_log.json").write_text("[1, 2]")
    with pytest.raises(RunError, match="not a recipe log"):
        run_sweep_recipe(
            "k_sweep", RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs", progress=False), sweep=sweep
        )
    assert not (tmp_path / "ck").exists() and (tmp_path / "docs" / f"{sweep.name}_log.json").read_text() == "[1, 2]"


def test_the_cli_refuses_only_on_the_core_recipe_unknown_points_and_empty_lists(run_cli, tmp_path):
    def err(*args):
        p = run_cli("reproduce", *args, cwd=tmp_path)  # no checkpoints/ or docs/ here: nothing recorded
        assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        return p.stderr.strip()

    assert err("core", "--only", "K3") == (
        "mi-plateau reproduce: error: reproduce core: --only does not apply "
        "(it applies to: the sweep recipes (a plain run, --dry-run), reproduce hessian)"
    )
    assert "no point named 'K9'" in err("seeds_warmup", "--dry-run", "--only", "K9")
    assert "no point named 'K9'" in err("seeds_warmup", "--only", "K5_n_b1000_lr0.005_seed0,K9")
    assert "the list of points to train is empty" in err("seeds_warmup", "--only", ",")
    assert "reproduce seeds_warmup --no-train: --only does not apply" in err(
        "seeds_warmup", "--no-train", "--only", "K5_n_b1000_lr0.005_seed0"
    )
    assert not any(tmp_path.iterdir())  # refused before any work
    p = run_cli("reproduce", "seeds_warmup", "--dry-run", "--only", "K5_n_b1000_lr0.005_seed0", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.count("K5_n_b1000_lr0.005_seed0") == 1 and "1 runs" in p.stdout


def test_a_raised_cap_keeps_runs_their_rule_stopped_and_reopens_runs_the_cap_stopped(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    log["records"]["K5"]["row"]["steps"] = 600  # as if the old cap (600) had stopped K5
    path.write_text(json.dumps(log))
    f = tmp_path / "raised.toml"
    f.write_text(TINY.replace("max_steps = 600", "max_steps = 1200"))
    raised = load_sweep(f)
    rows = {r["run"]: r for r in collect(raised, empty, docs)[0]}
    assert all(r["source"] == "recorded" for r in rows.values())
    assert rows["K3"]["status"] == "finished" and rows["K4"]["status"] == "finished"  # their tau rule stopped them
    assert rows["K5"]["status"] == "running"  # the cap stopped it: the larger cap continues it
    # another checkpoint-spacing maximum at the same cap: the same runs, each as it was recorded
    f.write_text(TINY.replace("max_steps = 600", 'max_steps = 600\n"train.ckpt_every_max" = 400'))
    spaced = {r["run"]: r for r in collect(load_sweep(f), empty, docs)[0]}
    assert all(r["source"] == "recorded" and r["status"] == "finished" for r in spaced.values())
    f.write_text(TINY.replace("max_steps = 600", "max_steps = 600\nlr = 0.002"))
    other = load_sweep(f)
    assert {r["source"] for r in collect(other, empty, docs)[0]} == {None}  # another lr: not these runs


def test_a_folder_the_old_cap_stopped_reads_as_partial_under_a_raised_cap(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace("max_steps = 600", "max_steps = 60").split("[[points]]\nK = 4")[0])
    capped = load_sweep(f)
    run_sweep(capped, RunOptions(root=tmp_path / "ck", jobs=1, progress=False))
    assert collect(capped, tmp_path / "ck", tmp_path / "docs")[0][0]["status"] == "finished"  # its own cap
    f.write_text(TINY.replace("max_steps = 600", "max_steps = 1200").split("[[points]]\nK = 4")[0])
    (row,) = collect(load_sweep(f), tmp_path / "ck", tmp_path / "docs")[0]
    assert (row["source"], row["status"], row["steps"]) == ("here", "running", 60)  # the raised cap continues it


def test_rows_recorded_before_configs_are_matched_by_name_while_the_recipe_is_unchanged(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    legacy = {"recipe": "k_sweep", "runs": log["runs"]}  # the logs of 2026-12-01 and earlier: rows only
    path.write_text(json.dumps(legacy))
    rows, curves, kept = collect(sweep, empty, docs)
    assert [r["source"] for r in rows] == ["recorded"] * 3 and curves == {}
    assert [r["tau_paper"] for r in rows] == [r["tau_paper"] for r in log["runs"]]
    assert all(kept["records"][r["run"]]["config"] is None for r in rows)  # a config is never invented
    # once a log says which recipe settings it was written with, rows without configs need the same
    path.write_text(
        json.dumps(legacy | {"settings": {"preset": "tiny", "stop": "tau", "overrides": {"max_steps": 500}}})
    )
    assert {r["source"] for r in collect(sweep, empty, docs)[0]} == {None}
    with pytest.raises(RunError, match="no run of this recipe has started here or is recorded"):
        run_sweep_recipe(
            "k_sweep",
            RunOptions(root=empty, docs=docs, train=False, progress=False),
            sweep=sweep,
            analyses=tmp_path / "an",
        )
    assert sorted(json.loads(path.read_text())) == ["recipe", "runs", "settings"]  # the refused rebuild wrote nothing


def test_rebuilt_from_rows_only_the_tables_leave_the_numbers_of_runs_without_curves_out(recorded, tmp_path):
    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    path.write_text(json.dumps({"recipe": "k_sweep", "runs": log["runs"]}))
    out = run_sweep_recipe(
        "k_sweep",
        RunOptions(root=empty, docs=docs, train=False, progress=False),
        sweep=sweep,
        analyses=tmp_path / "an",
        n_boot=20,
    )
    assert out["without_curves"] == ["K3", "K4", "K5"]
    assert [r["n"] for r in out["tables"]["Table 5"]] == [0] * 10  # no curve, no tau at another alpha
    # the tables leave the rows' numbers out: nothing committed would recompute them
    assert [(r["run"], r["K"], r["status"], r["tau_paper"]) for r in out["tables"]["Table 3"]] == [
        (r["run"], r["K"], "no curves", None) for r in log["runs"]
    ]
    assert {r["run"]: r["tau_paper"] for r in out["runs"]} == {r["run"]: r["tau_paper"] for r in log["runs"]}
    assert all(r["tau_paper"] for r in log["runs"])  # the log keeps each record whole
    kept = json.loads(path.read_text())["records"]
    assert {n: kept[n]["row"]["tau_paper"] for n in kept} == {r["run"]: r["tau_paper"] for r in log["runs"]}


def test_a_partial_run_here_counts_its_steps_against_a_shorter_partial_record(recorded, tmp_path):
    sweep, root, _ = recorded
    docs = tmp_path / "docs"
    shutil.copytree(root / "docs", docs)
    part = tmp_path / "part" / sweep.name / "K4"
    shutil.copytree(root / "ck" / sweep.name / "K4", part)
    m = json.loads((part / "manifest.json").read_text())
    m["status"], m["checkpoints"] = "running", m["checkpoints"][:3]
    m["digest"] = manifest_digest(m)
    (part / "manifest.json").write_text(json.dumps(m))
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    log["records"]["K4"]["row"].update(status="running", steps=m["checkpoints"][1]["step"])
    path.write_text(json.dumps(log))
    rows = {r["run"]: r for r in collect(sweep, tmp_path / "part", docs)[0]}
    assert rows["K4"]["source"] == "here" and rows["K4"]["steps"] == m["checkpoints"][2]["step"]
    cost = {
        r["run"].rsplit("/", 1)[-1]: r
        for r in dry_run(sweep, RunOptions(root=tmp_path / "part", docs=docs), sec_per_step=0.1)
    }
    assert cost["K4"]["steps_done"] == m["checkpoints"][2]["step"]


@pytest.mark.long  # trains a sweep in worker processes: CI's second step
def test_the_log_is_written_after_every_run(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TINY)
    sweep = load_sweep(f)
    seen = []

    def snapshot():
        log = json.loads((tmp_path / "docs" / f"{sweep.name}_log.json").read_text())
        seen.append(sorted(n for n, r in log["records"].items() if r["row"]["status"] == "finished"))

    from mi_plateau.reproduce.records import write_log

    run_sweep(
        sweep,
        RunOptions(root=tmp_path / "ck", jobs=1, progress=False, only=("K3", "K4")),
        on_done=lambda: (write_log(tmp_path / "docs", sweep, tmp_path / "ck"), snapshot()),
    )
    assert seen == [["K4"], ["K3", "K4"]]  # longest first (by D), and recorded as each one ends


def test_the_cli_reads_the_log_and_runs_from_the_folders_given(run_cli, tmp_path):
    """--docs and --root: the dry run reads the recipe log from --docs (here a copy of the committed
    one) and looks for run folders under --root; nothing is written to either but the probe's
    price cache (``price_probe.CACHE``, under --root)."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "paper_seeds_warmup_log.json"
    docs = tmp_path / "elsewhere" / "docs"
    docs.mkdir(parents=True)
    shutil.copy(committed, docs / committed.name)
    name = "K5_n_b1000_lr0.005_seed0"  # recorded as finished in the committed log
    p = run_cli(
        "reproduce",
        "seeds_warmup",
        "--dry-run",
        "--only",
        name,
        "--root",
        "elsewhere/ck",
        "--docs",
        "elsewhere/docs",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if name in line)
    assert f"elsewhere/ck/paper_seeds_warmup/{name}" in row and "finished (recorded)" in row
    p = run_cli("reproduce", "seeds_warmup", "--dry-run", "--only", name, cwd=tmp_path)  # the defaults: no log there
    assert p.returncode == 0 and "finished (recorded)" not in p.stdout and "not started" in p.stdout
    assert [x.name for x in (tmp_path / "elsewhere" / "ck").iterdir()] == ["probe_cache.json"]
    assert sorted(x.name for x in docs.iterdir()) == [committed.name]


def test_a_failed_figure_export_leaves_every_table_written(tmp_path, monkeypatch):
    """Table 4's builder exported its figure between its two tables: a figure that could not be
    written (the static exporter's browser) lost Table 8."""
    from conftest import fake_export

    def refuse(path, fig, **kw):
        raise RunError(f"{path}: the static export failed")

    fake_export(monkeypatch, refuse)
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy("docs/reproduction/paper_seeds_warmup_log.json", docs)
    with pytest.raises(RunError, match="static export failed"):
        run_sweep_recipe(
            "seeds_warmup",
            RunOptions(train=False, root=tmp_path / "ck", docs=docs, progress=False),
            analyses=tmp_path / "an",
        )
    assert all(
        (docs / f"{stem}.{ext}").exists()
        for stem in ("seeds_warmup", "seeds_warmup_boundary")
        for ext in ("json", "md", "csv")
    )


def test_a_run_retrained_for_its_curves_is_checked_against_its_record(recorded, tmp_path):
    """Records kept without curves are replaced by runs retrained here; the log keeps the check:
    equal where the taus and steps are and the plateaus agree to 1e-4, the difference named
    where they do not; a record that got to another step is not compared."""
    from mi_plateau.reproduce.records import same_run

    sweep, empty, docs = _without_folders(recorded, tmp_path)
    path = docs / f"{sweep.name}_log.json"
    log = json.loads(path.read_text())
    for name in ("K3", "K4"):
        log["records"][name]["curve"] = None  # recorded before the logs kept curves
    log["records"]["K3"]["row"]["plateau_paper"] *= 1 + 3e-5  # evaluation rounding: still the same run
    log["records"]["K4"]["row"]["tau_paper"] += 25  # not the same run, and it stopped later:
    log["records"]["K4"]["row"]["steps"] += 50  # the run here still replaces it (it has the curves)
    path.write_text(json.dumps(log))
    sweep, root, _ = recorded
    _, curves, kept = collect(sweep, root / "ck", docs)
    assert {"K3", "K4", "K5"} <= set(curves)  # the runs here, with their curves, replace the records
    n = json.loads((root / "ck" / sweep.name / "K3" / "command.json").read_text())["torch_threads"]
    threads = [n, n]  # the run's own count (command.json), kept with the record
    assert kept["retrained"]["K3"] == {"equal": True, "differences": {}, "threads": threads}
    k4 = kept["retrained"]["K4"]["differences"]
    assert kept["retrained"]["K4"]["equal"] is False and set(k4) == {"tau_paper", "steps"}
    assert k4["tau_paper"][0] == k4["tau_paper"][1] + 25 and k4["steps"][0] == k4["steps"][1] + 50
    assert "K5" not in kept["retrained"]  # its record had curves: nothing to check
    row = log["records"]["K5"]["row"]
    assert same_run(row, {**row, "plateau_first_token": None})["equal"] is False
    # two finished runs that stopped at different steps differ; a run still going is compared later
    assert same_run(row, {**row, "steps": row["steps"] + 50}) == {
        "equal": False,
        "differences": {"steps": [row["steps"], row["steps"] + 50]},
    }
    pending = same_run(row, {**row, "status": "running", "steps": row["steps"] - 50})
    assert pending["equal"] is None and pending["recorded"] == row
    log["records"]["K5"]["curve"] = None
    log["retrained"] = {"K5": pending}  # written while the run here was still short of the record
    path.write_text(json.dumps(log))
    _, _, kept = collect(sweep, root / "ck", docs)
    assert kept["retrained"]["K5"] == {"equal": True, "differences": {}, "threads": [None, threads[1]]}  # again


def test_only_checks_the_named_points_a_smaller_cap_on_another_run_is_not_refused(recorded, tmp_path):
    """``--only`` with a step cap below a finished run's own: the points left out are not checked
    (their runs stay as they are), the named one trains; naming the other is still refused."""
    sweep, root, _ = recorded
    ck = tmp_path / "ck"
    shutil.copytree(root / "ck" / sweep.name / "K3", ck / sweep.name / "K3")
    before = (ck / sweep.name / "K3" / "manifest.json").read_bytes()
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace("max_steps = 600", "max_steps = 40"))
    small = load_sweep(f)
    run_sweep(small, RunOptions(root=ck, only=("K4",), progress=False))
    assert json.loads((ck / sweep.name / "K4" / "manifest.json").read_text())["status"] == "finished"
    assert (ck / sweep.name / "K3" / "manifest.json").read_bytes() == before
    with pytest.raises(RunError, match="K3: train.max_steps: stored 600, given 40"):
        run_sweep(small, RunOptions(root=ck, only=("K3",), progress=False))


def test_a_run_carried_on_under_another_stopping_rule_is_the_points_run(tmp_path, monkeypatch):
    """The K sweep's point and the lead sweep's run of it train the same weights (they differ in when
    they stop): where the recipe has no folder of its own, the carried-on run is its row, and its
    record in the log keeps it on a machine without the folders."""
    from mi_plateau.config import same_training
    from mi_plateau.reproduce import records

    lead = tmp_path / "lead.toml"
    lead.write_text(
        'name = "tiny_lead"\npreset = "tiny"\nstop = "tau"\n[overrides]\nmax_steps = 600\ntau_on = "first_token"\n'
        '"train.tau_margin" = 1.3\n[[points]]\nK = 3\n'
    )
    run_sweep(load_sweep(lead), RunOptions(root=tmp_path / "ck", jobs=1, progress=False))
    short = tmp_path / "short.toml"
    short.write_text(TINY.replace('"tiny_rec"', '"tiny_short"').split("[[points]]\nK = 4")[0])
    sweep = load_sweep(short)
    assert collect(sweep, tmp_path / "ck", tmp_path / "docs").rows[0]["status"] == "not started"
    monkeypatch.setitem(records.CARRIED_ON, "tiny_short", "tiny_lead")
    (row,) = collect(sweep, tmp_path / "ck", tmp_path / "docs").rows
    own = collect(load_sweep(lead), tmp_path / "ck", tmp_path / "docs").rows[0]
    assert (row["source"], row["carried_on"], row["tau_paper"]) == ("here", "tiny_lead", own["tau_paper"])
    assert row["tau_paper"] is not None
    records.write_log(tmp_path / "docs", sweep, tmp_path / "ck")
    (again,) = collect(sweep, tmp_path / "empty", tmp_path / "docs").rows
    assert (again["source"], again["carried_on"], again["tau_paper"]) == ("recorded", "tiny_lead", row["tau_paper"])
    # another training (a changed learning rate) is not the point's run
    assert not same_training({"train": {"lr": 1e-3, "stop": "tau"}}, {"train": {"lr": 2e-3, "stop": "floor"}})
    assert same_training({"train": {"lr": 1e-3, "stop": "tau"}}, {"train": {"lr": 1e-3, "stop": "floor"}})
