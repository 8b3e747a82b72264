"""The scorecard's verdict rule (mi_plateau/scorecard/verdicts.py) on hand-built points: each
verdict once, the prediction interval against its formula written out, the pooled spread by hand,
and a row's verdict from its points."""

from __future__ import annotations

import math
import statistics

import pytest

from mi_plateau.scorecard import verdicts as vd
from mi_plateau.scorecard.verdicts import point

T2, T4 = 4.302652729911275, 2.7764451051977987  # t(0.975) at 2 and 4 degrees of freedom


def _judge(*args, spreads=None, explained=False, **kw):
    return vd.judge(point(*args, **kw), spreads, explained)


def test_the_t_quantile():
    assert vd.t975(2) == pytest.approx(T2) and vd.t975(4) == pytest.approx(T4)


def test_three_runs_give_the_prediction_interval_on_the_log_scale_for_times():
    vals = [1800, 2050, 1875]
    ys = [math.log(v) for v in vals]
    half = T2 * statistics.stdev(ys) * math.sqrt(1 + 1 / 3)
    j = _judge("K = 10", 1850, vals, kind="tau")
    assert j["est"] == pytest.approx(math.exp(statistics.fmean(ys)))
    assert (j["lo"], j["hi"]) == pytest.approx(
        (math.exp(statistics.fmean(ys) - half), math.exp(statistics.fmean(ys) + half))
    )
    assert j["n"] == 3 and j["how"] == "prediction interval over 3 runs"
    assert j["hi"] / j["lo"] < 2 and j["verdict"] == vd.CONSISTENT  # 1.94x wide, 1,850 inside


def test_a_linear_quantity_keeps_its_own_scale():
    vals = [2.36, 2.37, 2.35]
    half = T2 * statistics.stdev(vals) * math.sqrt(4 / 3)
    j = _judge("len_z 2", 2.39, vals, kind="plateau")
    assert (j["lo"], j["hi"]) == pytest.approx((2.36 - half, 2.36 + half))
    assert j["verdict"] == vd.CONSISTENT  # 2.39 lies within 2.36 +- 0.0497


def test_outside_is_differs_with_the_ratio_and_the_distance_in_half_widths():
    vals = [1000, 1010, 990, 1005, 995]
    j = _judge("K = 7", 1500, vals, kind="tau")
    ys = [math.log(v) for v in vals]
    half = T4 * statistics.stdev(ys) * math.sqrt(1 + 1 / 5)
    away = (math.log(1500) - statistics.fmean(ys)) / half
    assert j["verdict"] == vd.DIFFERS
    assert j["distance"] == f"ours / paper {j['est'] / 1500:.2f}, {away:.1f} half-widths"
    assert _judge("K = 7", 1500, vals, kind="tau", explained=True)["verdict"] == vd.EXPLAINED
    # an explanation does not hide agreement
    assert _judge("K = 7", 1000, vals, kind="tau", explained=True)["verdict"] == vd.CONSISTENT


def test_the_paper_value_is_compared_at_its_printed_decimals():
    vals = [3.55, 3.56, 3.57, 3.56]  # the interval ends round to 3.6 at one decimal
    assert _judge("r", 3.6, vals, kind="plateau")["verdict"] == vd.CONSISTENT
    assert _judge("r", 3.6, vals, kind="plateau", digits=2)["verdict"] == vd.DIFFERS
    # a linear quantity has no factor-2 rule: an interval around zero decides by inside / outside
    assert _judge("cos", 0.0, [0.1, -0.1, 0.05], kind="cos")["verdict"] == vd.CONSISTENT


def test_a_fit_reads_its_own_interval():
    j = _judge("delta", 1.19, [1.16], (1.08, 1.23), kind="slope", how="95% bootstrap over runs", n=7)
    assert (j["lo"], j["hi"], j["n"], j["verdict"]) == (1.08, 1.23, 7, vd.CONSISTENT)
    assert _judge("delta", 1.19, [1.26], (1.21, 1.31), kind="slope")["verdict"] == vd.DIFFERS


