"""The L_seq spread statistics behind the guard's sample size: known values on hand-built rows,
and one pass over a tiny run."""

import math

import numpy as np

from mi_plateau.bench.spread import run_spread, spread_row


def test_spread_known_values():
    seq = np.array([1.0, 3.0, 2.0, 4.0])  # K = 2: groups [1, 3] and [2, 4], means 2 and 3
    out = spread_row(seq, seq - 0.5, K=2)  # Lc a constant below L_seq: a perfect control variate
    assert math.isclose(out["sd_row"] ** 2, np.var(seq, ddof=1)) and math.isclose(out["sd_group"] ** 2, 0.5)
    assert math.isclose(out["design_effect"], 2 * 0.5 / np.var(seq, ddof=1))  # 0.6: whole groups do better
    assert out["cv_factor_row"] == 0.0 and out["cv_factor_group"] == 0.0
    unrelated = spread_row(seq, np.zeros(4), K=2)  # Lc carries nothing: no variance removed
    assert unrelated["cv_factor_row"] == 1.0 and unrelated["cv_factor_group"] == 1.0


def test_first_stage_standard_errors_known_values():
    # K = 4, three groups: means 2.5, 3.5, 4.5 (S_1^2 = 1), within-group variance 5/3 in each
    seq = np.array([1.0, 2.0, 3.0, 4.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 6.0])
    out = spread_row(seq, seq, K=4, subset=2, rows=2)
    assert math.isclose(out["se_groups"] ** 2, (1 - 2 / 3) * 1.0 / 2)  # with the finite-population factor
    assert math.isclose(out["se_rows"] ** 2, (1.0 + (1 - 2 / 4) * (5 / 3) / 2) / 2)
    assert math.isclose(spread_row(seq, seq, K=4, subset=2, rows=9)["se_rows"] ** 2, 1.0 / 2)  # every row


def test_spread_over_a_tiny_run(tiny_run):
    out = run_spread(tiny_run.path if hasattr(tiny_run, "path") else tiny_run, every=5)
    assert len(out["rows"]) >= 2 and out["rows"][0]["step"] == 0
    assert all(r["sd_row"] >= 0 and math.isfinite(r["design_effect"]) for r in out["rows"])
