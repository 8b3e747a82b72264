"""The transition's signatures against time: Figure 3 (the swap gap, the loss progress and the
groups whose loss falls, against t / tau), the groups' accuracy against step, and the transition
width's two ends on the loss curves."""

from __future__ import annotations

from ..frames import Rows, records
from .style import PALETTE, nan_none

FAMILY_LABEL = {"paper": "paper definitions (L_seq)", "first_token": "first token (Lc)"}


def figure3(data: dict[str, dict[str, dict[str, Rows]]]):
    """Figure 3 for one or more runs under both definition families: data maps run name ->
    family -> figure3_data(...) output. One row of panels per family; one colour per run; in
    (a) solid = z-dependence, dashed = loss progress; in (b) solid = fraction of groups whose
    loss falls, dotted = the mean rate (right axis)."""
    from plotly.subplots import make_subplots

    fams = [f for f in FAMILY_LABEL if any(len(d.get(f, {}).get("a", [])) for d in data.values())] or ["first_token"]
    titles = []
    for f in fams:
        titles += [
            f"(a) swap gap and loss progress, {FAMILY_LABEL[f]}",
            f"(b) groups whose loss falls, {FAMILY_LABEL[f]}",
        ]
    fig = make_subplots(
        rows=len(fams),
        cols=2,
        subplot_titles=titles,
        vertical_spacing=0.16,
        specs=[[{}, {"secondary_y": True}] for _ in fams],
    )
    for row, fam in enumerate(fams, 1):
        for i, (name, byfam) in enumerate(data.items()):
            d = byfam.get(fam, {"a": [], "b": []})
            _add_figure3_run(fig, row, name, records(d["a"]), records(d["b"]), PALETTE[i % len(PALETTE)])
        _figure3_axes(fig, row)
    fig.update_layout(
        title="Figure 3: z-dependence, loss progress and per-group descent against t / tau",
        height=420 * len(fams) + 60 + 22 * len(data),
        template="plotly_white",
        legend=dict(font=dict(size=10), orientation="h", y=-0.08, yanchor="top", x=0, xanchor="left"),
        margin=dict(b=40 + 22 * len(data)),
    )
    return fig


def _add_figure3_run(fig, row: int, name: str, a: Rows, b: Rows, c: str) -> None:
    """One run's four lines in one family's row: panel (a) from rows ``a``, panel (b) from rows
    ``b``, in colour ``c``; the legend lists each run once (from the first row)."""
    import plotly.graph_objects as go

    x = [r["t_over_tau"] for r in a]
    show = row == 1
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[nan_none(r["z_norm"]) for r in a],
            name=f"{name}: z-dependence (swap gap / max)",
            line=dict(color=c),
            legendgroup=name,
            showlegend=show,
            mode="lines+markers" if len(a) < 40 else "lines",
        ),
        row,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[nan_none(r["loss_progress"]) for r in a],
            name=f"{name}: loss progress",
            line=dict(color=c, dash="dash"),
            legendgroup=name,
            showlegend=show,
        ),
        row,
        1,
    )
    xb = [r["t_over_tau"] for r in b]
    fig.add_trace(
        go.Scatter(
            x=xb,
            y=[r["frac_falling"] for r in b],
            name=f"{name}: fraction of groups falling",
            line=dict(color=c, width=1.5),
            legendgroup=name,
            showlegend=show,
        ),
        row,
        2,
    )
    fig.add_trace(
        go.Scatter(
            x=xb,
            y=[r["mean_rate"] for r in b],
            name=f"{name}: mean rate (nats/100 steps)",
            line=dict(color=c, dash="dot"),
            legendgroup=name,
            showlegend=show,
        ),
        row,
        2,
        secondary_y=True,
    )


def _figure3_axes(fig, row: int) -> None:
    """One family's row: t / tau = 1 marked in both panels, and the axis titles and ranges."""
    for col in (1, 2):
        fig.add_vline(x=1.0, line=dict(color="gray", dash="longdashdot", width=1), row=row, col=col)
        fig.update_xaxes(title_text="t / tau (tau of this family)", row=row, col=col)
    fig.update_yaxes(title_text="normalised (0 to 1)", row=row, col=1)
    fig.update_yaxes(title_text="fraction of groups", row=row, col=2, range=[0, 1.05])
    fig.update_yaxes(title_text="nats / 100 steps", row=row, col=2, secondary_y=True)


