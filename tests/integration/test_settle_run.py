"""A run evaluated live on a subset of groups: training never settles, its summary shows each
crossing as an estimate with an interval; ``settle`` makes them exact, and they equal those of the
same checkpoints scored on the full set; a threshold asked later is settled with a few counted
scorings and cached; a run whose weights are gone names what it cannot settle."""

import json
import shutil

import pytest

from mi_plateau.checkpoints import Run
from mi_plateau.checkpoints.settled import SETTLED_FILE
from mi_plateau.config import with_overrides
from mi_plateau.replays.exact_check import exact_check
from mi_plateau.settle import Crossing, Width, run_summary, settle
from mi_plateau.train import train


@pytest.fixture(scope="module")
def live_run(tmp_path_factory, tiny_cfg):
    """The tiny run with L_seq live on 20 of its 48 groups (K = 4: every row of each)."""
    return train(
        with_overrides(tiny_cfg, {"eval.live_groups": 20}), tmp_path_factory.mktemp("live") / "r", progress=False
    )


def test_training_never_settles_and_the_summary_shows_estimates_with_intervals(live_run, tmp_path):
    path = tmp_path / "fresh"
    shutil.copytree(live_run.path, path, ignore=shutil.ignore_patterns(SETTLED_FILE))
    run = Run(path)
    recs = run.manifest()["checkpoints"]
    live = [c["record"]["metrics"] for c in recs]
    assert all(m["groups_scored"] == 20 for m in live)
    assert all(m["L_seq_se"] is None or m["L_seq_se"] > 0 for m in live)  # None: retired once decided low
    assert sum(m["L_seq_se"] is not None for m in live) > len(live) // 2
    s = run.manifest()["summary"]
    assert not s["settlement"]["asked"] and s["settlement"]["scorings_now"] == 0
    est = run_summary(run)
    assert not (path / SETTLED_FILE).exists()  # a summary scores nothing
    for k in ("tau", "t_end"):
        if not est[f"{k}_exact"]:
            assert est[f"{k}_lo"] <= est[k] and (est[f"{k}_hi"] is None or est[k] <= est[f"{k}_hi"])
    # settled: exact, inside the estimate's interval, cached; asked again it scores nothing
    done = run_summary(run, settle=True)
    assert done["settlement"]["exact"] and all(done[f"{k}_exact"] for k in ("tau", "t_start", "t_end", "tau_width"))
    assert est["tau_lo"] <= done["tau"] and (est["tau_hi"] is None or done["tau"] <= est["tau_hi"])
    again = run_summary(run, settle=True)
    assert again["settlement"]["scorings_now"] == 0
    assert run_summary(run)["tau"] == done["tau"] and run_summary(run)["tau_exact"]


def test_every_settled_crossing_equals_the_full_set_one(live_run):
    check = exact_check(Run(live_run.path))
    assert check["all_equal"], check
    assert check["settled_full_sets"] < check["checkpoints_scored"] <= check["checkpoints"]
    assert {c["fraction"] for c in check["crossings"]} == {0.3, 0.4, 0.5, 0.6, 0.7}


