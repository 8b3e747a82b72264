"""The scorecard's forest plot on hand-built points with known answers: one row per point, x =
log2(ours / paper) and its interval on the same scale, the points without a ratio in the second
panel at ours - paper, colours by verdict, no marker where not run; and its page."""

import math

import pytest

from mi_plateau.figures import SAME_SYMBOLS, VERDICT_COLOURS, forest
from mi_plateau.report import scorecard_report


def pt(artifact, label, paper, ours, lo=None, hi=None, n=1, verdict="consistent", same="yes", **kw):
    return dict(artifact=artifact, label=label, paper=paper, ours=ours, lo=lo, hi=hi, n=n, verdict=verdict, same=same)


POINTS = [
    pt("Table 3", "K = 10", 2150, 2600, 2200, 3100, n=3),
    pt("Table 3", "K = 20", 4300, 3000, 2800, 3300, verdict="differs"),
    pt("Table 3", "K = 36", 8750, None, n=0, verdict="not run"),
    pt("Table 6", "0.25 tau: % >= 80%", 0.0, 5.0, n=3, verdict="inconclusive", same="reduced budget"),
    pt("Table 10", "anisotropy", 21.0, 30.0, 25.0, 36.0, verdict="differs, explained", same="our variant"),
    pt("Figure 3(b)", "K = 10: plateau", 0.0, 0.12, -0.05, 0.2, same="reduced budget"),
    pt("Figure 5", "delta", -0.004, 0.021, -0.03, 0.07),
]


def drawn(fig) -> dict[int, dict]:
    """Each point's marker by its index: x, y, the panel's axis, colour, symbol, bar ends."""
    out = {}
    for t in fig.data:
        if t.customdata is None:
            continue
        for j, i in enumerate(t.customdata):
            x = t.x[j]
            lo = None if t.error_x.arrayminus[j] is None else x - t.error_x.arrayminus[j]
            hi = None if t.error_x.array[j] is None else x + t.error_x.array[j]
            out[i] = dict(x=x, y=t.y[j], axis=t.xaxis, colour=t.marker.color, symbol=t.marker.symbol[j], lo=lo, hi=hi)
    return out


def test_one_row_per_point_under_one_heading_per_artifact_top_to_bottom():
    fig = forest(POINTS)
    ax = fig.layout.yaxis
    headings = [t for t in ax.ticktext if t.startswith("<b>")]
    assert headings == [f"<b>{a}</b>" for a in ("Table 3", "Table 6", "Table 10", "Figure 3(b)", "Figure 5")]
    rows = [t for t in ax.ticktext if not t.startswith("<b>")]
    assert len(rows) == len(POINTS)
    assert rows[0] == "K = 10 (n = 3)" and "K = 36 — not run" in rows[2]
    assert "% &gt;= 80%" in rows[3]  # a label is plain text, escaped for plotly
    ys = [drawn(fig)[i]["y"] for i in (0, 1, 3)]
    assert ys == sorted(ys) and ax.range[0] > ax.range[1]  # reversed: the first point on top
    assert fig.layout.height == 210 + 18 * (len(POINTS) + len(headings))


def test_x_is_log2_of_ours_over_paper_and_the_bar_the_interval_on_that_scale():
    d = drawn(forest(POINTS))
    for i in (0, 1, 4):
        p = POINTS[i]
        assert d[i]["axis"] == "x"
        assert d[i]["x"] == math.log2(p["ours"] / p["paper"])
        assert d[i]["lo"] == pytest.approx(math.log2(p["lo"] / p["paper"]), abs=1e-12)
        assert d[i]["hi"] == pytest.approx(math.log2(p["hi"] / p["paper"]), abs=1e-12)


def test_points_without_a_ratio_go_to_the_second_panel_at_ours_minus_paper():
    fig = forest(POINTS)
    d = drawn(fig)
    for i in (3, 5, 6):  # paper 0 (a percentage, a cosine), paper below 0 (a slope)
        p = POINTS[i]
        assert d[i]["axis"] == "x2" and d[i]["x"] == p["ours"] - p["paper"]
    assert d[5]["lo"] == pytest.approx(-0.05) and d[5]["hi"] == pytest.approx(0.2)
    assert d[6]["lo"] == pytest.approx(-0.026) and d[6]["hi"] == pytest.approx(0.074)
    assert fig.layout.annotations[1].text.startswith("ours − paper")
    # every point with a number of ours is in exactly one panel; the not-run one in none
    assert sorted(d) == [0, 1, 3, 4, 5, 6]
    assert sum(len(t.customdata) for t in fig.data if t.customdata is not None) == 6


def test_a_lower_end_at_zero_or_below_moves_a_positive_point_to_the_second_panel():
    d = drawn(forest([pt("Table 5", "alpha 0.3", 1.2, 0.5, -0.1, 1.4)]))
    assert d[0]["axis"] == "x2" and d[0]["x"] == pytest.approx(0.5 - 1.2)


