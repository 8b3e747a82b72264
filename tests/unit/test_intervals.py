"""Bootstrap intervals over groups for Table 6: known answers on constant inputs, the point
estimate inside its interval, seeded, and the table's columns."""

import pytest

from mi_plateau.passes.bootstrap import group_bootstrap
from mi_plateau.passes.table6_9 import table6


def test_constant_groups_give_zero_width_intervals():
    ci = group_bootstrap([1.0] * 50, 200, 0)
    assert ci == {
        "ge80_pct_lo": 100.0,
        "ge80_pct_hi": 100.0,
        "eq100_pct_lo": 100.0,
        "eq100_pct_hi": 100.0,
        "mean_acc_lo": 1.0,
        "mean_acc_hi": 1.0,
    }
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
    ck = [
        {"step": s, "acc_mean": m, "groups_ge80": g, "groups_100": e}
        for s, m, g, e in [(0, 0.0, 0.0, 0.0), (50, 0.2, 0.1, 0.0), (100, 0.9, 0.9, 0.5)]
    ]
    groups = [{"step": 100, "group": i, "acc": 1.0 if i < 5 else 0.8} for i in range(10)]
    t = table6("r", 4, {"first_token": 100}, ck, fracs=(1.0,), families=("first_token",), group_rows=groups, n_boot=100)
    row = t.iloc[0]
    assert row["step"] == 100 and row["ge80_pct_lo"] == row["ge80_pct_hi"] == 100.0
    assert row["eq100_pct_lo"] <= 50 <= row["eq100_pct_hi"]


def test_head_bootstrap_known_answers():
    from mi_plateau.passes.bootstrap import head_bootstrap

    ci = head_bootstrap({"L0H0": [1.0] * 20, "L0H1": [0.5] * 20}, 300, 0)
    assert ci["L0H0"] == {"lo": 1.0, "hi": 1.0, "top_share": 1.0} and ci["L0H1"]["top_share"] == 0.0
    # two heads whose per-group deltas overlap: each is top in part of the resamples
    a = [0.0, 2.0] * 10
    b = [1.0, 1.0] * 10
    ci = head_bootstrap({"a": a, "b": b}, 2000, 1)
    assert 0.2 < ci["a"]["top_share"] < 0.8 and ci["a"]["top_share"] + ci["b"]["top_share"] == pytest.approx(1.0)
    assert ci["a"]["lo"] < 1.0 < ci["a"]["hi"] and ci["b"]["lo"] == ci["b"]["hi"] == 1.0


def test_resample_counts_are_the_same_draws_as_the_table_bootstraps():
    import numpy as np

    from mi_plateau.passes.bootstrap import head_bootstrap, resample_counts

    C = resample_counts(7, 50, 3)
    assert C.shape == (50, 7) and (C.sum(1) == 7).all()
    x = np.arange(7.0) ** 2
    means = C @ x / 7
    ci = head_bootstrap({"h": list(x)}, 50, 3)
    assert ci["h"]["lo"] == pytest.approx(np.quantile(means, 0.025)) and ci["h"]["hi"] == pytest.approx(
        np.quantile(means, 0.975)
    )


def test_half_rise_of_many_curves_equals_the_one_curve_rule():
    import numpy as np

    from mi_plateau.passes.curves import half_rise_many, half_rise_step

    rng = np.random.default_rng(0)
    steps = list(range(0, 1000, 50))
    curves = np.cumsum(rng.normal(0.1, 1.0, size=(200, len(steps))), axis=1)
    got = half_rise_many(steps, curves)
    want = [half_rise_step(steps, list(c)) for c in curves]
    assert any(w is None for w in want) and any(w is not None for w in want)
    for g, w in zip(got, want):
        assert (np.isnan(g) and w is None) or g == w


