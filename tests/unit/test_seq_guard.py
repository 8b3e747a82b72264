"""The paper family over stages of groups with a guard (``metrics.EvalGuard``): the stages and
the decision rule on hand-built numbers, which thresholds a run's record retires, and ``evaluate``
with a guard against the plain full scoring on a real model: the first-token losses always over
every group, L_seq and what reads the whole target over the stages the guard needed (all of them
where it must)."""

import math

import numpy as np
import pytest
import torch

from mi_plateau.config import ConfigError, preset, validate, with_overrides
from mi_plateau.metrics import EvalGuard, active_thresholds, eval_guard, evaluate, example_losses
from mi_plateau.model import build_model
from mi_plateau.task import make_eval_set, make_task


def test_standard_error_has_the_finite_population_correction():
    m = np.array([1.0, 2.0, 3.0, 4.0])
    est, se = EvalGuard.estimate(m, 8)
    assert est == 2.5 and se == pytest.approx(np.std(m, ddof=1) / 2 * math.sqrt(0.5))
    assert EvalGuard.estimate(m, 4) == (2.5, 0.0)  # the whole population: no sampling error
    assert EvalGuard.estimate(m[:1], 8)[1] == math.inf  # one group: no estimate of the spread


def test_stages_grow_to_every_group_and_force_scores_all_at_once():
    g = EvalGuard(np.arange(200), 20, (1.0,), z=5.0)
    assert g.stages() == [20, 50, 125, 200]
    assert EvalGuard(np.arange(200), 20, (), 5.0, force=True).stages() == [200]
    assert EvalGuard(np.arange(7), 3, (), 5.0).stages() == [3, 7] and EvalGuard(np.arange(5), 9, (), 5.0).stages() == [
        5
    ]
    assert np.array_equal(EvalGuard(np.array([5, 3, 9, 1]), 2, (), 5.0).groups, [3, 5])


def test_undecided_within_z_standard_errors_of_an_active_threshold():
    g = EvalGuard(np.arange(4), 2, (1.0, 2.0), z=3.0)
    assert not g.undecided(1.5, 0.1)  # 5 se from each
    assert g.undecided(1.75, 0.1) and g.undecided(0.71, 0.1)
    assert not EvalGuard(np.arange(4), 2, (), z=3.0).undecided(1.0, 0.001)  # no threshold: never
    assert g.undecided(1.5, math.inf) and g.undecided(float("nan"), 0.1)
    assert EvalGuard(np.arange(4), 2, (), 3.0, force=True).undecided(5.0, 0.01)


def test_first_crossings_retire_the_spacing_ends_never_and_the_width_top_with_its_bottom():
    cfg = with_overrides(preset("tiny"), {"K": 5})
    lk = cfg.task.log_K
    every = set(cfg.seq_thresholds())
    assert set(active_thresholds(cfg, [])) == every
    assert set(active_thresholds(cfg, [1.2 * lk, None, 0.55 * lk])) == every - {0.6, 0.7}
    # below every threshold but the floor: the width's bottom is crossed, so its top retires too
    left = set(active_thresholds(cfg, [0.02 * lk]))
    assert left == {f for f in every if f <= 0.02} | set(cfg.spacing_thresholds())
    assert cfg.eval.width_hi not in left or cfg.eval.width_hi in cfg.spacing_thresholds()
    assert set(active_thresholds(cfg, [float("nan"), 0.35 * lk, 2.0 * lk])) == every - {0.4, 0.5, 0.6, 0.7}


@pytest.fixture(scope="module")
def model_and_set():
    cfg = with_overrides(preset("tiny"), {"K": 5, "n_b": 40, "eval.n_groups": 40, "eval.seq_subset": 10})
    torch.manual_seed(0)
    model = build_model(cfg)
    with torch.no_grad():  # a model far from z-blind: per-group losses vary
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    model.eval()
    return cfg, model, make_eval_set(make_task(cfg.task), cfg.eval)


