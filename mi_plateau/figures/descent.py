"""Figure 3 as the paper drew it: (a) the first-token loss and the z-shuffle gap, both over log K,
against the step, with the two onsets marked; (b) the cosine of consecutive weight displacements
(5-point rolling mean) against the step, tau marked. The data come from ``passes.lead`` and
``passes.descent`` (``figure3.json``'s ``paper`` part)."""

from __future__ import annotations

from typing import Any

from ..frames import records
from .style import PALETTE, nan_none


def figure3_paper(data: dict[str, dict[str, Any]], panels: str = "ab"):
    """One run or several: ``data`` maps a run's name to its ``figure3.json`` ``paper`` part
    (``a``: the curve rows, ``onsets``, ``b``: the displacement rows). One colour per run; in (a)
    solid = Lc / log K, dashed = z-gap / log K, a circle at the loss onset and a diamond at the z
    onset (0.1 nats); in (b) the smoothed cosine, a dotted line at the windows' tau. ``panels``
    ("ab", "a" or "b") says which panels are drawn, side by side in that order."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not panels or set(panels) - {"a", "b"} or len(set(panels)) != len(panels):
        raise ValueError(f"figure3_paper: panels must be 'ab', 'a' or 'b', not {panels!r}")
    titles = {
        "a": "(a) z-dependence leads loss: Lc / log K and z-shuffle gap / log K",
        "b": "(b) coherent descent: cosine of consecutive displacements (5-point mean)",
    }
    col = {p: i + 1 for i, p in enumerate(panels)}
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[titles[p] for p in panels])
    for i, (name, d) in enumerate(data.items()):
        c = PALETTE[i % len(PALETTE)]
        if "a" in col:
            _panel_a(fig, go, name, d, c, col["a"])
        if "b" in col:
            b = records(_rows(d, "b"))
            fig.add_trace(
                go.Scatter(
                    x=[r["step"] for r in b],
                    y=[nan_none(r["cos_smooth"]) for r in b],
                    name=f"{name}: cos (5-point mean)",
                    line=dict(color=c),
                ),
                1,
                col["b"],
            )
            tau = (d.get("windows") or {}).get("tau")
            if tau:
                fig.add_vline(x=tau, line=dict(color=c, dash="dot", width=1), row=1, col=col["b"])
    fig.update_xaxes(title_text="step")
    if "a" in col:
        fig.update_yaxes(title_text="fraction of log K", row=1, col=col["a"])
    if "b" in col:
        fig.update_yaxes(title_text="cosine", row=1, col=col["b"], range=[-0.3, 1.0])
    fig.update_layout(
        title="Figure 3 as the paper computed it (onsets: Lc < 0.9 log K; z-gap > 0.1 nats; tau dotted)",
        height=480 + 18 * len(data),
        template="plotly_white",
        legend=dict(font=dict(size=10), orientation="h", y=-0.15, yanchor="top", x=0, xanchor="left"),
    )
    return fig


def _panel_a(fig, go, name: str, d: dict[str, Any], c: str, col: int) -> None:
    """Panel (a) of one run: Lc and the z-gap over log K, the two onsets marked."""
    a, on = records(_rows(d, "a")), d.get("onsets") or {}
    x = [r["step"] for r in a]
    fig.add_trace(
        go.Scatter(x=x, y=[nan_none(r["Lc_over_logK"]) for r in a], name=f"{name}: Lc / log K", line=dict(color=c)),
        1,
        col,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[nan_none(r["zgap_over_logK"]) for r in a],
            name=f"{name}: z-gap / log K",
            line=dict(color=c, dash="dash"),
        ),
        1,
        col,
    )
    for key, ycol, symbol in [("loss_onset", "Lc_over_logK", "circle"), ("z_onset_0.1", "zgap_over_logK", "diamond")]:
        at = next((r for r in a if r["step"] == on.get(key)), None)
        if at is not None:
            fig.add_trace(
                go.Scatter(
                    x=[at["step"]],
                    y=[at[ycol]],
                    mode="markers",
                    marker=dict(color=c, symbol=symbol, size=10),
                    name=f"{name}: {key.replace('_', ' ')} {at['step']}",
                ),
                1,
                col,
            )


def _rows(d: dict[str, Any], key: str):
    """A panel's rows (a DataFrame or a list; none where absent)."""
    v = d.get(key)
    return [] if v is None else v
