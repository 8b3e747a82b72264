"""The original's tau estimator, and the width read off it, replayed on hand-built per-example
losses: known answers, and the width against a plain reading of the same draws."""

import math

import numpy as np
import pytest

from mi_plateau.replays.sampled import condition_spread, estimates, estimator_grid, replay_taus, replay_widths
from mi_plateau.summaries import transition_width

K = 5
THR = 0.5 * math.log(K)


def _flat(value, n_groups=200):
    return np.full(n_groups * K, value)


def test_without_spread_between_examples_every_replay_crosses_at_the_exact_step():
    steps = [0, 50, 100, 150]
    losses = [_flat(1.7), _flat(1.2), _flat(0.7), _flat(0.1)]
    taus, exact = replay_taus(steps, losses, K, THR, draws=300)
    assert np.all(taus == 100) and exact == 100


def test_the_exact_means_are_given_at_every_step_read_and_no_further():
    """Each read's exact mean lands in ``means``; the reading stops where every replay and the
    mean have crossed (here at 100), so 150 is never read."""
    means = []
    half = np.repeat(np.r_[np.zeros(100), np.full(100, 2.0)], K)
    replay_taus([0, 50, 100, 150], [_flat(1.7), half, _flat(0.1), _flat(0.0)], K, THR, draws=40, means=means)
    assert means == [(0, pytest.approx(1.7)), (50, pytest.approx(1.0)), (100, pytest.approx(0.1))]


def test_never_below_the_threshold_gives_no_tau():
    taus, exact = replay_taus([0, 50], [_flat(1.7), _flat(0.9)], K, THR, draws=50)
    assert np.isnan(taus).all() and exact is None


def test_the_share_crossing_early_is_the_binomial_tail():
    """Half the groups at loss 0, half at 2: a 32-group estimate is 2 x (share of high groups)
    and falls below log(5)/2 when at most 12 of the 32 draws are high groups."""
    half = np.repeat(np.r_[np.zeros(100), np.full(100, 2.0)], K)
    taus, exact = replay_taus([0, 50, 100], [_flat(1.7), half, _flat(0.0)], K, THR, draws=20000, seed=3)
    assert exact == 100  # the mean at 50 is 1.0, above log(5)/2
    p = sum(math.comb(32, j) for j in range(13)) / 2**32  # P(Binomial(32, 1/2) <= 12) = 0.108
    assert np.mean(taus == 50) == pytest.approx(p, abs=0.01)
    assert np.all((taus == 50) | (taus == 100))


def test_replays_do_not_depend_on_where_the_scoring_stopped():
    rng = np.random.default_rng(0)
    losses = [np.abs(rng.normal(m, 0.8, 200 * K)) for m in (1.6, 1.3, 1.0, 0.8, 0.5)] + [_flat(0.0)] * 3
    steps = list(range(0, 400, 50))
    called = []

    def lazily(step):
        called.append(step)
        return losses[steps.index(step)]

    eager, _ = replay_taus(steps, losses, K, THR, draws=500, seed=7)
    lazy, _ = replay_taus(steps, lazily, K, THR, draws=500, seed=7)
    np.testing.assert_array_equal(eager, lazy)
    assert not np.isnan(lazy).any() and len(np.unique(lazy)) > 2  # the replays differ, and all crossed
    assert called == steps[: steps.index(int(lazy.max())) + 1]  # read no further than the last crossing
    assert called[-1] <= 250


def test_scoring_goes_on_until_the_exact_mean_has_crossed_too():
    """One group at a huge loss: a replay that does not draw it (seed 0's does not) crosses at
    50, while the exact mean, pulled up by that group, crosses only at 150."""
    spiky = np.repeat(np.r_[np.zeros(199), [1000.0]], K)  # mean 1000 / 200 = 5 > threshold
    called = []

    def lazily(step):
        called.append(step)
        return {0: _flat(1.7), 50: spiky, 100: spiky, 150: _flat(0.0), 200: _flat(0.0)}[step]

    taus, exact = replay_taus([0, 50, 100, 150, 200], lazily, K, THR, draws=1, seed=0)
    assert exact == 150 and called == [0, 50, 100, 150]
    assert taus[0] == 50


