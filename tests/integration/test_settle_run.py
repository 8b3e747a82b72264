"""A run evaluated live on a subset of groups, settled afterwards: its taus and widths equal those
of the same checkpoints scored on the full set; a threshold asked later is settled with a few
counted scorings and cached; a run whose weights are gone names what it cannot settle."""

import json
import shutil

import pytest

from mi_plateau.checkpoints import Run
from mi_plateau.checkpoints.settle import SETTLED_FILE, Crossing, Width, settle
from mi_plateau.config import with_overrides
from mi_plateau.replays.exact_check import exact_check
from mi_plateau.train import train


@pytest.fixture(scope="module")
def live_run(tmp_path_factory, tiny_cfg):
    """The tiny run with L_seq live on 20 of its 48 groups (K = 4: every row of each)."""
    return train(
        with_overrides(tiny_cfg, {"eval.live_groups": 20}), tmp_path_factory.mktemp("live") / "r", progress=False
    )


def test_a_live_run_records_estimates_and_its_summary_is_settled(live_run):
    tiny_run = live_run
    recs = Run(tiny_run.path).manifest()["checkpoints"]
    live = [c["record"]["metrics"] for c in recs]
    assert all(m["groups_scored"] == 20 for m in live)
    assert all(m["L_seq_se"] is None or m["L_seq_se"] > 0 for m in live)  # None: retired once decided low
    assert sum(m["L_seq_se"] is not None for m in live) > len(live) // 2
    s = tiny_run.manifest()["summary"]
    assert s["settlement"]["exact"] and s["settlement"]["scorings_now"] > 0
    assert (tiny_run.path / SETTLED_FILE).is_file()
    # the settlement is cached: reading the summary again scores nothing and agrees
    again = tiny_run.summary(settle=True)
    assert again["settlement"]["scorings_now"] == 0
    for k in ("tau", "t_start", "t_end", "tau_width"):
        assert again[k] == s[k]


def test_every_settled_crossing_equals_the_full_set_one(live_run):
    check = exact_check(Run(live_run.path))
    assert check["all_equal"], check
    assert check["settled_full_sets"] < check["checkpoints_scored"] <= check["checkpoints"]
    assert {c["fraction"] for c in check["crossings"]} == {0.3, 0.4, 0.5, 0.6, 0.7}


def test_a_threshold_asked_after_training_is_settled_with_counted_scorings(tmp_path, live_run, run_cli):
    path = tmp_path / "copy"
    shutil.copytree(live_run.path, path)
    p = run_cli("summary", str(path), "--tau-at", "0.45", "--width-at", "0.9,0.1", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    asked = {c["question"]: c for c in s["paper_crossings"]}
    assert "tau at 0.45 log K" in asked and "width 0.9 -> 0.1 log K" in asked
    first = s["settlement"]["scorings_now"]
    assert first >= 0 and s["settlement"]["exact"]
    # asked again: free
    p = run_cli("summary", str(path), "--tau-at", "0.45", "--width-at", "0.9,0.1", "--json")
    s2 = json.loads(p.stdout)
    assert s2["settlement"]["scorings_now"] == 0
    assert {c["question"]: c for c in s2["paper_crossings"]} == asked
    # the answers equal an independent full scoring of every checkpoint
    from mi_plateau.checkpoints.answers import answer
    from mi_plateau.replays.exact_check import score_exact
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
    assert st.unsettled and not st.scored
    note = Run(path).summary()["settlement"]
    assert note["exact"] is False and note["unsettled_steps"] == st.unsettled


@pytest.mark.parametrize("bad", ["1.5", "0", "abc"])
def test_a_bad_threshold_is_one_line(tiny_run, run_cli, bad):
    p = run_cli("summary", str(tiny_run.path), "--tau-at", bad)
    assert p.returncode == 2 and "Traceback" not in p.stderr and bad in p.stderr
