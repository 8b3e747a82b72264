"""Bootstrap intervals over groups for Table 6: known answers on constant inputs, the point
estimate inside its interval, seeded, and the table's columns."""

import pytest

from mi_plateau.passes.tables import group_bootstrap, table6


def test_constant_groups_give_zero_width_intervals():
    ci = group_bootstrap([1.0] * 50, 200, 0)
    assert ci == {"ge80_pct_lo": 100.0, "ge80_pct_hi": 100.0, "eq100_pct_lo": 100.0, "eq100_pct_hi": 100.0,
                  "mean_acc_lo": 1.0, "mean_acc_hi": 1.0}
    assert group_bootstrap([], 200, 0) == {} and group_bootstrap([0.5], 0, 0) == {}


def test_interval_brackets_the_estimate_and_is_seeded():
    accs = [0.0] * 60 + [0.9] * 30 + [1.0] * 10  # 40% >= 0.8, 10% at 1, mean 0.37
    ci = group_bootstrap(accs, 2000, 3)
    assert ci["ge80_pct_lo"] < 40 < ci["ge80_pct_hi"] and ci["eq100_pct_lo"] < 10 < ci["eq100_pct_hi"]
    assert ci["mean_acc_lo"] < 0.37 < ci["mean_acc_hi"]
    # binomial standard error of 40% over 100 groups is 4.9 points: the 95% interval is about +-9.6
    assert ci["ge80_pct_hi"] - ci["ge80_pct_lo"] == pytest.approx(19.2, abs=3)
    assert group_bootstrap(accs, 2000, 3) == ci and group_bootstrap(accs, 2000, 4) != ci


def test_table6_rows_carry_the_intervals():
    ck = [{"step": s, "acc_mean": m, "groups_ge80": g, "groups_100": e} for s, m, g, e in
          [(0, 0.0, 0.0, 0.0), (50, 0.2, 0.1, 0.0), (100, 0.9, 0.9, 0.5)]]
    groups = [{"step": 100, "group": i, "acc": 1.0 if i < 5 else 0.8} for i in range(10)]
    t = table6("r", 4, {"first_token": 100}, ck, fracs=(1.0,), families=("first_token",), group_rows=groups, n_boot=100)
    row = t.iloc[0]
    assert row["step"] == 100 and row["ge80_pct_lo"] == row["ge80_pct_hi"] == 100.0
    assert row["eq100_pct_lo"] <= 50 <= row["eq100_pct_hi"]


def test_head_bootstrap_known_answers():
    from mi_plateau.passes.tables import head_bootstrap

    ci = head_bootstrap({"L0H0": [1.0] * 20, "L0H1": [0.5] * 20}, 300, 0)
    assert ci["L0H0"] == {"lo": 1.0, "hi": 1.0, "top_share": 1.0} and ci["L0H1"]["top_share"] == 0.0
    # two heads whose per-group deltas overlap: each is top in part of the resamples
    a = [0.0, 2.0] * 10
    b = [1.0, 1.0] * 10
    ci = head_bootstrap({"a": a, "b": b}, 2000, 1)
    assert 0.2 < ci["a"]["top_share"] < 0.8 and ci["a"]["top_share"] + ci["b"]["top_share"] == pytest.approx(1.0)
    assert ci["a"]["lo"] < 1.0 < ci["a"]["hi"] and ci["b"]["lo"] == ci["b"]["hi"] == 1.0