def test_guard_scores_stages_until_decided_and_every_group_where_it_must(model_and_set):
    cfg, model, ev = model_and_set
    full = evaluate(model, ev)
    first = evaluate(model, ev, sequence=False)
    per = example_losses(model, ev)["L_seq"].reshape(-1, cfg.task.K).mean(1)
    g = eval_guard(cfg, ev, step=10_000)
    assert g.first == 10 and sorted(g.order) == sorted(ev.groups)
    assert np.array_equal(g.order, eval_guard(cfg, ev, step=20_000).order)  # the same order at every checkpoint
    inside = np.isin(ev.groups, g.groups)
    # no active threshold: the first stage only; the first-token losses over every group, what
    # reads the whole target (exact match, the full target loss) over the first stage's groups
    m = evaluate(model, ev, guard=EvalGuard(g.order, 10, (), z=5.0))
    assert m["groups_scored"] == 10
    assert m["L_seq"] == pytest.approx(per[inside].mean(), rel=1e-5, abs=1e-6)
    assert m["L_seq_se"] == pytest.approx(EvalGuard.estimate(per[inside], 40)[1], rel=1e-4, abs=1e-9)
    for k in ("Lc", "L1", "swap_gap", "cand_mass"):
        assert m[k] == pytest.approx(first[k], rel=1e-5, abs=1e-7), k
    stage = evaluate(model, ev.subset(g.groups))
    for k in ("full_loss", "acc_mean", "groups_ge80", "cand_acc", "cand_groups_ge80"):
        assert m[k] == pytest.approx(stage[k], rel=1e-5, abs=1e-7), k
    assert m["full_loss"] != pytest.approx(full["full_loss"], rel=1e-3)  # a subset's value, not the full set's
    # a threshold at the full-set L_seq: every stage up to every group, equal to the plain full scoring
    m2 = evaluate(model, ev, guard=EvalGuard(g.order, 10, (float(per.mean()),), z=5.0))
    assert m2["groups_scored"] == 40 and m2["L_seq_se"] == 0.0
    for k, v in full.items():
        assert m2[k] == pytest.approx(v, rel=1e-5, abs=1e-7), k
    # forced (Table 7's window): every group in one stage, the evaluation set itself
    m4 = evaluate(model, ev, guard=EvalGuard(g.order, 10, (), 5.0, force=True))
    assert m4["groups_scored"] == 40
    for k, v in full.items():
        assert m4[k] == pytest.approx(v, rel=1e-5, abs=1e-7), k
    # a threshold far away at the second stage's resolution: it stops there, on the second stage's groups
    second = np.isin(ev.groups, g.order[:25])
    est, se = EvalGuard.estimate(per[second], 40)
    e1, se1 = EvalGuard.estimate(per[inside], 40)
    t = next(t for t in (est + 5.5 * se, est - 5.5 * se) if abs(e1 - t) <= 5 * se1)  # undecided at 10 groups
    m3 = evaluate(model, ev, guard=EvalGuard(g.order, 10, (t,), z=5.0))
    assert m3["groups_scored"] == 25 and m3["L_seq"] == pytest.approx(est, rel=1e-5)


def test_subset_and_cap_are_exclusive():
    with pytest.raises(ConfigError, match="choose one"):
        validate(with_overrides(preset("paper"), {"eval.seq_max_strings": 18000}))  # the paper preset guards
    validate(with_overrides(preset("paper"), {"eval.seq_subset": 0, "eval.seq_max_strings": 18000}))


def test_first_token_losses_equal_the_full_evaluation(model_and_set):
    """What a guarded checkpoint computes on every group (the packs up to the position that
    predicts A1) equals the full evaluation's first-token losses."""
    from mi_plateau.metrics import first_token_losses

    _, model, ev = model_and_set
    a, b = first_token_losses(model, ev), evaluate(model, ev)
    for k in ("Lc", "L1", "cand_mass", "swap_gap"):
        assert a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-7), k