def test_one_run_borrows_the_pooled_spread_of_its_quantity():
    conds = {"K = 5": [950, 1000, 1050], "K = 10": [1800, 2050, 1875], "K = 20": [4000, 4250, 4100, 4400]}
    sp = vd.pooled(conds, log=True)
    by_hand = [(len(v) - 1, statistics.stdev([math.log(x) for x in v])) for v in conds.values()]
    assert sp.df == 7 and sp.sd == pytest.approx(math.sqrt(sum(d * s * s for d, s in by_hand) / 7))
    assert sp.basis == "K = 5 (3 runs), K = 10 (3 runs), K = 20 (4 runs)"
    j = _judge("K = 25", 5250, [6375], kind="tau", spreads={"tau": sp})
    half = vd.t975(7) * sp.sd * math.sqrt(2)
    assert (j["lo"], j["hi"]) == pytest.approx((6375 * math.exp(-half), 6375 * math.exp(half)))
    assert j["how"].startswith("pooled sd of log tau: K = 5 (3 runs)")
    assert j["verdict"] == vd.DIFFERS  # 5,250 lies below 6,375 / exp(0.21)
    # a ratio of two runs' values: the pooled spread sqrt 2 wider
    r = _judge("ratio", 3.0, [3.2], kind="tau", ratio_of=True, spreads={"tau": sp})
    assert math.log(r["hi"] / 3.2) == pytest.approx(half / math.sqrt(2) * math.sqrt(2) * math.sqrt(2))
    # a linear quantity pools coefficients of variation; a condition under 3 runs does not count
    lin = vd.pooled({"a": [1.0, 1.1, 0.9], "b": [5.0, 6.0]}, log=False)
    assert (lin.df, lin.sd, lin.basis) == (2, pytest.approx(0.1), "a (3 runs)")
    assert vd.pooled({"b": [5.0, 6.0]}, log=True) is None


def test_crossing_intervals_widen_the_interval_in_quadrature():
    vals = [1800, 2050, 1875]
    base = _judge("K = 10", 1850, vals, kind="tau")
    wide = _judge("K = 10", 1850, vals, kind="tau", crossings=[(1700, 1900), (2000, 2100), (1800, 1950)])
    ys = [math.log(v) for v in vals]
    w = [(math.log(b) - math.log(a)) / 2 for a, b in [(1700, 1900), (2000, 2100), (1800, 1950)]]
    half = math.hypot(T2 * statistics.stdev(ys) * math.sqrt(4 / 3), math.sqrt(statistics.fmean(x * x for x in w)))
    assert math.log(wide["hi"] / wide["est"]) == pytest.approx(half)
    assert wide["hi"] > base["hi"] and wide["how"].endswith("widened by the crossing intervals")


def test_a_mean_of_three_runs_has_a_narrower_interval_than_one_run():
    vals = [2325, 5100, 10275]
    one, mean3 = _judge("w", 2850, vals, kind="width"), _judge("w", 2850, vals, kind="width", of_mean=3)
    ratio = math.log(mean3["hi"] / mean3["est"]) / math.log(one["hi"] / one["est"])
    assert ratio == pytest.approx(math.sqrt(2 / 3) / math.sqrt(4 / 3))


def test_no_interval_or_a_wide_one_or_a_censored_one_is_inconclusive():
    j = _judge("B = 32", 23200, [30000], kind="tau")
    assert (j["verdict"], j["lo"]) == (vd.INCONCLUSIVE, None)
    assert j["distance"] == "1 run and no pooled spread of tau"
    assert _judge("w", 2850, [2325, 5100, 10275], kind="width")["verdict"] == vd.INCONCLUSIVE
    # our runs stopped before the quantity was reached: a bound below the paper's value decides nothing
    j = _judge("K = 36", 8750, censored=6000)
    assert j["verdict"] == vd.INCONCLUSIVE and j["distance"].startswith("censored: ours > 6,000")
    # a bound already past the paper's value: ours differs
    assert _judge("K = 36", 8750, censored=12000)["verdict"] == vd.DIFFERS


