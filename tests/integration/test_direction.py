"""Table 2's pieces: targets without the distinct-first-character rule, a run started from another
run's weights (train.init_from), the 'budget' stop, the sweep training a transfer run after its
source, the forward clock and the table's arithmetic."""

import pytest
import torch

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.config import with_overrides
from mi_plateau.reproduce.direction import role, table2
from mi_plateau.summaries import forward_clock
from mi_plateau.sweeps import RunOptions, parse_sweep, run_sweep
from mi_plateau.task import make_task
from mi_plateau.train import should_stop, train


def test_free_first_characters_keep_bases_selectors_and_uniqueness(tiny_cfg):
    ruled = with_overrides(tiny_cfg, {"K": 36, "n_b": 200})
    free = with_overrides(ruled, {"task.distinct_first": False})
    a, b = make_task(ruled.task), make_task(free.task)
    assert (a.bases == b.bases).all() and (a.selector_sets == b.selector_sets).all()
    # the rule: 36 first characters per group, all different; without it, repeats in most groups
    assert all(len(set(g)) == 36 for g in a.targets[:, :, 0])
    repeats = sum(len(set(g)) < 36 for g in b.targets[:, :, 0])
    assert repeats == 200  # 36 free draws from 36 characters: a repeat is all but certain
    codes = {tuple(t) for t in b.targets.reshape(-1, 4)}
    assert len(codes) == 200 * 36  # still globally unique strings
    # the default is what it was: the rule's draws are unchanged by the option's existence
    again = make_task(with_overrides(tiny_cfg, {"K": 36, "n_b": 200}).task)
    assert (again.targets == a.targets).all()


def test_forward_clock_reads_the_first_step_below_the_threshold():
    assert forward_clock([0, 50, 100, 150], [3.6, 0.2, 0.09, 0.01]) == 100
    assert forward_clock([0, 50], [3.6, 0.1]) is None  # strictly below
    assert forward_clock([0, 50, 100], [3.6, float("nan"), 0.05]) == 100


def test_budget_stop_never_stops_early(tiny_cfg):
    cfg = with_overrides(tiny_cfg, {"stop": "budget"})
    recs = [{"step": s, "metrics": {"Lc": 0.0, "L_seq": 0.0}} for s in range(0, 2000, 20)]
    assert not should_stop(cfg, recs)


def test_init_from_starts_from_the_source_weights_with_a_fresh_optimizer(tiny_run, tiny_cfg, tmp_path):
    src = tiny_run if isinstance(tiny_run, Run) else Run(tiny_run)
    last = src.steps()[-1]
    cfg = with_overrides(tiny_cfg, {"max_steps": 40, "stop": "budget", "train.init_from": str(src.path)})
    run = train(cfg, tmp_path / "transfer", progress=False, options=RunOptions(device="cpu"))
    w0, ws = run.weights(0), src.weights(last)
    assert all(torch.equal(w0[k], ws[k]) for k in ws)
    init = run.manifest()["init"]
    assert init["step"] == last and init["sha256"] == src.weights_sha256([last])[last]
    assert run.steps()[-1] == 40
    # the same config trained again from nothing gives the same weights (the init is part of it)
    again = train(cfg, tmp_path / "again", progress=False, options=RunOptions(device="cpu"))
    assert all(torch.equal(run.weights(40)[k], again.weights(40)[k]) for k in ws)
    assert any(not torch.equal(run.weights(40)[k], ws[k]) for k in ws)  # and it trained from there


def test_init_from_refuses_what_it_cannot_start_from(tiny_run, tiny_cfg, tmp_path):
    src = tiny_run if isinstance(tiny_run, Run) else Run(tiny_run)
    for overrides, words in (
        ({"train.init_from": str(tmp_path / "nowhere")}, "no run at"),
        ({"train.init_from": str(src.path), "train.init_step": 7}, "no checkpoint there"),
    ):
        cfg = with_overrides(tiny_cfg, {"max_steps": 20, **overrides})
        with pytest.raises(RunError, match=words) as e:
            train(cfg, tmp_path / "refused", progress=False, options=RunOptions(device="cpu"))
        assert "\n" not in str(e.value)
    assert not (tmp_path / "refused" / "manifest.json").exists()  # nothing half-made is left to resume
    # a relative path names a sibling folder
    short = with_overrides(tiny_cfg, {"max_steps": 40, "stop": "budget"})
    train(short, tmp_path / "short", progress=False, options=RunOptions(device="cpu"))
    cfg = with_overrides(tiny_cfg, {"max_steps": 20, "train.init_from": "short"})
    train(cfg, tmp_path / "from_sibling", progress=False, options=RunOptions(device="cpu"))
    assert Run(tmp_path / "from_sibling").manifest()["init"]["step"] == 40


