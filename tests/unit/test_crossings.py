"""Crossings with intervals (``mi_plateau.crossings``) on hand-built curves with known answers,
and against a plain walk written out here."""

import math

import numpy as np
import pytest

from mi_plateau import crossings
from mi_plateau.crossings import Z_EXACT, first_below, width

STEPS = [0, 50, 100, 150, 200, 250, 300]


def test_exact_values_give_a_one_point_interval_marked_exact():
    vals = [2.3, 2.3, 2.0, 1.5, 1.0, 0.5, 0.1]
    c = first_below(STEPS, vals, [0.0] * 7, 1.15)
    assert (c.estimate, c.lo, c.hi, c.exact) == (200, 200, 200, True)
    assert c.value == 200 and c.text() == "200 (exact)"


def test_bands_that_straddle_the_threshold_widen_the_interval():
    # threshold 1.0; se 0.1 at Z 2 -> half-width 0.2
    vals = [2.0, 1.5, 1.1, 0.95, 0.85, 0.7, 0.5]
    se = [0.1] * 7
    c = first_below(STEPS, vals, se, 1.0, z=2.0)
    # lo: first with v - 0.2 < 1.0 -> 1.1 at 100; hi: first with v + 0.2 < 1.0 -> 0.7 at 250
    assert (c.estimate, c.lo, c.hi, c.exact) == (150, 100, 250, False)
    assert c.value == 150 and c.text() == "150 [100, 250] (estimate)"


def test_a_band_wide_enough_at_z_exact_keeps_it_an_estimate_but_a_settled_step_pins_it():
    vals = [2.0, 1.5, 1.05, 0.9, 0.5, 0.3, 0.2]
    se = [0.1] * 7  # at Z 4 the bands of 1.05 and 0.9 contain 1.0
    assert not first_below(STEPS, vals, se, 1.0).exact
    settled = list(se)
    settled[2] = settled[3] = 0.0  # settle scored both on the full set
    c = first_below(STEPS, vals, settled, 1.0)
    assert (c.value, c.lo, c.hi, c.exact) == (150, 150, 150, True)


def test_no_crossing_in_exact_values_is_exact_none_and_an_unknown_tail_is_censored():
    vals = [2.3, 2.2, 2.1]
    c = first_below(STEPS[:3], vals, [0.0] * 3, 1.0)
    assert c == crossings.Crossing(None, None, None, True)
    # the live evaluation stopped recording L_seq (NaN): a later crossing may lie there
    vals = [2.3, 0.6, math.nan, math.nan]
    c = first_below(STEPS[:4], vals, [0.05, 0.05, math.inf, math.inf], 0.3)
    assert (c.estimate, c.lo, c.hi, c.exact) == (None, 100, None, False)
    assert c.text() == "none [100, -] (estimate)"


def test_the_width_reads_both_ends_and_its_interval_from_them():
    steps = list(range(0, 1000, 100))
    vals = [2.3, 2.3, 2.25, 2.0, 1.5, 0.8, 0.3, 0.1, 0.05, 0.02]
    w = width(steps, vals, [0.0] * 10, 0.95 * 2.3, 0.05 * 2.3)
    assert (w["t_start"].value, w["t_end"].value, w["tau_width"].value) == (200, 700, 500)
    assert all(c.exact for c in w.values())
    se = [0.02] * 10
    w = width(steps, vals, se, 0.95 * 2.3, 0.05 * 2.3, z=2.0)
    # t_end: lo = first v - 0.04 < 0.115 -> 0.1 at 700; hi = first v + 0.04 < 0.115 -> 0.05 at 800
    assert (w["t_end"].lo, w["t_end"].hi) == (700, 800)
    assert not w["t_end"].exact
    lo_w, hi_w = w["tau_width"].lo, w["tau_width"].hi
    assert lo_w <= w["tau_width"].estimate <= hi_w
    assert lo_w == w["t_end"].lo - w["t_start"].hi and hi_w == w["t_end"].hi - w["t_start"].lo


def plain_interval(vals, ses, t, z):
    """The definition written as a loop: every index that could be the first below t."""
    could = []
    for i in range(len(vals)):
        if all(vals[j] - z * ses[j] >= t for j in range(i)) and vals[i] - z * ses[i] < t:
            could.append(i)
    lo = could[0] if could else None
    hi = next((i for i in range(len(vals)) if vals[i] + z * ses[i] < t), None)
    return lo, hi


@pytest.mark.parametrize("seed", range(20))
def test_the_interval_is_the_plain_definitions_and_holds_the_estimate(seed):
    rng = np.random.default_rng(seed)
    n = 30
    truth = 2.3 / (1 + np.exp((np.arange(n) - rng.uniform(8, 22)) / rng.uniform(0.5, 3)))
    se = rng.uniform(0.01, 0.2, n)
    vals = truth + se * rng.standard_normal(n)
    steps = list(range(0, 50 * n, 50))
    for t in (0.5, 1.0, 1.5):
        c = first_below(steps, list(vals), list(se), t, z=2.0)
        lo, hi = plain_interval(vals, se, t, 2.0)
        if not c.exact:
            assert c.lo == (None if lo is None else steps[lo]) and c.hi == (None if hi is None else steps[hi])
        if c.estimate is not None and c.hi is not None:
            assert c.lo <= c.estimate <= c.hi
        exact4 = plain_interval(vals, se, t, Z_EXACT)
        assert c.exact == (exact4[0] is not None and exact4[0] == exact4[1])


def test_a_family_without_values_has_no_crossing_and_no_interval():
    c = first_below(STEPS[:3], [math.nan] * 3, [math.inf] * 3, 1.0)
    assert c == crossings.Crossing(None, None, None, False)
    w = width(STEPS[:3], [math.nan] * 3, [math.inf] * 3, 2.0, 0.1)
    assert all(x.lo is None and x.hi is None and x.value is None for x in w.values())


def test_old_records_without_a_standard_error_read_exact_or_as_unknown_estimates():
    """Records written before ``L_seq_se`` existed: exact where the run scored every group live,
    estimates of unknown error otherwise (their interval spans the run until settled)."""
    from mi_plateau.config import preset, with_overrides
    from mi_plateau.summaries import family_summary

    vals = [1.5, 1.4, 1.0, 0.5, 0.2, 0.05]
    recs = [{"step": s, "metrics": {"L_seq": v, "Lc": v}} for s, v in zip(STEPS, vals)]
    every = preset("tiny")  # live_groups 0: every group scored live
    d = family_summary(every, recs, "paper")
    assert (d["tau"], d["tau_exact"]) == (150, True)  # first below 0.5 log 4 = 0.693
    subset = with_overrides(every, {"eval.live_groups": 20})
    d = family_summary(subset, recs, "paper")
    assert not d["tau_exact"] and d["tau"] == 150 and d["tau_lo"] == 0 and d["tau_hi"] is None