def test_without_an_interval_even_an_equal_value_decides_nothing():
    j = _judge("0.25 tau", 0.0, [0.0], kind="pct")
    assert j["verdict"] == vd.INCONCLUSIVE and j["distance"] == "1 run and no pooled spread of pct"


def test_outside_a_wide_interval_still_differs():
    j = _judge("B = 128", 30000, [500, 1000, 1500], kind="tau")
    assert j["hi"] / j["lo"] > 2 and j["hi"] < 30000 and j["verdict"] == vd.DIFFERS


def test_runs_that_have_not_decided_the_quantity_are_censored():
    j = _judge("K = 10, lr 0.003", 5950, pending="2 of 3 seeds undecided", kind="width")
    assert (j["verdict"], j["distance"]) == (vd.INCONCLUSIVE, "censored: 2 of 3 seeds undecided")


def test_no_number_of_ours_is_not_run():
    assert _judge("K = 36", 8750)["verdict"] == vd.NOT_RUN
    assert _judge("K = 36", None, [1.0])["verdict"] == vd.NOT_RUN


def test_a_row_takes_its_most_severe_point_and_counts_them():
    pts = [
        vd.judge(point("a", 1.0, [1.0, 1.01, 0.99], kind="x")),
        vd.judge(point("b", 1.5, [1.0, 1.01, 0.99], kind="x")),
        vd.judge(point("c", 1.0, [5.0], kind="x")),
        vd.judge(point("d", 1.0)),
    ]
    v, why = vd.row_verdict(pts)
    assert v == vd.DIFFERS
    assert why.startswith("1 differs, 1 inconclusive, 1 consistent, 1 not run (of 4 points); b: ours / paper 0.67")
    assert vd.row_verdict(pts[:1] + pts[2:])[0] == vd.INCONCLUSIVE
    assert vd.row_verdict([pts[0]]) == (vd.CONSISTENT, "1 consistent (of 1 points)")
    assert vd.row_verdict([pts[3]]) == (vd.NOT_RUN, "no number of ours yet")
    assert vd.row_verdict([], agree=[True, True]) == (vd.SAME, "the paper's verdict or sign in 2 of 2 cases")
    assert vd.row_verdict([], agree=[True, False])[0] == vd.OTHER


def test_a_table_with_several_runs_of_a_condition_gives_one_value_per_run(tmp_path):
    import json

    from mi_plateau.scorecard.scoring import pairs

    rows = [{"len_z": 1, "seed": s, "tau_paper": t} for s, t in ((0, 2000), (1, 2200), (2, 2100))]
    rows.append({"len_z": 2, "seed": 0, "tau_paper": 1500, "lo": 1400, "hi": 1600})
    (tmp_path / "t.json").write_text(json.dumps(rows))
    read = pairs("t.json", {1: 1650, 2: 1600}, "tau_paper", "len_z {}", ("len_z",), ("lo", "hi"), kind="tau")
    one, two = read(tmp_path)["points"]
    assert one["vals"] == [2000, 2200, 2100] and one["n"] == 3 and one["iv"] is None  # the seeds' spread
    assert two["vals"] == [1500] and two["iv"] == (1400, 1600)  # one run: its own interval
    est = [
        r | {"tau_lo": r["tau_paper"] - 50, "tau_hi": r["tau_paper"] + 50, "exact": s == 2} for s, r in enumerate(rows)
    ]
    (tmp_path / "t.json").write_text(json.dumps(est))
    cross = {"tau_paper": ("tau_lo", "tau_hi", "exact")}
    one = pairs("t.json", {1: 1650}, "tau_paper", "len_z {}", ("len_z",), kind="tau", cross=cross)(tmp_path)["points"][
        0
    ]
    assert one["crossings"] == [(1950, 2050), (2150, 2250)]  # seed 2's crossing is exact: no interval
