"""Both families on a subset of groups with a guard (``metrics.EvalGuard``): the decision rule on
hand-built numbers, and ``evaluate`` with a guard against the plain full scoring on a real model:
the full-set numbers where the guard fires, the subset's own means where it does not."""

import math

import numpy as np
import pytest
import torch

from mi_plateau.config import ConfigError, preset, validate, with_overrides
from mi_plateau.metrics import EvalGuard, eval_guard, evaluate, example_losses
from mi_plateau.model import build_model
from mi_plateau.task import make_eval_set, make_task


def test_standard_error_has_the_finite_population_correction():
    m = np.array([1.0, 2.0, 3.0, 4.0])
    est, se = EvalGuard.estimate(m, 8)
    assert est == 2.5 and se == pytest.approx(np.std(m, ddof=1) / 2 * math.sqrt(0.5))
    assert EvalGuard.estimate(m, 4) == (2.5, 0.0)  # the whole population: no sampling error
    assert EvalGuard.estimate(m[:1], 8)[1] == math.inf  # one group: no estimate of the spread


def test_every_group_is_scored_near_a_threshold_of_any_watched_quantity():
    g = EvalGuard(np.arange(4), {"L_seq": (1.0, 2.0), "swap_gap": (0.1,)}, z=3.0)
    assert not g.must_score_all({"L_seq": (1.5, 0.1), "swap_gap": (0.5, 0.1)})  # 4-5 se from each
    assert g.must_score_all({"L_seq": (1.75, 0.1)}) and g.must_score_all({"L_seq": (0.71, 0.1)})
    assert g.must_score_all({"L_seq": (1.5, 0.1), "swap_gap": (0.3, 0.1)})  # the gap is near 0.1
    assert not g.must_score_all({"Lc": (1.0, 0.001)})  # a quantity without thresholds never fires
    assert g.must_score_all({"L_seq": (1.5, math.inf)}) and g.must_score_all({"L_seq": (float("nan"), 0.1)})
    assert EvalGuard(np.arange(4), {}, 3.0, force=True).must_score_all({"L_seq": (5.0, 0.01)})


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


def test_guard_scores_all_groups_where_it_fires_and_the_subset_elsewhere(model_and_set):
    cfg, model, ev = model_and_set
    full = evaluate(model, ev)
    ex = example_losses(model, ev)
    per = {k: v.reshape(-1, cfg.task.K).mean(1) for k, v in ex.items()}
    g = eval_guard(cfg, ev, step=10_000)
    assert len(g.groups) == 10 and set(g.groups) <= set(ev.groups)
    assert np.array_equal(g.groups, eval_guard(cfg, ev, step=20_000).groups)  # the same subset at every checkpoint
    inside = np.isin(ev.groups, g.groups)
    # far from every threshold: the subset's means, with their standard errors
    m = evaluate(model, ev, guard=EvalGuard(g.groups, {}, z=5.0))
    assert m["groups_scored"] == 10
    for k in ("L_seq", "Lc", "swap_gap"):
        assert m[k] == pytest.approx(per[k][inside].mean(), rel=1e-5, abs=1e-6), k
        assert m[f"{k}_se"] == pytest.approx(EvalGuard.estimate(per[k][inside], 40)[1], rel=1e-4, abs=1e-9), k
    # a threshold at the subset's Lc: every group scored, equal to the plain full scoring
    m2 = evaluate(model, ev, guard=EvalGuard(g.groups, {"Lc": (float(per["Lc"][inside].mean()),)}, z=5.0))
    assert m2["groups_scored"] == 40 and m2["L_seq_se"] == 0.0
    for k, v in full.items():
        assert m2[k] == pytest.approx(v, rel=1e-5, abs=1e-7), k


def test_thresholds_cover_every_crossing_and_the_plateau_window_is_full(model_and_set):
    cfg, _, ev = model_and_set
    assert (
        eval_guard(cfg, ev, cfg.eval.seq_plateau_start).force
        and not eval_guard(cfg, ev, cfg.eval.seq_plateau_end + 1).force
    )
    assert {0.3, 0.4, 0.5, 0.6, 0.7, 0.95, 0.05, 0.01} <= set(cfg.seq_thresholds())
    g = eval_guard(cfg, ev, 1000)
    assert cfg.train.converge_Lc in g.thresholds["Lc"] and 0.1 in g.thresholds["swap_gap"]
    assert eval_guard(with_overrides(cfg, {"eval.seq_subset": 0}), ev, 1000) is None


def test_subset_and_cap_are_exclusive():
    with pytest.raises(ConfigError, match="choose one"):
        validate(with_overrides(preset("paper"), {"eval.seq_subset": 40}))  # the paper preset caps
    validate(with_overrides(preset("paper"), {"eval.seq_subset": 40, "eval.seq_max_strings": 0}))