def test_first_token_guard_puts_both_families_on_the_stages(model_and_set):
    """``eval.guard_first_token``: with no threshold near, Lc, L1, the candidate mass and the swap
    gap are the first stage's means (equal to the plain evaluation of those groups), with Lc's
    standard error; a threshold at the full set's Lc or swap gap takes every stage up to all
    groups, where every value equals the plain full scoring."""
    cfg, model, ev = model_and_set
    full = evaluate(model, ev)
    g = eval_guard(cfg, ev, step=10_000)
    K = cfg.task.K
    ex = example_losses(model, ev)
    inside = np.isin(ev.groups, g.groups)
    lc_groups = ex["Lc"].reshape(-1, K).mean(1)
    gap_groups = ex["swap_gap"].reshape(-1, K).mean(1)
    quiet = EvalGuard(g.order, 10, (), z=5.0, first_token=True)
    m = evaluate(model, ev, guard=quiet)
    stage = evaluate(model, ev.subset(g.groups))
    assert m["groups_scored"] == 10
    for k in ("Lc", "L1", "cand_mass", "swap_gap", "L_seq", "acc_mean"):
        assert m[k] == pytest.approx(stage[k], rel=1e-5, abs=1e-7), k
    assert m["Lc"] != pytest.approx(full["Lc"], rel=1e-4)  # the subset's value
    assert m["Lc_se"] == pytest.approx(EvalGuard.estimate(lc_groups[inside], 40)[1], rel=1e-4)
    assert m["swap_gap_se"] == pytest.approx(EvalGuard.estimate(gap_groups[inside], 40)[1], rel=1e-4)
    for near in (
        EvalGuard(g.order, 10, (), 5.0, first_token=True, lc_thresholds=(float(lc_groups.mean()),)),
        EvalGuard(g.order, 10, (), 5.0, first_token=True, gap_thresholds=(float(gap_groups.mean()),)),
    ):
        m2 = evaluate(model, ev, guard=near)
        assert m2["groups_scored"] == 40 and m2["Lc_se"] == 0.0
        for k, v in full.items():  # the swap gap: a difference of two means near 2.5 nats, in float32
            assert m2[k] == pytest.approx(v, rel=1e-5, abs=1e-6), k
    # off (the default): the same thresholds leave the first-token losses on every group, one stage
    off = evaluate(model, ev, guard=EvalGuard(g.order, 10, (), 5.0, lc_thresholds=(float(lc_groups.mean()),)))
    assert off["groups_scored"] == 10 and off["Lc"] == pytest.approx(full["Lc"], rel=1e-5)


def test_lc_thresholds_add_the_converge_level_and_retire_like_l_seq():
    from mi_plateau.metrics.guard import lc_thresholds

    cfg = with_overrides(preset("tiny"), {"K": 5})
    lk = cfg.task.log_K
    conv = cfg.train.converge_Lc / lk
    assert set(lc_thresholds(cfg, [])) == set(active_thresholds(cfg, [])) | {conv}
    assert set(lc_thresholds(cfg, [0.55 * lk])) == set(active_thresholds(cfg, [0.55 * lk])) | {conv}
    assert conv not in lc_thresholds(cfg, [0.5 * cfg.train.converge_Lc])
    on = with_overrides(cfg, {"eval.seq_subset": 10, "eval.guard_first_token": True, "n_b": 40, "eval.n_groups": 40})
    ev = make_eval_set(make_task(on.task), on.eval)
    g = eval_guard(on, ev, step=10_000, history=[], lc_history=[0.55 * lk])
    assert g.first_token and g.gap_thresholds == (0.1,)  # the spacing never widens here: no quiet level
    wide = with_overrides(on, {"train.ckpt_every_max": 4 * on.train.ckpt_every})
    assert eval_guard(wide, ev, 10_000).gap_thresholds == (0.02, 0.1)
    assert eval_guard(wide, ev, 10_000, gap_history=[0.01, 0.3]).gap_thresholds == (0.02,)  # 0.1 crossed
    assert g.lc_thresholds == tuple(f * lk for f in lc_thresholds(on, [0.55 * lk]))
    assert not eval_guard(with_overrides(on, {"eval.guard_first_token": False}), ev, 10_000).first_token


