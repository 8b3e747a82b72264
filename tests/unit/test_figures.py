"""The figures: the tau figure's lower bounds (a run without a tau is drawn where it stopped, as a
bound), log ticks, Figure 3, and the circuit figures' columns (one per per-head score with a panel)."""

import pytest

from mi_plateau import figures


def _traces(fig):
    return {t.name: t for t in fig.data}


def test_runs_without_a_tau_are_drawn_as_lower_bounds_at_their_last_step():
    pts = {
        "paper": {
            "x": [32, 64, 128],
            "tau": [None, 9700, 4325],
            "reached": [60000, 11650, 5200],
            "label": ["B=32", "B=64", "B=128"],
        }
    }
    fig = figures.tau_power_law(pts, {}, x_label="B", x_symbol="B")
    tr = _traces(fig)
    values = tr["paper definition (L_seq)"]
    bound = tr["paper definition (L_seq): no tau by this step (tau is above)"]
    assert list(values.x) == [64, 128] and list(values.y) == [9700, 4325]
    assert list(bound.x) == [32] and list(bound.y) == [60000] and list(bound.text) == ["B=32"]
    assert bound.marker.symbol == "triangle-up-open"


def test_no_bound_trace_without_reached_or_without_missing_taus():
    for pts in (
        {"paper": {"x": [1, 2], "tau": [None, 5]}},  # no "reached": nothing to draw
        {"paper": {"x": [1, 2], "tau": [3, 5], "reached": [4, 6]}},
    ):  # every run has a tau
        names = [t.name for t in figures.tau_power_law(pts, {}).data]
        assert names == ["paper definition (L_seq)"]


def test_log_ticks_are_the_1_2_5_steps_around_the_data_with_full_labels():
    t = figures.log_ticks([475, 10250, None, float("nan"), 0])
    assert t["tickvals"] == [200, 500, 1000, 2000, 5000, 10000, 20000]
    assert t["ticktext"] == ["200", "500", "1k", "2k", "5k", "10k", "20k"]
    assert figures.log_ticks([]) == {} and figures.log_ticks([None, -3]) == {}
    import numpy as np

    assert figures.log_ticks(np.array([475, 10250]))["ticktext"][0] == "200"  # numpy numbers count
    narrow = figures.log_ticks([1650, 5200])  # less than a decade: finer steps
    assert narrow["ticktext"] == ["1.5k", "2k", "3k", "4k", "5k", "7k"]
    assert figures.tick_label(1.5e6) == "1.5M" and figures.tick_label(0.2) == "0.2"


def test_tau_figure_labels_its_log_axes_in_full():
    pts = {"paper": {"x": [5000, 20000], "tau": [1900, 20000]}}
    fig = figures.tau_power_law(pts, {})
    assert "20k" in fig.layout.xaxis.ticktext and "20k" in fig.layout.yaxis.ticktext
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [5000, 20000]  # the swept values
    ref = figures.tau_power_law(pts, {}, reference={"x": [2500], "tau": [1000]})
    assert list(ref.layout.xaxis.tickvals) == [2500, 5000, 20000]  # the paper's x values get ticks too
    many = figures.tau_power_law({"paper": {"x": list(range(1000, 15000, 1000)), "tau": [100] * 14}}, {})
    assert list(many.layout.xaxis.ticktext) == ["1k", "2k", "5k", "10k", "20k"]  # 14 values: 1-2-5 steps
    lin = figures.tau_power_law({"paper": {"x": [1, 2, 3], "tau": [10, 20, 30]}}, {}, log_x=False)
    assert lin.layout.xaxis.tickvals is None and lin.layout.yaxis.ticktext[0] == "10"


