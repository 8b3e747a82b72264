"""The scorecard as a forest plot (SPEC 10): every number compared with the paper on one row,
grouped by artifact, our value against the paper's on a ratio axis.

A row's x is log2(ours / paper): 0 is the paper's value, +1 twice it, -1 half of it; the bar is
our 95% interval for one run on the same scale, log2(lo / paper) to log2(hi / paper). Where that
ratio is undefined (the paper's value, ours or the interval's lower end at or below zero: a
cosine of 0.0, a slope of -0.004, 0% of groups) the row's marker goes in a second panel instead,
at ours - paper in the quantity's own units. Colour: the verdict; marker: whether ours is the
paper's quantity. A row without a number of ours ("not run") is listed, with no marker.
"""

from __future__ import annotations

import html
import math
import numbers
import textwrap
from typing import Any

VERDICT_COLOURS = {
    "consistent": "#2ca02c",
    "differs": "#d62728",
    "differs, explained": "#ff7f0e",
    "inconclusive": "#7f7f7f",
    "not run": "#c7c7c7",
}
SAME_SYMBOLS = {"yes": "circle", "our variant": "diamond", "reduced budget": "square"}
CLIP = 4.0  # the widest ratio axis, in log2: 16 times or a 16th of the paper's value
ROW_PX = 18  # the height of one row (a point or an artifact's heading), in pixels
_TOP, _BOTTOM = 150, 60  # pixels above the rows (title, legends, axis, panel titles) and below them
PANEL_TITLES = ("log2(ours / paper)", "ours − paper (no ratio)")  # right: where the ratio is undefined