def test_a_threshold_asked_after_training_is_settled_with_counted_scorings(tmp_path, live_run, run_cli):
    path = tmp_path / "copy"
    shutil.copytree(live_run.path, path)
    p = run_cli("settle", str(path), "--alpha", "0.45", "--width", "0.9", "0.1", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    asked = {c["question"]: c for c in s["answers"]}
    assert set(asked) == {"tau at 0.45 log K", "width 0.9 -> 0.1 log K"}
    assert s["settlement"]["scorings_now"] >= 0 and s["settlement"]["exact"]
    assert all(asked["width 0.9 -> 0.1 log K"][f"{k}_exact"] for k in ("t_start", "t_end", "tau_width"))
    # asked again: free; and the summary shows the settled answers, labelled exact
    p = run_cli("settle", str(path), "--alpha", "0.45", "--width", "0.9", "0.1", "--json")
    s2 = json.loads(p.stdout)
    assert s2["settlement"]["scorings_now"] == 0
    assert {c["question"]: c for c in s2["answers"]} == asked
    p = run_cli("summary", str(path), "--tau-at", "0.45", "--width-at", "0.9,0.1", "--json")
    shown = {c["question"]: c for c in json.loads(p.stdout)["paper_crossings"]}
    assert shown["tau at 0.45 log K"] == asked["tau at 0.45 log K"]
    text = run_cli("settle", str(path), "--alpha", "0.45").stdout
    assert "(exact)" in text and "0 full scorings now" in text
    # the answers equal an independent full scoring of every checkpoint
    from mi_plateau.replays.exact_check import score_exact
    from mi_plateau.settle import answer
    from mi_plateau.summaries import num

    run = Run(path)
    ev = run.eval_set()
    full = [
        {**r, "metrics": {**r["metrics"], "L_seq": num(score_exact(run, r["step"], ev)["L_seq"])}}
        for r in run.records()
    ]
    log_K = run.config().task.log_K
    assert answer(Crossing(0.45), full, log_K)["tau"] == asked["tau at 0.45 log K"]["tau"]
    w = answer(Width(0.9, 0.1), full, log_K)
    assert (w["t_start"], w["t_end"]) == (
        asked["width 0.9 -> 0.1 log K"]["t_start"],
        asked["width 0.9 -> 0.1 log K"]["t_end"],
    )


def test_deleted_weights_leave_the_crossing_an_estimate_and_say_which_steps(tmp_path, live_run):
    path = tmp_path / "gone"
    shutil.copytree(live_run.path, path)
    (path / SETTLED_FILE).unlink()
    for f in (path / "ckpt").glob("*.safetensors"):
        f.unlink()
    st = settle(Run(path))
    assert st.unsettled and not st.scored and st.missing == st.unsettled
    note = run_summary(Run(path), settle=True)["settlement"]
    assert note["exact"] is False and note["missing_weights"] == st.unsettled


def test_settle_names_the_steps_it_cannot_score_and_prints_the_estimate(tmp_path, live_run, run_cli):
    path = tmp_path / "gone"
    shutil.copytree(live_run.path, path, ignore=shutil.ignore_patterns(SETTLED_FILE, "*.safetensors"))
    p = run_cli("settle", str(path))
    assert p.returncode == 0, p.stderr
    assert "(weights gone)" in p.stdout and "(estimate)" in p.stdout and "Traceback" not in p.stderr


@pytest.mark.parametrize("args", [["--alpha", "1.6"], ["--alpha", "0"], ["--threshold", "9"], ["--threshold", "-1"]])
def test_a_threshold_outside_the_range_is_one_line(tmp_path, live_run, run_cli, args):
    p = run_cli("settle", str(live_run.path), *args)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["1.5", "0", "abc"])
def test_a_bad_threshold_is_one_line(tiny_run, run_cli, bad):
    p = run_cli("summary", str(tiny_run.path), "--tau-at", bad)
    assert p.returncode == 2 and "Traceback" not in p.stderr and bad in p.stderr


def test_a_recipe_settles_its_runs_only_when_asked(tmp_path, live_run):
    from mi_plateau.reproduce.sweeps import settle_runs
    from mi_plateau.sweeps.spec import Point, Sweep

    sweep = Sweep("s", "tiny", None, {}, (Point("r", {}, Run(live_run.path).config()), Point("absent", {}, None)))
    shutil.copytree(live_run.path, tmp_path / "s" / "r", ignore=shutil.ignore_patterns(SETTLED_FILE))
    run_summary(Run(tmp_path / "s" / "r"))  # a summary alone scores nothing
    assert not (tmp_path / "s" / "r" / SETTLED_FILE).exists()
    settle_runs(sweep, tmp_path, progress=False)
    s = run_summary(Run(tmp_path / "s" / "r"))
    assert (tmp_path / "s" / "r" / SETTLED_FILE).is_file() and s["settlement"]["exact"]
    assert all(s[f"{k}_exact"] for k in ("tau", "t_start", "t_end", "tau_width"))
