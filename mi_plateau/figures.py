"""Plotly figures built from the passes' tidy tables (no computation of results here)."""

from __future__ import annotations

from typing import Any

Rows = list[dict[str, Any]]
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def figure3(data: dict[str, dict[str, Rows]]):
    """Figure 3 for one or more runs: data maps run name -> figure3_data(...) output."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1, cols=2,
        subplot_titles=("(a) z-dependence leads loss", "(b) transition = onset of coherent descent"),
        specs=[[{}, {"secondary_y": True}]],
    )
    for i, (name, d) in enumerate(data.items()):
        c = PALETTE[i % len(PALETTE)]
        a, b = d["a"], d["b"]
        x = [r["t_over_tau"] for r in a]
        fig.add_trace(go.Scatter(x=x, y=[r["z_norm"] for r in a], name=f"{name}: z-dependence", line=dict(color=c), legendgroup=name), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=[r["loss_progress"] for r in a], name=f"{name}: loss progress", line=dict(color=c, dash="dash"), legendgroup=name), 1, 1)
        xb = [r["t_over_tau"] for r in b]
        fig.add_trace(go.Scatter(x=xb, y=[r["frac_falling"] for r in b], name=f"{name}: fraction of groups falling", line=dict(color=c), legendgroup=name, showlegend=True), 1, 2)
        fig.add_trace(go.Scatter(x=xb, y=[r["mean_rate"] for r in b], name=f"{name}: mean rate (nats/100 steps)", line=dict(color=c, dash="dot"), legendgroup=name), 1, 2, secondary_y=True)
    for col in (1, 2):
        fig.add_vline(x=1.0, line=dict(color="gray", dash="dot"), row=1, col=col)
        fig.update_xaxes(title_text="t / tau", row=1, col=col)
    fig.update_yaxes(title_text="normalised (0 to 1)", row=1, col=1)
    fig.update_yaxes(title_text="fraction of groups whose Lc falls", row=1, col=2, range=[0, 1.05])
    fig.update_yaxes(title_text="mean rate of fall (nats / 100 steps)", row=1, col=2, secondary_y=True)
    fig.update_layout(title="Figure 3: internal precursors", height=480, template="plotly_white", legend=dict(font=dict(size=10)))
    return fig