def test_dodged_series_sit_either_side_of_their_x_and_keep_it_in_the_hover():
    pts = {
        "K=5": {"x": [0.005, 0.007], "tau": [1800, None], "reached": [None, 20000]},
        "K=10": {"x": [0.007], "tau": [None], "reached": [20000]},
    }
    fig = figures.tau_power_law(pts, {}, dodge=1.04)
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["K=5"].x) == pytest.approx([0.005 / 1.04**0.5])  # two series: factors 1.04 ** -+0.5
    assert list(by_name["K=5: no tau by this step (tau is above)"].x) == pytest.approx([0.007 / 1.04**0.5])
    assert list(by_name["K=10: no tau by this step (tau is above)"].x) == pytest.approx([0.007 * 1.04**0.5])
    assert list(by_name["K=10: no tau by this step (tau is above)"].customdata) == [0.007]  # the hover's x
    assert list(fig.layout.xaxis.tickvals) == [0.005, 0.007]  # ticks at the true values
    plain = figures.tau_power_law(pts, {})
    assert list(plain.data[0].x) == [0.005]


def test_width_curves_mark_each_runs_ends_on_its_line_and_list_each_label_once():
    run = {"steps": [0, 100, 200, 300], "y": [1.0, 0.97, 0.4, 0.02], "t_start": 100, "t_end": 300}
    open_run = {"steps": [0, 100], "y": [1.0, 1.0], "t_start": None, "t_end": None}
    panels = {"K = 5": {"seed 42": run, "seed 7": open_run}, "K = 10": {"seed 42": open_run}}
    fig = figures.width_curves(panels, 0.05, 0.95, "t")
    lines = [t for t in fig.data if t.mode == "lines"]
    marks = [t for t in fig.data if t.mode == "markers"]
    assert [t.name for t in lines if t.showlegend] == ["seed 42", "seed 7"]  # once each, in order
    assert lines[0].line.color == lines[2].line.color  # seed 42 keeps its colour in both panels
    assert list(marks[0].x) == [100, 300] and list(marks[0].y) == [0.97, 0.02]
    assert list(marks[0].marker.symbol) == ["circle-open", "circle"]
    assert list(marks[1].x) == [] and list(marks[2].x) == []  # no width: no ends drawn
    assert sorted(s.y0 for s in fig.layout.shapes) == [0.05, 0.05, 0.95, 0.95]  # both thresholds, both panels


def test_figure3_as_the_paper_drew_it_marks_both_onsets_and_tau():
    from mi_plateau.figures import figure3_paper

    a = [
        {"step": s, "Lc_over_logK": l, "zgap_over_logK": g} for s, l, g in [(0, 1, 0), (50, 0.95, 0.1), (100, 0.5, 0.4)]
    ]
    onsets = {"loss_onset": 100, "z_onset_0.1": 50}
    b = [{"step": 200, "cos_smooth": 0.1}, {"step": 400, "cos_smooth": 0.7}]
    fig = figure3_paper({"K=10": {"a": a, "onsets": onsets, "b": b, "windows": {"tau": 300}}})
    names = [t.name for t in fig.data]
    assert "K=10: loss onset 100" in names and "K=10: z onset 0.1 50" in names
    assert list(fig.data[-1].y) == [0.1, 0.7] and [s.x0 for s in fig.layout.shapes] == [300]


def test_figure3_draws_only_the_panels_asked():
    from mi_plateau.figures import figure3_paper

    a = [{"step": 0, "Lc_over_logK": 1.0, "zgap_over_logK": 0.0}]
    d = {"K=10": {"a": a, "onsets": {}, "b": [{"step": 200, "cos_smooth": 0.3}], "windows": {"tau": 300}}}
    only_b = figure3_paper(d, "b")
    assert [t.name for t in only_b.data] == ["K=10: cos (5-point mean)"]
    assert [a.text for a in only_b.layout.annotations][0].startswith("(b)") and "xaxis2" not in only_b.layout
    only_a = figure3_paper(d, "a")
    assert [t.name for t in only_a.data] == ["K=10: Lc / log K", "K=10: z-gap / log K"] and not only_a.layout.shapes
    with pytest.raises(ValueError, match="panels must be"):
        figure3_paper(d, "c")


