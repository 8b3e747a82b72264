"""The settlement's decisions on hand-built records (``settle``): which checkpoints a
question needs scored, and that answering on the settled records equals answering on the full-set
values wherever the bands hold them."""

import math

import numpy as np
import pytest

from mi_plateau.checkpoints.settled import resolve
from mi_plateau.config import preset, with_overrides
from mi_plateau.config.schema import RunConfig, retire_eval_keys
from mi_plateau.metrics import estimate, live_subset
from mi_plateau.settle import Crossing, Width, Z, answer, pending
from mi_plateau.summaries import tau, transition_width

LOG_K = 1.0  # thresholds read as fractions of 1 nat


def recs(values, ses):
    return [{"step": 100 * i, "metrics": {"L_seq": v, "L_seq_se": s}} for i, (v, s) in enumerate(zip(values, ses))]


def test_a_band_clear_of_the_threshold_is_decided_and_one_that_holds_it_is_scored():
    # tau at 0.5: step 0 and 100 clearly above, 200 within Z se of 0.5, 300 clearly below
    r = recs([0.9, 0.8, 0.52, 0.1], [0.01, 0.01, 0.01, 0.01])
    assert pending(r, LOG_K, False, [Crossing(0.5)]) == [200]
    # exact at 200 (below): settled at 200, nothing else needed; above: 300
    for exact, want in ((0.49, 200), (0.51, 300)):
        settled = resolve(r, {200: {"L_seq": exact, "L_seq_se": 0.0}})
        assert pending(settled, LOG_K, False, [Crossing(0.5)]) == []
        assert answer(Crossing(0.5), settled, LOG_K)["tau"] == want


def test_the_walk_stops_at_the_first_decided_crossing():
    # the band at 300 holds 0.5 but 200 is decided below: 300 is never needed
    r = recs([0.9, 0.8, 0.1, 0.5], [0.01, 0.01, 0.01, 0.01])
    assert pending(r, LOG_K, False, [Crossing(0.5)]) == []


def test_the_width_walks_back_from_t_end_to_the_first_decided_above():
    # t_end (lo 0.05) decided at 400; going back: 300 holds 0.95 in its band, 200 is decided above
    values = [1.0, 0.99, 0.99, 0.95, 0.01]
    r = recs(values, [0.001, 0.001, 0.001, 0.005, 0.001])
    assert pending(r, LOG_K, False, [Width(0.95, 0.05)]) == [300]
    settled = resolve(r, {300: {"L_seq": 0.949, "L_seq_se": 0.0}})
    assert answer(Width(0.95, 0.05), settled, LOG_K)["t_start"] == 200
    settled = resolve(r, {300: {"L_seq": 0.951, "L_seq_se": 0.0}})
    assert answer(Width(0.95, 0.05), settled, LOG_K)["t_start"] == 300


def test_records_without_a_standard_error_are_exact_only_where_the_run_scored_every_group():
    r = [{"step": 0, "metrics": {"L_seq": 0.5001}}, {"step": 100, "metrics": {"L_seq": 0.1}}]
    assert pending(r, LOG_K, True, [Crossing(0.5)]) == []  # every group scored live: exact
    assert pending(r, LOG_K, False, [Crossing(0.5)]) == [0]  # an estimate of unknown error


