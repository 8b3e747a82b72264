"""A run evaluated on a guarded subset of groups records the same checkpoints, taus and width as
the same run scored in full (training never reads the evaluation: the weights are the same), and
the replay pass (``passes.guard.guard_check``) agrees."""

import pytest

from mi_plateau.checkpoints import Run
from mi_plateau.config import with_overrides
from mi_plateau.passes.guard import guard_check
from mi_plateau.train import train


def test_guarded_run_equals_the_full_run_at_every_reported_crossing(tmp_path, tiny_cfg, tiny_run):
    cfg = with_overrides(tiny_cfg, {"eval.seq_subset": 12})
    guarded = train(cfg, tmp_path / "guarded", progress=False)
    full_recs, recs = Run(tiny_run.path).records(), guarded.records()
    assert [r["step"] for r in recs] == [r["step"] for r in full_recs]
    exact = [r for r in recs if r["metrics"]["groups_scored"] == 48]
    assert 0 < len(exact) < len(recs)  # the guard scored some checkpoints in full, not all
    by_step = {r["step"]: r["metrics"] for r in full_recs}
    for r in recs:  # the first-token family: every group at every checkpoint
        for k in ("Lc", "L1", "swap_gap"):
            assert r["metrics"][k] == pytest.approx(by_step[r["step"]][k], rel=1e-5, abs=1e-7)
    for r in exact:
        assert r["metrics"]["L_seq"] == pytest.approx(by_step[r["step"]]["L_seq"], rel=1e-5, abs=1e-7)
    a, b = Run(tiny_run.path).summary(), guarded.summary()
    for fam in ("paper", "first_token"):
        for k in ("tau", "t_start", "t_end", "tau_width"):
            assert a["definitions"][fam][k] == b["definitions"][fam][k], (fam, k)
    check = guard_check(tiny_run.path, subset=12)
    assert check["all_equal"] and check["scored_all"] < check["checkpoints"]
    # the replay scores the stages the guarded run scored, checkpoint by checkpoint
    scored = {r["step"]: r["metrics"]["groups_scored"] for r in recs}
    assert all(row["groups_scored"] == scored[row["step"]] for row in check["rows"])
    # the spread of the full set's group means of L_seq, against a plain computation at one checkpoint
    import numpy as np

    from mi_plateau.metrics import example_losses

    row = check["rows"][3]
    run = Run(tiny_run.path)
    model = run.load_model(row["step"])
    per_group = example_losses(model, run.eval_set())["L_seq"].reshape(-1, cfg.task.K).mean(1)
    assert row["L_seq_group_sd"] == pytest.approx(float(np.std(per_group, ddof=1)), rel=1e-5)
    assert {(c["definition"], c["fraction"]) for c in check["crossings"]} == {
        (f, x) for f in ("paper", "first_token") for x in cfg.seq_thresholds()
    }


def test_summary_guard_check_on_the_command_line(tiny_run, run_cli):
    import json

    p = run_cli("summary", str(tiny_run.path), "--guard-check", "12", "--json")
    assert p.returncode == 0, p.stderr
    g = json.loads(p.stdout)
    assert g["subset"] == 12 and g["all_equal"] is True and len(g["rows"]) == g["checkpoints"]


def test_first_token_guard_run_keeps_both_families_taus(tmp_path, tiny_cfg, tiny_run):
    """``eval.guard_first_token``: the first-token losses on the guard's stages too. The run records
    the same checkpoints and every tau and width of both families as the run scored in full; where
    it scored every group its Lc equals the full run's; the replay scores the stages it scored."""
    cfg = with_overrides(tiny_cfg, {"eval.seq_subset": 12, "eval.guard_first_token": True})
    guarded = train(cfg, tmp_path / "both", progress=False)
    full_recs, recs = Run(tiny_run.path).records(), guarded.records()
    assert [r["step"] for r in recs] == [r["step"] for r in full_recs]
    by_step = {r["step"]: r["metrics"] for r in full_recs}
    partial = [r for r in recs if r["metrics"]["groups_scored"] < 48]
    assert partial and any(r["metrics"]["Lc"] != pytest.approx(by_step[r["step"]]["Lc"], rel=1e-5) for r in partial)
    for r in recs:
        if r["metrics"]["groups_scored"] == 48:
            assert r["metrics"]["Lc"] == pytest.approx(by_step[r["step"]]["Lc"], rel=1e-5, abs=1e-7)
    a, b = Run(tiny_run.path).summary(), guarded.summary()
    for fam in ("paper", "first_token"):
        for k in ("tau", "t_start", "t_end", "tau_width"):
            assert a["definitions"][fam][k] == b["definitions"][fam][k], (fam, k)
    check = guard_check(tiny_run.path, subset=12, first_token=True)
    assert check["all_equal"] and check["first_token"]
    scored = {r["step"]: r["metrics"]["groups_scored"] for r in recs}
    assert all(row["groups_scored"] == scored[row["step"]] for row in check["rows"])


def test_row_sampled_guard_run_keeps_every_tau(tmp_path, tiny_cfg, tiny_run):
    """``eval.seq_rows``: L_seq on two rows of each group on the stages short of every group. The
    run records the same checkpoints, taus and widths as the run scored in full; the replay scores
    the stages it scored and reads fewer strings than the groups it scored."""
    cfg = with_overrides(tiny_cfg, {"eval.seq_subset": 12, "eval.seq_rows": 2})
    guarded = train(cfg, tmp_path / "rows", progress=False)
    full_recs, recs = Run(tiny_run.path).records(), guarded.records()
    assert [r["step"] for r in recs] == [r["step"] for r in full_recs]
    assert any(r["metrics"]["L_seq_rows"] == 24 for r in recs)  # 12 groups x 2 rows somewhere
    a, b = Run(tiny_run.path).summary(), guarded.summary()
    for fam in ("paper", "first_token"):
        for k in ("tau", "t_start", "t_end", "tau_width"):
            assert a["definitions"][fam][k] == b["definitions"][fam][k], (fam, k)
    check = guard_check(tiny_run.path, subset=12, seq_rows=2)
    assert check["all_equal"] and check["seq_rows"] == 2
    assert check["share_rows_scored"] < check["share_scored"]
    scored = {r["step"]: r["metrics"]["groups_scored"] for r in recs}
    assert all(row["groups_scored"] == scored[row["step"]] for row in check["rows"])