def test_the_grid_is_the_lattice_of_every_where_the_run_has_it():
    # every 50, then every 25 through a transition, then every 50 off the 50-step lattice
    steps = [0, 50, 100, 125, 150, 175, 200, 225, 275, 325]
    assert estimator_grid(steps, 50) == [0, 50, 100, 150, 200, 275, 325]
    assert estimator_grid([0, 25, 75, 125], 50) == [0, 75, 125]
    assert estimator_grid([], 50) == []
    # back on the lattice as soon as the run is: 125 -> 175 skipped 150, then 200 is kept
    assert estimator_grid([0, 50, 100, 125, 175, 200, 250], 50) == [0, 50, 100, 175, 200, 250]
    # a widened spacing keeps its own checkpoints, no step twice
    assert estimator_grid([0, 50, 100, 200, 400, 800, 825, 850], 50) == [0, 50, 100, 200, 400, 800, 850]
    assert estimator_grid([30, 60, 90, 120], 50) == [30, 60, 120]


LOGK = math.log(K)


def test_without_spread_every_replays_width_is_the_exact_width():
    fracs = [1.0, 0.97, 0.9, 0.96, 0.5, 0.2, 0.04, 0.02]  # t_start 150 (0.96 after a dip), t_end 300
    steps = [50 * i for i in range(len(fracs))]
    t_start, t_end, exact = replay_widths(steps, [_flat(f * LOGK) for f in fracs], K, 0.95 * LOGK, 0.05 * LOGK)
    assert exact == (150, 300) and np.all(t_start == 150) and np.all(t_end == 300)
    assert transition_width(steps, [f * LOGK for f in fracs], LOGK)[:2] == exact


def test_width_replay_reads_each_draw_as_the_plain_rule_would():
    rng = np.random.default_rng(3)
    steps = list(range(0, 1000, 50))
    # per-example losses with a wide spread: the mean falls from log K to 0 over the run, each
    # example's loss is that mean times an exponential factor (heavy tail, as in the transition)
    means = np.linspace(1.05, 0.0, len(steps)) * LOGK
    losses = [m * rng.exponential(size=200 * K) for m in means]
    draws = 64
    t_start, t_end, exact = replay_widths(steps, losses, K, 0.95 * LOGK, 0.05 * LOGK, n_sample=8, draws=draws)
    est = np.stack([estimates(L.reshape(-1, K), s, 8, draws, 0) for s, L in zip(steps, losses)])
    for d in range(draws):
        want = transition_width(steps, list(est[:, d]), LOGK)
        got = (None if np.isnan(t_start[d]) else int(t_start[d]), None if np.isnan(t_end[d]) else int(t_end[d]))
        assert got == want[:2], d
    assert exact == transition_width(steps, [float(L.mean()) for L in losses], LOGK)[:2]
    assert np.nanmin(t_end) < exact[1]  # the noisy estimate reaches the bottom line first in some replays