def forest(points: list[dict[str, Any]], title: str = "The scorecard: each number of ours against the paper's"):
    """The forest plot of ``points``, top to bottom in the order given, each artifact's points
    under one heading (an artifact's points should be consecutive; a later run of the same
    artifact gets a heading of its own).

    A point: ``artifact`` and ``label`` (text), ``paper`` and ``ours`` (numbers; ours None: not
    run), ``lo`` and ``hi`` (our 95% interval for one run, or None), ``n`` (the runs behind
    ours), ``verdict`` (a key of ``VERDICT_COLOURS``), ``same`` (a key of ``SAME_SYMBOLS``) and
    an optional ``note`` (hover text). Strings are plain text: they are escaped here.

    Panel 1 holds the rows where ours, the paper's value and the interval's lower end are all
    positive, at x = log2(ours / paper); panel 2 (drawn only when some row needs it) the others,
    at x = ours - paper, each labelled with it (the panel mixes units). An axis spans the rows'
    centres and their intervals' ends up to the 90th percentile (panel 1: at least a factor 2
    either way, at most ``CLIP``), so one very wide interval does not squash the rest: an end
    beyond the axis stops at its edge under a triangle, and a centre beyond ``CLIP`` sits at the
    edge labelled with its value. The height grows by ``ROW_PX`` per row. An unknown verdict or
    ``same`` is a one-line ValueError."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    placed = [_place(p) for p in points]
    ys, ticks = _rows(points)
    height = _TOP + _BOTTOM + ROW_PX * len(ticks["tickvals"])
    two = any(pl["panel"] == 2 for pl in placed)
    fig = make_subplots(
        rows=1,
        cols=2 if two else 1,
        shared_yaxes=True,
        column_widths=[0.68, 0.32] if two else None,
        horizontal_spacing=0.03,
        subplot_titles=PANEL_TITLES[: 2 if two else 1],
    )
    lims = {1: _limit([pl for pl in placed if pl["panel"] == 1], 1.0, CLIP)}
    if two:
        lims[2] = _limit([pl for pl in placed if pl["panel"] == 2], 0.0, math.inf)
    for panel, lim in lims.items():
        rows = [(i, pl) for i, pl in enumerate(placed) if pl["panel"] == panel]
        for verdict, colour in VERDICT_COLOURS.items():
            mine = [(i, pl) for i, pl in rows if points[i]["verdict"] == verdict]
            if mine:
                fig.add_trace(_markers(go, points, ys, mine, lim, verdict, colour, panel), 1, panel)
        beyond = _beyond(go, points, ys, rows, lim, panel)
        if beyond is not None:
            fig.add_trace(beyond, 1, panel)
        fig.add_vline(x=0, line=dict(color="#444", width=1), row=1, col=panel)
        fig.update_xaxes(range=[-1.06 * lim, 1.06 * lim], zeroline=False, row=1, col=panel)
    fig.update_xaxes(**_ratio_ticks(lims[1]), title_text="ours / paper, on a log2 axis", row=1, col=1)
    if two:
        fig.update_xaxes(title_text="ours − paper, in the quantity's units", row=1, col=2)
    _top_axes(go, fig, len(lims))
    _legends(go, fig, height)
    _shade_groups(fig, points, ys, len(lims))
    fig.update_yaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(**ticks, range=[len(ticks["tickvals"]) - 0.5, -0.5], tickfont=dict(size=11), row=1, col=1)
    fig.update_layout(
        title=dict(text=title, x=0.005, xanchor="left", yref="container", y=1, yanchor="top", pad=dict(t=12)),
        height=height,
        template="plotly_white",
        margin=dict(t=_TOP, b=_BOTTOM, l=10, r=20),
        hoverlabel=dict(align="left"),
    )
    return fig


def _num(v) -> float | None:
    """A finite number (numpy's included) as a float; anything else (None, NaN, text) None."""
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


def _place(p: dict[str, Any]) -> dict[str, Any]:
    """Where a point is drawn: its panel (None: no marker) and x, lo, hi on that panel's scale;
    a one-line ValueError for a verdict or a ``same`` the plot has no colour or marker for."""
    where = f"{p.get('artifact')}: {p.get('label')}"
    if p.get("verdict") not in VERDICT_COLOURS:
        raise ValueError(f"forest: {where}: verdict {p.get('verdict')!r} is none of {', '.join(VERDICT_COLOURS)}")
    if p.get("same") not in SAME_SYMBOLS:
        raise ValueError(f"forest: {where}: same {p.get('same')!r} is none of {', '.join(SAME_SYMBOLS)}")
    ours, paper, lo, hi = (_num(p.get(k)) for k in ("ours", "paper", "lo", "hi"))
    if ours is None or paper is None:
        return {"panel": None, "x": None, "lo": None, "hi": None}
    if paper > 0 and ours > 0 and (lo is None or lo > 0) and (hi is None or hi > 0):
        return {"panel": 1, "x": math.log2(ours / paper), **_ends(lo, hi, lambda v: math.log2(v / paper))}
    return {"panel": 2, "x": ours - paper, **_ends(lo, hi, lambda v: v - paper)}


def _ends(lo, hi, f) -> dict[str, float | None]:
    return {"lo": None if lo is None else f(lo), "hi": None if hi is None else f(hi)}


def _rows(points: list[dict[str, Any]]) -> tuple[list[int], dict[str, list]]:
    """Each point's y (a row index, top = 0) and the axis ticks: a bold heading row where the
    artifact changes, then one row per point, labelled ``label (n = runs)``."""
    ys, vals, text, last = [], [], [], None
    for p in points:
        if p["artifact"] != last:
            last = p["artifact"]
            vals.append(len(vals))
            text.append(f"<b>{html.escape(str(last), quote=False)}</b>")
        ys.append(len(vals))
        vals.append(len(vals))
        label = html.escape(str(p["label"]), quote=False)
        if _num(p.get("ours")) is None:  # not run, or run and censored by our budget (the note says)
            why = "not run" if p.get("verdict") == "not run" else f"{p.get('verdict')}, no value"
            text.append(f"<span style='color:#999'>{label} — {html.escape(why, quote=False)}</span>")
        elif _num(p.get("paper")) is None:
            text.append(f"<span style='color:#999'>{label} — no paper value</span>")
        else:
            text.append(f"{label} (n = {p.get('n')})")
    return ys, {"tickvals": vals, "ticktext": text}


def _limit(placed: list[dict[str, Any]], floor: float, cap: float) -> float:
    """A panel's half-width: every centre, and the interval ends up to their 90th percentile (one
    very wide interval does not squash the rest), at least ``floor`` and at most ``cap``; panel 1
    in steps of half a doubling."""
    centres = [abs(pl["x"]) for pl in placed]
    ends = sorted(abs(pl[k]) for pl in placed for k in ("lo", "hi") if pl[k] is not None)
    q = ends[math.floor(0.9 * (len(ends) - 1))] if ends else 0.0
    lim = min(max([floor, q, *centres]), cap)
    if math.isfinite(cap):
        return math.ceil(lim * 2) / 2
    return 1.4 * lim if lim > 0 else 1.0  # room for the labels beside the markers


def _clip(v: float, lim: float) -> float:
    return max(-lim, min(lim, v))


def _markers(go, points, ys, mine, lim: float, verdict: str, colour: str, panel: int):
    """One verdict's points of one panel: markers by ``same``, their intervals as error bars
    (cut at the panel's edge), in panel 2 each labelled with its difference (the panel mixes
    units: a cosine's 0.02 is invisible beside a percentage's 5); ``customdata`` is each
    point's index in ``points``."""
    x = [_clip(pl["x"], lim) for _, pl in mine]
    hi = [None if pl["hi"] is None else max(0.0, _clip(pl["hi"], lim) - cx) for cx, (_, pl) in zip(x, mine)]
    lo = [None if pl["lo"] is None else max(0.0, cx - _clip(pl["lo"], lim)) for cx, (_, pl) in zip(x, mine)]
    return go.Scatter(
        x=x,
        y=[ys[i] for i, _ in mine],
        mode="markers+text" if panel == 2 else "markers",
        name=verdict,
        legendgroup=verdict,
        showlegend=False,
        customdata=[i for i, _ in mine],
        marker=dict(
            color=colour,
            size=9,
            symbol=[SAME_SYMBOLS[points[i]["same"]] for i, _ in mine],
            line=dict(color="white", width=0.5),
        ),
        error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo, color=colour, thickness=1.5, width=3),
        text=[f"{pl['x']:+.3g}" for _, pl in mine] if panel == 2 else None,
        # beside the marker, or above it where an interval's bar runs through that place
        textposition=[
            f"{'top' if pl['lo'] is not None else 'middle'} {'left' if cx < 0 else 'right'}"
            for cx, (_, pl) in zip(x, mine)
        ],
        textfont=dict(size=10, color="#444"),
        hovertext=[_hover(points[i]) for i, _ in mine],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def _beyond(go, points, ys, rows, lim: float, panel: int):
    """Triangles at the panel's edge for every interval end (and centre) beyond it; a centre
    beyond it is labelled with its value (the ratio in panel 1)."""
    xs, yy, sym, col, text, hover = [], [], [], [], [], []
    for i, pl in rows:
        ends = [v for v in (pl["lo"], pl["hi"], pl["x"]) if v is not None and abs(v) > lim]
        for side in sorted({math.copysign(1, v) for v in ends}):
            xs.append(side * 1.035 * lim)  # just past the edge, where the bar stops
            yy.append(ys[i])
            sym.append("triangle-right" if side > 0 else "triangle-left")
            col.append(VERDICT_COLOURS[points[i]["verdict"]])
            off = abs(pl["x"]) > lim and math.copysign(1, pl["x"]) == side
            value = f"{2 ** pl['x']:.3g}×" if panel == 1 else f"{pl['x']:+.3g}"
            text.append(value if off else "")
            hover.append(f"{_hover(points[i])}<br>beyond the axis (drawn to its edge)")
    if not xs:
        return None
    return go.Scatter(
        x=xs,
        y=yy,
        mode="markers+text",
        name="beyond the axis",
        showlegend=False,
        marker=dict(symbol=sym, color=col, size=8),
        text=text,
        textposition=["top left" if x > 0 else "top right" for x in xs],
        textfont=dict(size=10, color="#444"),
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
    )


def _hover(p: dict[str, Any]) -> str:
    """A point's hover text: artifact, label, the paper's value, ours [lo, hi], n, verdict, note."""
    g = lambda v: "—" if _num(v) is None else f"{v:.4g}"
    iv = f" [{g(p.get('lo'))}, {g(p.get('hi'))}]" if _num(p.get("lo")) is not None else ""
    lines = [
        f"<b>{html.escape(str(p['artifact']), quote=False)}</b>: {html.escape(str(p['label']), quote=False)}",
        f"paper {g(p.get('paper'))}; ours {g(p.get('ours'))}{iv} (n = {p.get('n')})",
        f"{p['verdict']}; same quantity: {p['same']}",
    ]
    if p.get("note"):
        lines += textwrap.wrap(html.escape(str(p["note"]), quote=False), 90, break_long_words=False)
    return "<br>".join(lines)


def _ratio_ticks(lim: float) -> dict[str, list]:
    """Ticks of the log2 axis labelled as the ratio: at round ratios (0.5×, 0.8×, 1×, 1.25×, 2×)
    on a narrow axis, at whole doublings (1/4×, 1/2×, 1×, 2×, 4×) on a wide one."""
    if lim <= 1.5:
        ratios = [r for r in (0.4, 0.5, 2 / 3, 0.8, 1, 1.25, 1.5, 2, 2.5) if abs(math.log2(r)) <= 1.06 * lim]
        return {"tickvals": [math.log2(r) for r in ratios], "ticktext": [f"{round(r, 2):g}×" for r in ratios]}
    vals = list(range(-int(lim), int(lim) + 1))
    return {"tickvals": vals, "ticktext": [f"{2**v:g}×" if v >= 0 else f"1/{2**-v:g}×" for v in vals]}


def _top_axes(go, fig, n_panels: int) -> None:
    """Each panel's x axis repeated above the rows (a plot of a hundred rows is taller than a
    screen), the panel titles moved up over it; plotly draws an axis only under a trace, so each
    gets an empty one."""
    for c in range(1, n_panels + 1):
        k = "" if c == 1 else c
        under = fig.layout[f"xaxis{k}"]
        fig.add_trace(
            go.Scatter(x=[None], y=[None], xaxis=f"x{n_panels + c}", yaxis=f"y{k}", showlegend=False, hoverinfo="skip")
        )
        fig.layout[f"xaxis{n_panels + c}"] = dict(
            overlaying=f"x{k}",
            matches=f"x{k}",
            side="top",
            anchor=f"y{k}",
            range=under.range,
            tickvals=under.tickvals,
            ticktext=under.ticktext,
            showgrid=False,
            zeroline=False,
        )
    fig.update_annotations(yshift=22)


def _legends(go, fig, height: int) -> None:
    """Two legends above the rows: the verdicts' colours (a click hides a verdict's points) and
    the markers' shapes; entries only, drawn from empty traces."""
    for verdict, colour in VERDICT_COLOURS.items():
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=verdict,
                legendgroup=verdict,
                marker=dict(color=colour, size=10, symbol="circle"),
            )
        )
    for same, symbol in SAME_SYMBOLS.items():
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=same,
                legend="legend2",
                marker=dict(color="#555", size=10, symbol=symbol),
            )
        )
    common = dict(
        orientation="h", xref="container", x=0.005, xanchor="left", yref="container", yanchor="top", font=dict(size=11)
    )
    fig.update_layout(
        legend=dict(**common, y=1 - 42 / height, title_text="verdict:"),
        legend2=dict(**common, y=1 - 72 / height, title_text="same quantity as the paper's:"),
    )


def _shade_groups(fig, points, ys, n_panels: int) -> None:
    """A light band behind every other artifact's rows (its heading included), across the panels."""
    starts = [ys[i] - 1 for i, p in enumerate(points) if i == 0 or p["artifact"] != points[i - 1]["artifact"]]
    ends = [s - 1 for s in starts[1:]] + [ys[-1] if ys else 0]
    for k, (a, b) in enumerate(zip(starts, ends)):
        if k % 2:
            continue
        for c in range(1, n_panels + 1):
            fig.add_shape(
                type="rect",
                xref=f"x{'' if c == 1 else c} domain",
                x0=0,
                x1=1,
                yref="y",
                y0=a - 0.5,
                y1=b + 0.5,
                fillcolor="#f3f3f3",
                line_width=0,
                layer="below",
            )
