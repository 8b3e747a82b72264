"""The paper family on a subset of groups with a guard (``metrics.SeqGuard``): the decision rule
on hand-built numbers, and ``evaluate`` with a guard against the plain full scoring on a real
model: the same L_seq where every group is scored, the subset's own mean where it is not."""

import math

import numpy as np
import pytest
import torch

from mi_plateau.config import ConfigError, preset, validate, with_overrides
from mi_plateau.metrics import SeqGuard, evaluate, example_losses, seq_guard
from mi_plateau.model import build_model
from mi_plateau.task import make_eval_set, make_task


def test_standard_error_has_the_finite_population_correction():
    m = np.array([1.0, 2.0, 3.0, 4.0])
    est, se = SeqGuard.estimate(m, 8)
    assert est == 2.5 and se == pytest.approx(np.std(m, ddof=1) / 2 * math.sqrt(0.5))
    assert SeqGuard.estimate(m, 4) == (2.5, 0.0)  # the whole population: no sampling error
    assert SeqGuard.estimate(m[:1], 8)[1] == math.inf  # one group: no estimate of the spread


def test_every_group_is_scored_near_a_threshold_and_nowhere_else():
    g = SeqGuard(np.arange(4), thresholds=(1.0, 2.0), z=3.0)
    assert not g.must_score_all(1.5, 0.1)  # 5 se from either threshold
    assert g.must_score_all(1.75, 0.1) and g.must_score_all(0.71, 0.1)  # within 3 se of 2.0 / of 1.0
    assert g.must_score_all(1.5, math.inf) and g.must_score_all(float("nan"), 0.1)
    assert SeqGuard(np.arange(4), (1.0,), 3.0, force=True).must_score_all(5.0, 0.01)


@pytest.fixture(scope="module")
def model_and_set():
    cfg = with_overrides(preset("tiny"), {"K": 5, "n_b": 40, "eval.n_groups": 40, "eval.seq_subset": 10})
    torch.manual_seed(0)
    model = build_model(cfg)
    with torch.no_grad():  # a model far from z-blind: per-group L_seq varies
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    model.eval()
    return cfg, model, make_eval_set(make_task(cfg.task), cfg.eval)


def test_guard_scores_all_groups_where_it_fires_and_the_subset_elsewhere(model_and_set):
    cfg, model, ev = model_and_set
    full = evaluate(model, ev)
    per_ex = example_losses(model, ev)["L_seq"].reshape(-1, cfg.task.K).mean(1)
    g = seq_guard(cfg, ev, step=10_000)
    assert len(g.groups) == 10 and set(g.groups) <= set(ev.groups)
    assert np.array_equal(g.groups, seq_guard(cfg, ev, step=20_000).groups)  # the same subset at every checkpoint
    # far from every threshold: the subset's mean, with its standard error
    far = SeqGuard(g.groups, thresholds=(-100.0,), z=5.0)
    m = evaluate(model, ev, guard=far)
    sub = per_ex[np.isin(ev.groups, g.groups)]
    assert m["L_seq"] == pytest.approx(sub.mean(), rel=1e-5) and m["L_seq_groups"] == 10
    assert m["L_seq_se"] == pytest.approx(SeqGuard.estimate(sub, 40)[1], rel=1e-4)
    assert m["Lc"] == pytest.approx(full["Lc"], rel=1e-6)  # the first-token family is always every group
    # a threshold at the subset's estimate: every group scored, equal to the plain full scoring
    near = SeqGuard(g.groups, thresholds=(float(sub.mean()),), z=5.0)
    m2 = evaluate(model, ev, guard=near)
    assert m2["L_seq_groups"] == 40 and m2["L_seq_se"] == 0.0
    for k in ("L_seq", "cand_acc", "cand_groups_ge80", "cand_groups_100"):
        assert m2[k] == pytest.approx(full[k], rel=1e-5, abs=1e-7), k


def test_plateau_window_is_scored_in_full_and_thresholds_cover_every_reported_crossing(model_and_set):
    cfg, _, ev = model_and_set
    assert seq_guard(cfg, ev, cfg.eval.seq_plateau_start).force and not seq_guard(cfg, ev, cfg.eval.seq_plateau_end + 1).force
    fr = cfg.seq_thresholds()
    assert {0.3, 0.4, 0.5, 0.6, 0.7, 0.95, 0.05, 0.01} <= set(fr)
    assert seq_guard(with_overrides(cfg, {"eval.seq_subset": 0}), ev, 1000) is None


def test_subset_and_cap_are_exclusive():
    with pytest.raises(ConfigError, match="choose one"):
        validate(with_overrides(preset("paper"), {"eval.seq_subset": 40}))  # the paper preset caps
    validate(with_overrides(preset("paper"), {"eval.seq_subset": 40, "eval.seq_max_strings": 0}))
