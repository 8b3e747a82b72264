"""The sweeps' figures: tau against the swept quantity with its power-law fits (Figure 4 and the
other sweep tables' figures), the learning-rate phase diagram (Table 8), and the full-label
ticks their log axes use."""

from __future__ import annotations

import math
import numbers
from typing import Any

from .style import PALETTE

_SERIES_NAMES = {"paper": "paper definition (L_seq)", "first_token": "first token (Lc)"}


def tick_label(v: float) -> str:
    """A short label for a tick value: 500, 2k, 20k, 1.5M, 0.2."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def log_ticks(values) -> dict[str, list]:
    """``tickvals`` and ``ticktext`` for a log axis over the positive finite ``values``: the
    1-2-5 steps of each decade (1, 1.5, 2, 3, 4, 5, 7 when the values span less than a decade)
    that fall inside their range, with one step beyond each end so the extreme points have a
    labelled tick next to them; empty when there is nothing to place."""
    vals = [float(v) for v in values if isinstance(v, numbers.Real) and math.isfinite(v) and v > 0]
    if not vals:
        return {}
    lo, hi = min(vals), max(vals)
    steps = (1, 2, 5) if hi >= 10 * lo else (1, 1.5, 2, 3, 4, 5, 7)
    ticks = [
        round(m * 10.0**e, 12)
        for e in range(math.floor(math.log10(lo)) - 1, math.floor(math.log10(hi)) + 2)
        for m in steps
    ]
    below = [t for t in ticks if t <= lo]
    above = [t for t in ticks if t >= hi]
    ticks = [t for t in ticks if (below[-1] if below else lo) <= t <= (above[0] if above else hi)]
    return {"tickvals": ticks, "ticktext": [tick_label(t) for t in ticks]}


def tau_power_law(
    points: dict[str, dict[str, list]],
    fits: dict[str, dict[str, Any]],
    *,
    x_label: str = "D (examples)",
    x_symbol: str = "D",
    reference: dict[str, list] | None = None,
    title: str = "tau against D",
    y_label: str = "tau (steps)",
    log_x: bool = True,
    dodge: float = 1.0,
):
    """Figure 4: tau against the swept quantity on log-log axes, one marker series per
    definition family (or any named series) with its fitted power law (dashed) where ``fits``
    has one, and the paper's values as grey crosses when given. ``points[series] = {"x": [...],
    "tau": [...], "label": [...]}``; ``fits[series]`` is ``fits.power_law``'s result; ``reference
    = {"x": [...], "tau": [...]}``. ``log_x=False`` for a swept key with a few small integers.
    A series may hold ``"reached"``: for a point without a tau, the step (in the y unit) its run
    got to, drawn as an open triangle (tau lies above it: a lower bound, not a value).
    ``dodge`` > 1 draws series i of n at x times dodge ** (i - (n - 1) / 2), so that series at
    the same swept values do not hide each other (a series' fit line moves with it); the hover
    text and the ticks keep the true x."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, (fam, pts) in enumerate(points.items()):
        col = PALETTE[i % len(PALETTE)]
        shift = dodge ** (i - (len(points) - 1) / 2)
        xs = _add_tau_points(fig, _SERIES_NAMES.get(fam, fam), pts, col, shift, "circle" if i == 0 else "square")
        _add_fit(fig, fits.get(fam) or {}, xs, col, shift, x_symbol)
    if reference:
        fig.add_trace(
            go.Scatter(
                x=reference["x"],
                y=reference["tau"],
                mode="markers",
                name="the paper's values",
                marker=dict(color="#888", symbol="x", size=8),
            )
        )
    _tau_axes(fig, points, reference, log_x, x_label, y_label)
    # the legend below the axes: inside them it can cover points (Table 7's at len_z = 1 did)
    fig.update_layout(
        title=title,
        height=540,
        width=900,
        template="plotly_white",
        margin=dict(b=130),
        legend=dict(orientation="h", x=0, y=-0.18, yanchor="top"),
    )
    return fig


def _add_tau_points(fig, name: str, pts: dict[str, list], col: str, shift: float, symbol: str) -> list:
    """One series' taus as markers and, for its runs without a tau, the step they reached as open
    triangles (lower bounds), drawn at x times ``shift``; returns the x values that have a tau."""
    import plotly.graph_objects as go

    xs = [x for x, t in zip(pts["x"], pts["tau"]) if t]
    fig.add_trace(
        go.Scatter(
            x=[x * shift for x in xs],
            y=[t for t in pts["tau"] if t],
            mode="markers",
            name=name,
            customdata=xs,
            marker=dict(color=col, size=9, symbol=symbol),
            text=[lb for lb, t in zip(pts.get("label", [""] * len(pts["x"])), pts["tau"]) if t],
            hovertemplate="%{text}<br>x=%{customdata}<br>tau=%{y}<extra></extra>",
        )
    )
    bounds = [
        (x, b, lb)
        for x, t, b, lb in zip(
            pts["x"], pts["tau"], pts.get("reached", [None] * len(pts["x"])), pts.get("label", [""] * len(pts["x"]))
        )
        if not t and b
    ]
    if bounds:
        fig.add_trace(
            go.Scatter(
                x=[b[0] * shift for b in bounds],
                y=[b[1] for b in bounds],
                mode="markers",
                name=f"{name}: no tau by this step (tau is above)",
                marker=dict(color=col, size=10, symbol="triangle-up-open"),
                text=[b[2] for b in bounds],
                customdata=[b[0] for b in bounds],
                hovertemplate="%{text}<br>x=%{customdata}<br>no tau by %{y}<extra></extra>",
            )
        )
    return xs


def _add_fit(fig, f: dict[str, Any], xs: list, col: str, shift: float, x_symbol: str) -> None:
    """A series' fitted power law ``f`` (``fits.power_law``'s result) as dashed lines over the
    range of ``xs``, one per prefactor (group), one legend entry; nothing without a slope."""
    import plotly.graph_objects as go

    if f.get("slope") is None or not xs:
        return
    lo, hi = min(xs), max(xs)
    grid = [lo * (hi / lo) ** (j / 40) for j in range(41)]
    for g, c in f["prefactor"].items():
        lab = (
            f"fit: tau ~ {x_symbol}^{f['slope']:.2f} [{f['ci'][0]:.2f}, {f['ci'][1]:.2f}], R^2 {f['r2']:.3f}"
            if f["ci"][0] is not None
            else f"fit: tau ~ {x_symbol}^{f['slope']:.2f}"
        )
        fig.add_trace(
            go.Scatter(
                x=[x * shift for x in grid],
                y=[c * math.exp(f["slope"] * math.log(x)) for x in grid],
                mode="lines",
                name=lab,
                line=dict(color=col, dash="dash", width=1.4),
                showlegend=g == next(iter(f["prefactor"])),
            )
        )


def _tau_axes(fig, points, reference, log_x: bool, x_label: str, y_label: str) -> None:
    """The tau figure's axes, with explicit ticks and full labels (plotly's own log ticks label
    20,000 as a bare "2"): on x the swept values themselves when there are a few, else 1-2-5
    steps over the drawn points; on y 1-2-5 steps over every drawn value."""
    swept = sorted(
        {
            float(x)
            for pts in [*points.values(), reference or {"x": []}]
            for x in pts["x"]
            if isinstance(x, numbers.Real) and x > 0
        }
    )
    ys_all = [v for t in fig.data for v in (t.y if t.y is not None else ())]
    if log_x:
        xt = (
            {"tickvals": swept, "ticktext": [tick_label(x) for x in swept]}
            if 0 < len(swept) <= 12
            else log_ticks([v for t in fig.data for v in (t.x if t.x is not None else ())])
        )
        fig.update_xaxes(type="log", title_text=x_label, **xt)
    else:
        fig.update_xaxes(dtick=1, title_text=x_label)
    fig.update_yaxes(type="log", title_text=y_label, **log_ticks(ys_all))


def phase_diagram(cells: list[dict[str, Any]], reference: dict[int, float] | None = None, title: str = "Phase diagram"):
    """Table 8 as a picture: one marker per (lr, K) cell, coloured by its outcome (every seed
    escaped, some seed did not, undecided), labelled with the counts; the paper's eta* per K as
    crosses. ``cells``: rows with K, lr, outcome, escaped, no_escape, undecided, budget."""
    import plotly.graph_objects as go

    colours = {"all escaped": "#2ca02c", "some did not escape": "#d62728", "undecided": "#7f7f7f"}
    fig = go.Figure()
    for outcome, colour in colours.items():
        cs = [c for c in cells if c["outcome"] == outcome]
        if not cs:
            continue
        fig.add_trace(
            go.Scatter(
                x=[c["lr"] for c in cs],
                y=[c["K"] for c in cs],
                mode="markers+text",
                name=outcome,
                marker=dict(color=colour, size=16, symbol="circle"),
                text=[f"{c['escaped']}/{c['escaped'] + c['no_escape'] + c['undecided']}" for c in cs],
                textposition="top center",
                hovertext=[
                    f"K={c['K']}, lr={c['lr']:g}: {c['escaped']} escaped, {c['no_escape']} no escape by "
                    f"{c['budget']} steps, {c['undecided']} undecided"
                    for c in cs
                ],
                hoverinfo="text",
            )
        )
    if reference:
        fig.add_trace(
            go.Scatter(
                x=list(reference.values()),
                y=list(reference),
                mode="markers",
                name="the paper's eta*",
                marker=dict(color="black", size=12, symbol="x"),
            )
        )
    Ks = sorted({c["K"] for c in cells} | set(reference or {}))
    fig.update_layout(
        title=title,
        xaxis=dict(title="learning rate", type="log", **log_ticks([c["lr"] for c in cells])),
        yaxis=dict(title="K (n_b = 1000, D = 1000 K)", type="log", tickvals=Ks, ticktext=[str(k) for k in Ks]),
        template="plotly_white",
        width=800,
        height=500,
    )
    return fig