def group_accuracy(hist_rows: Rows, checkpoint_rows: Rows, name: str, tau: int | None = None):
    """The collective transition: the share of groups at each accuracy level (k / K of a group's
    examples right) against step, and the % of groups >= 80%, % at 100% and mean accuracy."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    hist_rows, checkpoint_rows = records(hist_rows), records(checkpoint_rows)
    steps = sorted({r["step"] for r in hist_rows})
    levels = sorted({r["acc"] for r in hist_rows})
    val = {(r["step"], r["acc"]): r["pct_groups"] for r in hist_rows}
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        horizontal_spacing=0.16,
        subplot_titles=("% of groups at each accuracy", "summary of the groups"),
    )
    fig.add_trace(
        go.Heatmap(
            x=steps,
            y=levels,
            z=[[val.get((s, a), 0.0) for s in steps] for a in levels],
            colorscale="Viridis",
            zmin=0,
            zmax=100,
            colorbar=dict(title="% groups", x=0.48, thickness=10),
            hovertemplate="step %{x}<br>accuracy %{y:.2f}: %{z:.1f}% of groups<extra></extra>",
        ),
        1,
        1,
    )
    ck = sorted(checkpoint_rows, key=lambda r: r["step"])
    x = [r["step"] for r in ck]
    for key, label, c in (
        ("groups_ge80", "% groups ≥ 80%", "#2ca02c"),
        ("groups_100", "% groups at 100%", "#9467bd"),
        ("acc_mean", "mean accuracy (%)", "#ff7f0e"),
    ):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[None if nan_none(r[key]) is None else 100 * r[key] for r in ck],
                name=label,
                mode="lines",
                line=dict(color=c),
            ),
            1,
            2,
        )
    if tau is not None:
        for col in (1, 2):
            fig.add_vline(
                x=tau, line=dict(color="white" if col == 1 else "black", dash="dash", width=1), row=1, col=col
            )
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="group accuracy", row=1, col=1)
    fig.update_yaxes(title_text="%", range=[0, 101], row=1, col=2)
    fig.update_layout(
        title=f"{name}: per-group accuracy over training (dashed: tau)", height=440, template="plotly_white"
    )
    return fig


def width_curves(panels: dict[str, dict[str, dict]], low: float, high: float, title: str):
    """The transition width read on the curves: loss / log K against step, one panel per
    condition and one line per run, the width's thresholds (``high`` and ``low``, fractions of
    log K) as dashed lines, each run's t_start (open circle) and t_end (filled) on its line.
    ``panels`` maps a panel title -> run label -> {"steps", "y" (fraction of log K), "t_start",
    "t_end"} (either end None where the run has none). A label keeps its colour in every panel
    and is listed once."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    n = max(len(panels), 1)
    cols = min(n, 2)
    nrows = -(-n // cols)
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=list(panels) or [""], vertical_spacing=0.3 / nrows)
    colour: dict[str, str] = {}
    top = 1.0
    for i, runs in enumerate(panels.values()):
        row, col = i // cols + 1, i % cols + 1
        for label, c in runs.items():
            first = label not in colour
            colour.setdefault(label, PALETTE[len(colour) % len(PALETTE)])
            y = [nan_none(v) for v in c["y"]]
            top = max([top, *(v for v in y if v is not None)])
            fig.add_trace(
                go.Scatter(
                    x=c["steps"],
                    y=y,
                    name=label,
                    legendgroup=label,
                    showlegend=first,
                    mode="lines",
                    line=dict(color=colour[label], width=1.4),
                    connectgaps=True,
                ),
                row,
                col,
            )
            ends = [(t, s) for t, s in ((c["t_start"], "circle-open"), (c["t_end"], "circle")) if t is not None]
            at = {s: v for s, v in zip(c["steps"], y)}
            fig.add_trace(
                go.Scatter(
                    x=[t for t, _ in ends],
                    y=[at.get(t) for t, _ in ends],
                    mode="markers",
                    marker=dict(
                        color=colour[label],
                        symbol=[s for _, s in ends],
                        size=9,
                        line=dict(width=2, color=colour[label]),
                    ),
                    legendgroup=label,
                    showlegend=False,
                    hovertext=[f"{label}: {'t_start' if s == 'circle-open' else 't_end'} {t:,}" for t, s in ends],
                    hoverinfo="text",
                ),
                row,
                col,
            )
        for level in (high, low):
            fig.add_hline(y=level, line=dict(color="gray", dash="dash", width=1), row=row, col=col)
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(title_text="L_seq / log K", range=[0, top * 1.05])
    fig.update_layout(
        title=title, height=80 + 340 * nrows, width=1100, template="plotly_white", legend=dict(title="run")
    )
    return fig