def test_width_replay_stops_scoring_once_every_replay_and_the_mean_have_ended():
    fracs = [1.0, 0.5, 0.01, 0.01, 0.01]
    asked = []

    def losses(step):
        asked.append(step)
        return _flat(fracs[step // 50] * LOGK)

    replay_widths([0, 50, 100, 150, 200], losses, K, 0.95 * LOGK, 0.05 * LOGK, draws=20)
    assert asked == [0, 50, 100]


def _result(run, recorded, widths, grid=None, **settings):
    return {
        "run": run,
        "draws": len(widths),
        "width_recorded": [0, recorded, recorded],
        "width_exact_grid": [0, grid or recorded, grid or recorded],
        "widths": widths,
        **{"n_sample": 32, "every": 50, "seed": 0, "hi": 0.95, "lo": 0.05} | settings,
    }


def test_a_conditions_mean_and_cv_per_replay_pair_the_seeds_replays():
    got = condition_spread([_result("a", 1000, [100, 200, None], 2000), _result("b", 3000, [300, 200, 400])])
    assert got["exact"] == {"mean": 2000.0, "std": 1000.0, "cv": 0.5}  # ddof 0
    assert got["exact_grid"] == {"mean": 2500.0, "std": 500.0, "cv": 0.2} and got["every"] == 50
    assert got["replays_with_every_seed"] == 2  # the third replay has a seed that never ended
    assert (got["mean"]["min"], got["mean"]["max"]) == (200.0, 200.0)
    assert (got["cv"]["min"], got["cv"]["max"]) == (0.0, 0.5) and got["std"]["mean"] == 50.0
    none = condition_spread([_result("a", 1, [None]), _result("b", 1, [5])])
    assert none["replays_with_every_seed"] == 0 and none["mean"] is None
    with pytest.raises(ValueError, match="differ in draws"):
        condition_spread([_result("a", 1, [1]), _result("b", 1, [1, 2])])
    with pytest.raises(ValueError, match="differ in every"):
        condition_spread([_result("a", 1, [1]), _result("b", 1, [1], every=25)])
    with pytest.raises(ValueError, match="two or more"):
        condition_spread([_result("a", 1, [1])])


def test_width_replays_do_not_depend_on_where_the_scoring_stopped():
    rng = np.random.default_rng(1)
    means = [1.05, 1.0, 0.9, 0.6, 0.3, 0.1, 0.06, 0.04, 0.02, 0.01, 0.01, 0.01]
    losses = [m * LOGK * rng.exponential(size=200 * K) for m in means]
    steps = [50 * i for i in range(len(means))]
    called = []

    def lazily(step):
        called.append(step)
        return losses[steps.index(step)]

    args = (K, 0.95 * LOGK, 0.05 * LOGK)
    eager = replay_widths(steps, losses, *args, n_sample=8, draws=300, seed=5)
    lazy = replay_widths(steps, lazily, *args, n_sample=8, draws=300, seed=5)
    for a, b in zip(eager[:2], lazy[:2]):
        np.testing.assert_array_equal(a, b)
    assert eager[2] == lazy[2] == (50, 350)
    ends = lazy[1]
    assert not np.isnan(ends).any() and ends.max() > 350  # some replays end after the mean does
    assert called == steps[: steps.index(int(ends.max())) + 1]  # read until the last replay ended


def test_command_pairs_the_seeds_written_by_summary_and_names_itself(tmp_path, capsys):
    import json

    from mi_plateau.checkpoints.files import code_commit
    from mi_plateau.cli import main

    files = []
    for name, res in (("a", _result("a", 1000, [100, 200], 2000)), ("b", _result("b", 3000, [300, 400]))):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({"tau": 1, "sampled_width": res}))
    out = tmp_path / "condition.json"
    assert main(["sampled-pairs", *map(str, files), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    want = condition_spread([_result("a", 1000, [100, 200], 2000), _result("b", 3000, [300, 400])])
    assert doc["condition"] == json.loads(json.dumps(want))  # what the function gives, through JSON
    assert doc["command"] == f"mi-plateau sampled-pairs {files[0]} {files[1]} --out {out}"
    assert doc["commit"] == code_commit() and len(doc["date"]) == 10
    assert main(["sampled-pairs", *map(str, files)]) == 0
    assert json.loads(capsys.readouterr().out)["condition"] == doc["condition"]
    (tmp_path / "bare.json").write_text(json.dumps({"tau": 1}))
    assert main(["sampled-pairs", str(tmp_path / "bare.json"), str(files[0])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mi-plateau sampled-pairs: error: ") and "bare.json: no sampled_width in it" in err