@pytest.mark.long  # kills a process / trains a sweep of several runs: CI's second step
def test_sweep_trains_a_transfer_run_after_its_source(tmp_path):
    sweep = parse_sweep(
        {
            "name": "direction_tiny",
            "preset": "tiny",
            "order": "listed",
            "overrides": {"task.distinct_first": False, "grad_clip": 1.0},
            "points": [
                # listed first, so a one-wave pool would start it before (or beside) its source
                {"name": "transfer", "stop": "tau", "tau_on": "paper", "max_steps": 200, "train.init_from": "fwd"},
                {"name": "fwd", "direction": "az_b", "stop": "budget", "tau_on": "first_token", "max_steps": 100},
            ],
        }
    )
    assert [role(p.cfg) for p in sweep.points] == ["transfer", "forward"]
    table = run_sweep(sweep, RunOptions(root=tmp_path, jobs=2, progress=False, device="cpu"))
    assert not table.attrs["failed"]
    fwd, tr = Run(tmp_path / "direction_tiny" / "fwd"), Run(tmp_path / "direction_tiny" / "transfer")
    assert fwd.steps()[-1] == 100 and tr.manifest()["init"]["step"] == 100
    assert all(torch.equal(tr.weights(0)[k], v) for k, v in fwd.weights(100).items())


def test_table2_rows_from_hand_built_cells():
    cells = {
        5: {
            "forward": {"tau": 2000, "status": "finished", "steps": 20000},
            "backward": {"tau": 500, "status": "finished", "steps": 600},
            "transfer": {"tau": 400, "status": "finished", "steps": 480},
        },
        10: {"forward": {"tau": None, "status": "running", "steps": 3000}},
    }
    rows = table2(cells)
    assert [r["K"] for r in rows] == [5, 10]
    r = rows[0]
    assert r["ratio"] == pytest.approx(4.0) and r["transfer"] == pytest.approx(1.25)
    assert (r["paper_tau_fwd"], r["paper_tau_bwd"], r["paper_ratio"], r["paper_transfer"]) == (2650, 600, 4.4, 0.75)
    assert rows[1]["ratio"] is None and rows[1]["transfer"] is None and rows[1]["backward_status"] is None


def test_the_control_without_z_reads_its_lowest_L_seq_over_log_K(tiny_cfg):
    """The original's control, B -> A without a selector: its row holds the lowest L_seq / log K
    at any checkpoint after step 0, beside the K's other cells."""
    import math

    from mi_plateau.reproduce.direction import build_direction
    from mi_plateau.reproduce.records import Collected

    points = [{"name": "bwd", "K": 4}, {"name": "ctl", "K": 4, "direction": "b_a", "stop": "budget"}]
    sweep = parse_sweep({"name": "t", "preset": "tiny", "points": points})
    assert [role(p.cfg) for p in sweep.points] == ["backward", "control"]
    log4 = math.log(4)
    rows = [
        {"run": "bwd", "tau_paper": 300, "status": "finished", "steps": 400},
        {"run": "ctl", "tau_paper": None, "status": "finished", "steps": 600},
    ]
    curves = {"ctl": {"step": [0, 200, 400, 600], "L_seq": [9.0, 1.2 * log4, 1.01 * log4, 1.05 * log4]}}
    (row,) = build_direction(Collected(rows, curves, {}), sweep, 0, 0).tables["Table 2"].rows
    assert row["tau_bwd"] == 300 and row["control_min_L_seq_over_log_K"] == pytest.approx(1.01)
    assert (row["control_status"], row["control_steps"]) == ("finished", 600)
