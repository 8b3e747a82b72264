"""``reproduce noise_estimator`` (Figure 2b read the original's way): the delays on hand-built
replays, the recipe on two tiny runs against the replay pass itself, the rebuild from its log,
and the one-line refusals."""

import json

import numpy as np
import pytest

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.reproduce.noise_estimator import SWEEP, estimator_rows, run_noise_estimator_recipe


def entry(p, tau, taus, **kw):
    return {"K": 10, "p": p, "run": f"p{p}", "status": "finished", "steps": 5000, "tau": tau, "tau_grid": tau,
            "draws": len(taus), "seed": 0, "every": 200, "n_sample": 32, "taus": taus, **kw}  # fmt: skip


def test_delays_on_hand_built_replays():
    clean = entry(0.0, 100, [100, 100, 200, None], steps=500)
    noisy = entry(0.2, 2000, [1600, 3200, None, 800])
    (row,) = estimator_rows({"c": clean, "n": noisy})
    # over the clean tau: 16, 32, never by 5,000 (= 50x: over), 8
    assert (row["delay_exact_q05"], row["delay_exact_q50"], row["delay_exact_q95"]) == (8.0, 16.0, 32.0)
    assert row["p_le_16x_exact"] == 0.5 and row["p_open_16x_exact"] == pytest.approx(0) and row["p_no_crossing"] == 0.25
    # paired: 16 (at most), 32 (over), never by 5,000 against 200 (over), and 800 against a clean
    # replay that never crossed by 500 (under 800 / 500 = 1.6x: at most 16x); quantiles of the known three
    assert row["p_le_16x_paired"] == 0.5 and row["p_open_16x_paired"] == pytest.approx(0)
    assert (row["delay_paired_q05"], row["delay_paired_q50"]) == (16.0, 32.0)
    assert row["exact_delay"] == 20.0 and row["no_escape_by"] is None


def test_no_escape_open_bounds_and_unpaired_settings():
    clean = entry(0.0, 100, [100, 100, 100], seed=1)
    noisy = entry(0.2, None, [None, None, 900])
    (row,) = estimator_rows({"c": clean, "n": noisy})
    assert row["no_escape_by"] == 5000 and row["exact_delay"] is None
    assert row["crossing_q50"] is None and row["crossing_q05"] == 900.0  # the median replay never crossed
    assert row["p_le_16x_exact"] == pytest.approx(1 / 3) and row["p_open_16x_exact"] == pytest.approx(
        0
    )  # 5,000 > 1,600
    assert row["delay_paired_q50"] is None and row["p_le_16x_paired"] is None  # other seeds: not paired
    short = entry(0.2, None, [None, None, 900], steps=1000)  # stopped at 10x: the two never-crossed are open
    (row,) = estimator_rows({"c": clean, "n": short})
    assert row["p_open_16x_exact"] == pytest.approx(2 / 3)


def test_the_crossing_rate_and_its_extrapolated_median():
    from mi_plateau.reproduce.noise_estimator import crossing_rate

    # reads at 200..1000: at risk 4, 3, 2, 2, 2 (13 replay-reads), 2 crossings
    rate, half = crossing_rate([200, 400, None, None], 1000, 200)
    assert rate == pytest.approx(2 / 13)
    assert half == pytest.approx(200 + 200 * (np.log(2) / -np.log(1 - 2 / 13) - 1))
    assert crossing_rate([None, None], 1000, 200) == (None, None)


@pytest.fixture(scope="module")
def noise_root(tmp_path_factory, tiny_cfg):
    from mi_plateau.config.presets import with_overrides
    from mi_plateau.train import train

    root = tmp_path_factory.mktemp("noise")
    for p in (0.0, 0.2):
        cfg = with_overrides(tiny_cfg, {"label_noise": p, "max_steps": 160})
        train(cfg, root / SWEEP / f"K{cfg.task.K}_label_noise{p}", progress=False)
    return root


def test_recipe_matches_the_replay_pass_and_rebuilds_from_its_log(noise_root, tmp_path):
    from mi_plateau.replays.sampled import sampled_tau

    docs = tmp_path / "docs"
    out = run_noise_estimator_recipe(noise_root, docs, draws=50, every=20, progress=False, static=False)
    (row,) = out["tables"]["Figure 2b, the estimator"]
    noisy = Run(noise_root / SWEEP / "K4_label_noise0.2")
    direct = sampled_tau(noisy, n_sample=32, draws=50, every=20, seed=0)
    log = json.loads((docs / "noise_estimator_log.json").read_text())
    assert log["runs"]["K4_label_noise0.2"]["taus"] == direct["taus"]
    late = np.array([np.inf if t is None else t for t in direct["taus"]], dtype=float)
    assert row["p_no_crossing"] == pytest.approx(np.isinf(late).mean())
    assert row["crossing_q50"] == (v if np.isfinite(v := np.percentile(late, 50, method="lower")) else None)
    assert row["exact_last_over_logK"] == pytest.approx(direct["exact_means"][-1][1] / np.log(4))
    assert (docs / "label_noise_estimator.md").exists()
    # the run folders gone: the table rebuilds from the log alone, the same
    again = run_noise_estimator_recipe(tmp_path / "nowhere", docs, progress=False, static=False)
    assert again["tables"] == out["tables"]


def test_without_a_clean_run_one_line_error(tmp_path):
    with pytest.raises(RunError, match="needs a clean run") as e:
        run_noise_estimator_recipe(tmp_path, tmp_path / "docs", progress=False, static=False)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "docs").exists()
    # a log that holds a noisy run only: the same line, nothing written
    (tmp_path / "docs").mkdir()
    log = {"runs": {"n": entry(0.2, None, [None])}}
    (tmp_path / "docs" / "noise_estimator_log.json").write_text(json.dumps(log))
    with pytest.raises(RunError, match="needs a clean run"):
        run_noise_estimator_recipe(tmp_path, tmp_path / "docs", progress=False, static=False)
    assert [p.name for p in (tmp_path / "docs").iterdir()] == ["noise_estimator_log.json"]