def test_figure3_draws_the_originals_panel_where_a_run_has_its_series():
    from mi_plateau.figures import figure3_paper

    a = [{"step": 0, "Lc_over_logK": 1.0, "zgap_over_logK": 0.0}]
    orig = [{"step": 50, "first_loss_over_logK": 1.5, "zgap_over_logK": 0.01}]
    d = {"K=10": {"a": a, "a_original": orig, "onsets": {}, "b": [], "windows": {}}}
    titles = [x.text for x in figure3_paper(d).layout.annotations]
    assert [t[:8] for t in titles] == ["(a) the ", "(a) ours", "(b) cohe"]
    d["K=10"]["a_original"] = []  # a run whose records keep no first-token training loss
    assert [x.text[:8] for x in figure3_paper(d).layout.annotations] == ["(a) ours", "(b) cohe"]
    ref = {"the original code": {"b": [{"step": 400, "cos_smooth": 0.2}], "windows": {"tau": 2600}, "reference": True}}
    fig = figure3_paper({**d, **ref}, "b")
    assert fig.data[-1].name == "the original code: cos (5-point mean)" and fig.data[-1].line.dash == "dash"


@pytest.fixture
def toy_score():
    """A per-head score declared for one test (passes.head_scores, as docs/design.md shows),
    taken out of the registry afterwards."""
    from mi_plateau.passes.head_scores import HEAD_SCORES, Panel, head_score

    @head_score(
        ablation=False,
        legend="a toy",
        panel=Panel(title="toy title", scale="Blues", diverging=False, legend="toy = a toy"),
    )
    def toy(at):
        return at.run.sel_attn.abs().mean(0)

    yield toy
    HEAD_SCORES.pop("toy")


def _head_rows():
    """Rows of a 2 x 2 model at two checkpoints, every registered score a column, the first
    checkpoint without the ablations (NaN)."""
    from mi_plateau.passes.head_scores import HEAD_SCORES

    nan = float("nan")
    return [
        {
            "step": s,
            "head": f"L{l}H{h}",
            "layer": l,
            "head_index": h,
            **{k: (nan if s == 0 and v.ablation else 0.1 * (l - h) + s / 100) for k, v in HEAD_SCORES.items()},
        }
        for s in (0, 100)
        for l in range(2)
        for h in range(2)
    ]


def test_the_circuit_figures_draw_one_column_per_registered_panel():
    from mi_plateau.passes.head_scores import panels

    n = len(panels())
    fig = figures.head_scores_over_training(_head_rows(), "run", tau=50)
    assert [a.text for a in fig.layout.annotations][:3] == [  # the scores declared first, as they were
        "selector attention − baseline",
        "ablation ΔLc (nats)",
        "causal share of Δz",
    ]
    assert len(fig.data) == n and [t.zmid for t in fig.data][:3] == [0, None, 0]  # diverging: centred on 0
    slider = figures.head_grid_slider(_head_rows(), "run", [100])
    assert [t.type for t in slider.data] == ["heatmap"] * n + ["bar"] * 2


def test_a_declared_score_adds_a_column_to_the_figures_and_the_report_legend(toy_score):
    from mi_plateau.passes.head_scores import panels
    from mi_plateau.report.runs import heads_legend

    n = len(panels())
    fig = figures.head_scores_over_training(_head_rows(), "run", tau=50)
    assert len(fig.data) == n and fig.layout.annotations[-1].text == "toy title"
    last = fig.layout[f"xaxis{n}"].domain[1]
    assert fig.data[-1].colorbar.x == last == 1.0  # every colour bar at its panel's right edge
    assert [t.colorbar.x for t in fig.data] == sorted(t.colorbar.x for t in fig.data)
    slider = figures.head_grid_slider(_head_rows(), "run", [0, 100])
    assert [t.type for t in slider.data] == ["heatmap"] * n + ["bar"] * 2 and len(slider.frames) == 2
    assert slider.data[n - 1].xaxis == f"x{n}" and slider.data[n].xaxis == f"x{n + 1}"  # bars: the row below
    assert heads_legend().endswith("; toy = a toy")