def test_row_sampled_standard_error_drops_the_finite_population_factor():
    m = np.array([1.0, 2.0, 3.0, 4.0])
    est, se = EvalGuard.estimate(m, 8, rows_sampled=True)
    assert est == 2.5 and se == pytest.approx(np.std(m, ddof=1) / 2)
    # every group but only some of its rows: still an estimate, not the exact mean
    assert EvalGuard.estimate(m, 4, rows_sampled=True)[1] == pytest.approx(np.std(m, ddof=1) / 2)


def test_seq_rows_picks_the_same_rows_of_each_group_at_every_checkpoint():
    cfg = with_overrides(
        preset("tiny"), {"K": 5, "n_b": 40, "eval.n_groups": 40, "eval.seq_subset": 10, "eval.seq_rows": 2}
    )
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    g = eval_guard(cfg, ev, step=10_000)
    mask = g.row_mask.reshape(-1, 5)
    assert g.rows_per_group == 2 and (mask.sum(1) == 2).all()
    assert len({tuple(r) for r in mask}) > 1  # drawn per group, not the same selectors everywhere
    assert np.array_equal(g.row_mask, eval_guard(cfg, ev, step=20_000).row_mask)
    assert eval_guard(with_overrides(cfg, {"eval.seq_rows": 5}), ev, 10_000).row_mask is None  # all K rows
    with pytest.raises(ConfigError, match="eval.seq_rows=3 without eval.seq_subset"):
        validate(with_overrides(preset("tiny"), {"eval.seq_rows": 3}))


def test_row_sampled_guard_scores_the_picked_rows_and_every_row_where_it_must(model_and_set):
    """``eval.seq_rows``: with no threshold near, L_seq is the mean over the picked rows of the
    first stage's groups (a plain per-row computation), its standard error the spread of those
    groups' row means without the finite-population factor, and the paper family's group shares
    are not estimated; a threshold at the full-set L_seq takes the stages up to all groups, where
    every row is scored and every value equals the plain full scoring."""
    cfg, model, ev = model_and_set
    K = cfg.task.K
    rows = with_overrides(cfg, {"eval.seq_rows": 2})
    g = eval_guard(rows, ev, step=10_000)
    ex = example_losses(model, ev)["L_seq"].reshape(-1, K)
    mask = g.row_mask.reshape(-1, K)
    inside = np.isin(ev.groups, g.groups)
    picked = (ex * mask).sum(1) / 2  # each group's mean over its two picked rows
    m = evaluate(model, ev, guard=EvalGuard(g.order, 10, (), 5.0, row_mask=g.row_mask))
    assert m["groups_scored"] == 10 and m["L_seq_rows"] == 20
    assert m["L_seq"] == pytest.approx(picked[inside].mean(), rel=1e-5)
    assert m["L_seq_se"] == pytest.approx(EvalGuard.estimate(picked[inside], 40, rows_sampled=True)[1], rel=1e-4)
    assert m["L_seq"] != pytest.approx(ex[inside].mean(), rel=1e-4)  # not the stage's every-row mean
    assert math.isnan(m["cand_groups_ge80"]) and math.isnan(m["cand_groups_100"]) and 0 <= m["cand_acc"] <= 1
    full = evaluate(model, ev)
    m2 = evaluate(model, ev, guard=EvalGuard(g.order, 10, (float(ex.mean()),), 5.0, row_mask=g.row_mask))
    assert m2["groups_scored"] == 40 and m2["L_seq_rows"] == 40 * K and m2["L_seq_se"] == 0.0
    for k, v in full.items():
        assert m2[k] == pytest.approx(v, rel=1e-5, abs=1e-7), k