def test_one_panel_when_every_point_has_a_ratio():
    fig = forest(POINTS[:3])
    assert {t.xaxis for t in fig.data if t.customdata is not None} == {"x"}
    assert fig.layout.xaxis2.overlaying == "x" and len(fig.layout.annotations) == 1  # x2: the axis above


def test_colours_from_the_verdicts_and_markers_from_same():
    d = drawn(forest(POINTS))
    for i, m in d.items():
        assert m["colour"] == VERDICT_COLOURS[POINTS[i]["verdict"]]
        assert m["symbol"] == SAME_SYMBOLS[POINTS[i]["same"]]
    legend = {t.name: t.marker for t in forest(POINTS).data if t.showlegend is not False and t.x == (None,)}
    assert {k: legend[k].color for k in VERDICT_COLOURS} == VERDICT_COLOURS
    assert {k: legend[k].symbol for k in SAME_SYMBOLS} == SAME_SYMBOLS


def test_not_run_has_a_row_and_no_marker():
    fig = forest([pt("Table 3", "K = 36", 8750, None, n=0, verdict="not run")])
    assert drawn(fig) == {}
    assert fig.layout.yaxis.ticktext[1].endswith("K = 36 — not run</span>")


def test_an_interval_beyond_the_axis_stops_at_its_edge_under_a_triangle():
    pts = [pt("Table 3", "K = 3", 450, 500, 400, 600), pt("Figure 2(b)", "p = 0.2", 16.0, 20.0, 4.0, 16.0 * 2**9)]
    fig = forest(pts)
    d = drawn(fig)
    lim = fig.layout.xaxis.range[1] / 1.06
    assert lim == pytest.approx(2.0)  # the centres and the ends below the wide one fix it, not the wide end
    assert d[1]["hi"] == pytest.approx(lim) and d[1]["x"] == math.log2(20 / 16)
    (beyond,) = [t for t in fig.data if t.name == "beyond the axis"]
    assert list(beyond.marker.symbol) == ["triangle-right"] and beyond.x[0] > lim and beyond.y[0] == d[1]["y"]


def test_a_centre_beyond_the_widest_axis_sits_at_its_edge_labelled_with_its_ratio():
    fig = forest([pt("Table 10", "anisotropy", 21.0, 540.0, 310.0, 900.0, verdict="differs, explained")])
    d = drawn(fig)
    assert d[0]["x"] == 4.0 and fig.layout.xaxis.range[1] == pytest.approx(4 * 1.06)
    (beyond,) = [t for t in fig.data if t.name == "beyond the axis"]
    assert beyond.text == ("25.7×",)


def test_an_unknown_verdict_or_same_is_a_one_line_value_error():
    with pytest.raises(ValueError, match=r"Table 3: K = 10: verdict 'inside our seed spread' is none of") as e:
        forest([pt("Table 3", "K = 10", 2150, 2600, verdict="inside our seed spread")])
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="same 'yes at B = 32' is none of"):
        forest([pt("Table 1", "B = 32", 5400, 6100, same="yes at B = 32")])


def test_the_page_holds_the_figure_and_the_table_and_opens_offline(tmp_path):
    rows = [{"artifact": "Table 3: tau", "paper": "K = 10: 2150", "ours": "K = 10: <2600>", "verdict": "consistent"}]
    out = scorecard_report(tmp_path / "scorecard.html", POINTS, rows, note="verdicts by rule")
    text = out.read_text()
    assert 'id="forest-plot"' in text and "Plotly.newPlot" in text
    assert "<script src" not in text and "cdn.plot.ly/plotly" not in text  # plotly.js inline
    assert "K = 10: &lt;2600&gt;" in text and "verdicts by rule" in text and "href='#table'" in text
    with pytest.raises(ValueError, match="verdict 'open'"):
        scorecard_report(tmp_path / "bad.html", [pt("Table 3", "K = 10", 1, 2, verdict="open")])
    assert not (tmp_path / "bad.html").exists()


@pytest.mark.browser
def test_the_page_renders_and_the_figure_exports(tmp_path, render_status):
    from mi_plateau.outputs import write_figures

    st = render_status(scorecard_report(tmp_path / "scorecard.html", POINTS), tmp_path)
    assert st["errors"] == [] and st["expected"] == 1 and st["plots"] == 1
    (svg,), _ = write_figures([(tmp_path / "forest.svg", forest(POINTS), {})], static=True)
    assert svg.read_text().startswith("<svg") and "anisotropy" in svg.read_text()


def test_a_censored_point_without_a_value_says_so_not_not_run():
    censored = pt("Table 4", "K = 5", 2325, None, n=2, verdict="inconclusive")
    ticks = forest([*POINTS, censored]).layout.yaxis.ticktext
    assert ticks[-1].endswith("K = 5 — inconclusive, no value</span>") and "K = 36 — not run" in ticks[3]