@pytest.mark.parametrize("seed", range(20))
def test_settled_answers_equal_the_full_set_ones(seed):
    """Random curves whose estimates lie within Z se of the truth (what the band assumes): the
    answers on the records settled by the loop (score what ``pending`` names, repeat) equal the
    answers on the true values, for every question, and only checkpoints a walk named are scored."""
    rng = np.random.default_rng(seed)
    n = 30
    truth = np.clip(np.concatenate([1 + 0.02 * rng.standard_normal(12), np.linspace(1, 0, n - 12)]), 0, None)
    truth += 0.01 * rng.standard_normal(n)
    se = rng.uniform(0.001, 0.03, n)
    est = truth + se * rng.uniform(-Z, Z, n) * 0.99
    r = recs(est, se)
    qs = [Crossing(a) for a in (0.3, 0.4, 0.5, 0.6, 0.7)] + [Width(0.95, 0.05), Width(0.9, 0.1)]
    exact: dict[int, dict] = {}
    while need := pending(resolve(r, exact), LOG_K, False, qs):
        for s in need:
            exact[s] = {"L_seq": float(truth[s // 100]), "L_seq_se": 0.0}
    settled = resolve(r, exact)
    steps = [x["step"] for x in r]
    for q in qs:
        got = answer(q, settled, LOG_K)
        if isinstance(q, Crossing):
            assert got["tau"] == tau(steps, truth, LOG_K, q.alpha)
        else:
            assert (got["t_start"], got["t_end"]) == transition_width(steps, truth, LOG_K, q.hi, q.lo)[:2]
    assert len(exact) < n


def test_estimate_is_the_subset_mean_with_the_finite_population_standard_error():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    mean, se = estimate(x, 10)
    assert mean == pytest.approx(3.5)
    assert se == pytest.approx(np.std(x, ddof=1) / 2 * math.sqrt(1 - 4 / 10))
    assert estimate(x, 4) == (pytest.approx(3.5), 0.0)  # every group: exact


def test_the_live_subset_is_seeded_sorted_with_m_rows_per_group_and_none_for_the_whole_set():
    groups = np.arange(200)
    a, b = live_subset(20, groups, 30, 1), live_subset(20, groups, 30, 1)
    assert np.array_equal(a.groups, b.groups) and np.array_equal(a.rows, b.rows)
    assert len(a.groups) == 20 and np.all(np.diff(a.groups) > 0)
    assert a.m == 5 and a.rows.reshape(20, 30).sum(1).tolist() == [5] * 20  # 5 of each group's 30 rows
    assert live_subset(20, groups, 3, 1).m == 3  # K below 5: every row
    assert not np.array_equal(a.groups, live_subset(20, groups, 30, 2).groups)
    assert live_subset(0, groups, 30, 1) is None and live_subset(200, groups, 30, 1) is None


def test_two_stage_estimate_leaves_out_the_finite_population_factor():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    assert estimate(x, 10, rows_sampled=True)[1] == pytest.approx(np.std(x, ddof=1) / 2)
    assert estimate(x, 4, rows_sampled=True)[1] > 0  # every group, but a sample of its rows


def test_a_cache_entry_overlays_an_estimate_until_every_group_is_in():
    from mi_plateau.checkpoints.settled import overlay

    part = overlay({"L_seq": [1.0, 2.0, 3.0], "acc": [0.5, 1.0, 0.9]}, 10)
    assert part["L_seq"] == pytest.approx(2.0) and part["L_seq_se"] > 0 and "settled" not in part
    full = overlay({"L_seq": [1.0, 2.0, 3.0], "acc": [0.5, 1.0, 0.9]}, 3)
    assert full["L_seq_se"] == 0.0 and full["settled"] is True
    assert (full["cand_acc"], full["cand_groups_ge80"], full["cand_groups_100"]) == pytest.approx((0.8, 2 / 3, 1 / 3))


def test_old_configs_map_the_retired_evaluation_settings_onto_live_groups():
    base = preset("paper").to_dict()
    ev = {k: v for k, v in base["eval"].items() if k != "live_groups"}
    guarded = {**base, "eval": {**ev, "seq_subset": 20, "seq_rows": 10, "seq_guard": 5.0}}
    assert RunConfig.from_dict(guarded).eval.live_groups == 20
    capped = {**base, "task": {**base["task"], "K": 10}, "eval": {**ev, "seq_max_strings": 18000, "seq_subset": 0}}
    assert RunConfig.from_dict(capped).eval.live_groups == 0  # 200 groups of 90 strings: every group
    capped20 = {**capped, "task": {**base["task"], "K": 20}}
    assert RunConfig.from_dict(capped20).eval.live_groups == 20  # the first 47 groups: an estimate
    assert retire_eval_keys(base) is base
    with pytest.raises(Exception, match="unknown"):
        with_overrides(preset("paper"), {"eval.seq_subset": 20})


def test_l_seq_retires_live_once_decided_below_the_lowest_threshold_and_later_steps_are_unknown():
    from mi_plateau.settle import retire_live

    cfg = preset("tiny")
    lo = cfg.eval.width_lo * cfg.task.log_K
    near = [{"step": 0, "metrics": {"L_seq": lo * 0.9, "L_seq_se": lo}}]
    assert not retire_live(cfg, near)  # below, but not by Z standard errors
    clear = [{"step": 0, "metrics": {"L_seq": lo * 0.5, "L_seq_se": lo * 0.5 / (2 * Z)}}]
    assert retire_live(cfg, clear)
    floor = with_overrides(cfg, {"train.stop": "floor", "tau_on": "paper"})
    assert not retire_live(floor, clear)  # the floor (0.01 log K) is lower: L_seq stays live
    # a retired record is unknown: a question that walks past it needs it scored
    r = recs([0.9, 0.2], [0.01, 0.01]) + [
        {"step": 200, "metrics": {"L_seq": float("nan"), "L_seq_se": None, "groups_scored": 20}}
    ]
    assert pending(r, LOG_K, False, [Crossing(0.5)]) == []  # decided at 100
    assert pending(r, LOG_K, False, [Crossing(0.1)]) == [200]