def _routing_rows(heads_by_group):
    """head_group rows and group rows for two heads whose per-group score curves are given as
    {head: [curve of group 0, curve of group 1, ...]}, steps 0, 100, ..."""
    hg = [
        {"step": 100 * i, "head": h, "group": g, "sel_attn": v, "swap_contrib": v}
        for h, curves in heads_by_group.items()
        for g, c in enumerate(curves)
        for i, v in enumerate(c)
    ]
    n = len(next(iter(heads_by_group.values()))[0])
    groups = [{"step": 100 * i, "group": g, "swap_gap": 0.05 * i} for g in range(2) for i in range(n)]
    return hg, groups


def test_routing_intervals_known_answers():
    from mi_plateau.passes.bootstrap import routing_intervals

    rise = [0.0, 0.0, 0.1, 0.9, 1.0, 1.0]  # half of the rise reached at step 300
    hg, groups = _routing_rows({"L0H0": [rise] * 2, "L0H1": [rise] * 2})
    out = {"tau": 400, "tau_first_token": 600, "routing_head": "L0H0", "top_attention_head": "L0H1"}
    ci = routing_intervals(out, hg, groups, 200, 0)
    # identical groups: every resample gives t_r = 300, the swap gap (0.05 per step) > 0.1 at 300
    assert ci["routing_lead_sel_attn_lo"] == ci["routing_lead_sel_attn_hi"] == pytest.approx(0.25)
    assert ci["routing_lead_swap_contrib_first_token_lo"] == pytest.approx(0.5)
    assert ci["top_attention_lead_sel_attn_hi"] == pytest.approx(0.25)
    assert ci["swap_gap_0.1_frac_tau_lo"] == ci["swap_gap_0.1_frac_tau_hi"] == pytest.approx(300 / 400)
    # groups that rise at different times: the interval spans the two groups' rise times
    early, late = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    hg, groups = _routing_rows({"L0H0": [early, late] * 10, "L0H1": [rise] * 20})
    ci = routing_intervals(out, hg, groups, 500, 1)
    assert ci["routing_lead_sel_attn_lo"] < ci["routing_lead_sel_attn_hi"]
    assert (400 - 500) / 400 <= ci["routing_lead_sel_attn_lo"] and ci["routing_lead_sel_attn_hi"] <= (400 - 100) / 400
    assert routing_intervals(out, hg, groups, 0, 0) == {}


def test_swap_gap_intervals_per_checkpoint():
    from mi_plateau.passes.bootstrap import swap_gap_intervals

    groups = [
        {
            "step": s,
            "group": g,
            "swap_gap": (0.2 if g % 2 else 0.0) * s / 100,
            "swap_gap_seq": float("nan") if s else 0.3,
        }
        for s in (0, 100)
        for g in range(40)
    ]
    t = swap_gap_intervals(groups, 400, 0).set_index("step")
    assert t.loc[0, "swap_gap_lo"] == t.loc[0, "swap_gap_hi"] == 0.0
    assert t.loc[100, "swap_gap_lo"] < 0.1 < t.loc[100, "swap_gap_hi"]
    assert t.loc[0, "swap_gap_seq_lo"] == pytest.approx(0.3) and t.loc[100].isna()["swap_gap_seq_lo"]


def test_report_tables_fold_intervals_into_their_column():
    from mi_plateau.report import fold_intervals, html_table

    rows = [
        {"head": "L0H2", "dL": 0.013, "dL_lo": 0.0109, "dL_hi": 0.0151, "top_share": 0.985},
        {"head": "L0H3", "dL": 0.004, "dL_lo": None, "dL_hi": None, "top_share": 0.0},
    ]
    cols, out = fold_intervals(rows, list(rows[0]))
    assert cols == ["head", "dL [95% CI]", "top_share"]
    assert out[0]["dL [95% CI]"] == "0.013 [0.0109, 0.0151]" and out[1]["dL [95% CI]"] == "0.004"
    assert rows[0]["dL_lo"] == 0.0109  # the caller's rows are not changed
    page = html_table(rows)
    assert "<th>dL [95% CI]</th>" in page and "dL_lo" not in page and "0.013 [0.0109, 0.0151]" in page
    assert fold_intervals([{"a_lo": 1}], ["a_lo"]) == (["a_lo"], [{"a_lo": 1}])  # no base column: left alone
