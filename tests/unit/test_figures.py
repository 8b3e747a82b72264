"""The tau figure's lower bounds: a run without a tau is drawn where it stopped, as a bound."""

from mi_plateau import figures


def _traces(fig):
    return {t.name: t for t in fig.data}


def test_runs_without_a_tau_are_drawn_as_lower_bounds_at_their_last_step():
    pts = {"paper": {"x": [32, 64, 128], "tau": [None, 9700, 4325], "reached": [60000, 11650, 5200],
                     "label": ["B=32", "B=64", "B=128"]}}
    fig = figures.tau_power_law(pts, {}, x_label="B", x_symbol="B")
    tr = _traces(fig)
    values = tr["paper definition (L_seq)"]
    bound = tr["paper definition (L_seq): no tau by this step (tau is above)"]
    assert list(values.x) == [64, 128] and list(values.y) == [9700, 4325]
    assert list(bound.x) == [32] and list(bound.y) == [60000] and list(bound.text) == ["B=32"]
    assert bound.marker.symbol == "triangle-up-open"


def test_no_bound_trace_without_reached_or_without_missing_taus():
    for pts in ({"paper": {"x": [1, 2], "tau": [None, 5]}},                        # no "reached": nothing to draw
                {"paper": {"x": [1, 2], "tau": [3, 5], "reached": [4, 6]}}):        # every run has a tau
        names = [t.name for t in figures.tau_power_law(pts, {}).data]
        assert names == ["paper definition (L_seq)"]
