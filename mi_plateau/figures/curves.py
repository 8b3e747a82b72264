"""Loss against training step: one run's curves (the report's), the learning coefficient beside
the loss, and Figure 1's loss curves of several runs under both definition families."""

from __future__ import annotations

from typing import Any

from ..frames import Rows, records
from .style import PALETTE, finite, nan_none

LOSS_SERIES = (
    ("L_seq", "L_seq (sequence candidate loss, paper)", "solid"),
    ("Lc", "Lc (first-token candidate loss)", "dash"),
    ("L1", "L1 (first token, full vocabulary)", "dashdot"),
    ("full_loss", "full target loss", "dot"),
)


METRIC_COLOURS = {"L_seq": "#1f77b4", "Lc": "#d62728", "L1": "#2ca02c", "full_loss": "#9467bd", "cand_mass": "#ff7f0e"}


def loss_curves(rows: dict[str, Rows], marks: dict[str, dict[str, Any]]):
    """L_seq, Lc, L1 and full loss (nats) and the candidate mass against training step: one
    colour per metric for one run; for several, one colour per run and one line style per
    metric. log K is a grey long-dashed horizontal line, tau a dotted vertical one. ``rows`` maps run label ->
    checkpoint rows; ``marks`` maps run label -> {"log_K", "tau"}. Buttons switch the step axis
    between linear and log (a log axis has no room for step 0)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.08,
        subplot_titles=("losses (nats)", "candidate mass (probability on the group's K first tokens)"),
    )
    one = len(rows) == 1
    for i, (name, ck) in enumerate(rows.items()):
        c = PALETTE[i % len(PALETTE)]
        _add_run_curves(fig, name, sorted(records(ck), key=lambda r: r["step"]), c, one)
        _add_marks(fig, marks.get(name, {}), "#444" if one else c)
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="nats", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="mass", range=[0, 1.02], row=1, col=2)
    fig.update_layout(
        title=f"Loss curves: {', '.join(rows)}" if one else "Loss curves",
        height=460,
        template="plotly_white",
        legend=dict(font=dict(size=10)),
        updatemenus=[_step_axis_buttons()],
    )
    return fig


def _add_run_curves(fig, name: str, ck: Rows, c: str, one: bool) -> None:
    """One run's losses (left panel, the ones it has) and candidate mass (right panel); ``ck``
    sorted by step, ``c`` the run's colour, ``one`` when it is the only run (colour by metric)."""
    import plotly.graph_objects as go

    x = [r["step"] for r in ck]
    for key, label, dash in LOSS_SERIES:
        if not finite([r.get(key) for r in ck]):
            continue
        line = dict(color=METRIC_COLOURS[key], width=1.8) if one else dict(color=c, dash=dash)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[nan_none(r.get(key)) for r in ck],
                name=label if one else f"{name}: {label}",
                mode="lines",
                line=line,
                legendgroup=name,
                connectgaps=True,
            ),
            1,
            1,
        )
    line = dict(color=METRIC_COLOURS["cand_mass"], width=1.8) if one else dict(color=c, dash="dashdot")
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[nan_none(r["cand_mass"]) for r in ck],
            name="candidate mass" if one else f"{name}: candidate mass",
            mode="lines",
            line=line,
            legendgroup=name,
        ),
        1,
        2,
    )


def _add_marks(fig, m: dict[str, Any], tau_colour: str) -> None:
    """A run's log K (horizontal, left panel) and tau (vertical, both panels), where ``m`` has them."""
    if m.get("log_K") is not None:
        fig.add_hline(
            y=m["log_K"],
            line=dict(color="gray", dash="longdash", width=1),
            row=1,
            col=1,
            annotation_text=f"log K = {m['log_K']:.3f}",
            annotation_position="top right",
        )
    if m.get("tau") is not None:
        fig.add_vline(
            x=m["tau"],
            line=dict(color=tau_colour, dash="dot", width=1.2),
            row=1,
            col=1,
            annotation_text=f"tau = {m['tau']}",
            annotation_position="top left",
        )
        fig.add_vline(x=m["tau"], line=dict(color=tau_colour, dash="dot", width=1.2), row=1, col=2)


def _step_axis_buttons() -> dict[str, Any]:
    """Buttons that switch both panels' step axes between linear and log."""

    def both(t: str) -> list[dict[str, str]]:
        return [{"xaxis.type": t, "xaxis2.type": t}]

    return dict(
        type="buttons",
        direction="right",
        x=0,
        y=1.16,
        xanchor="left",
        showactive=True,
        buttons=[
            dict(label="linear steps", method="relayout", args=both("linear")),
            dict(label="log steps", method="relayout", args=both("log")),
        ],
    )


def llc_curve(name: str, checkpoint_rows: Rows, llc_rows: Rows, log_K: float, tau: int | None = None):
    """The learning coefficient beside the loss: L_seq and Lc (nats, left axis) at every
    checkpoint and the LLC estimate (right axis) at the sampled ones, its error bars the spread
    over chains; log K long-dashed, tau dotted (``estimators.llc``)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    ck = sorted(records(checkpoint_rows), key=lambda r: r["step"])
    for key in ("L_seq", "Lc"):
        if finite([r.get(key) for r in ck]):
            fig.add_trace(
                go.Scatter(
                    x=[r["step"] for r in ck],
                    y=[nan_none(r.get(key)) for r in ck],
                    name=f"{key} (nats)",
                    mode="lines",
                    line=dict(color=METRIC_COLOURS[key], width=1.6),
                ),
                secondary_y=False,
            )
    llc = sorted(records(llc_rows), key=lambda r: r["step"])
    fig.add_trace(
        go.Scatter(
            x=[r["step"] for r in llc],
            y=[nan_none(r.get("llc_mean")) for r in llc],
            error_y=dict(type="data", array=[nan_none(r.get("llc_std")) for r in llc], visible=True),
            name="LLC estimate",
            mode="lines+markers",
            line=dict(color="#000", width=1.4, dash="dot"),
            customdata=[[r.get("llc_drift"), r.get("chains_failed")] for r in llc],
            hovertemplate="step %{x}<br>LLC %{y:.4g}<br>drift %{customdata[0]:.3g}<br>chains failed "
            "%{customdata[1]}<extra></extra>",
        ),
        secondary_y=True,
    )
    fig.add_hline(y=log_K, line=dict(color="gray", dash="longdash", width=1), annotation_text=f"log K = {log_K:.3f}")
    if tau is not None:
        fig.add_vline(x=tau, line=dict(color="#444", dash="dot", width=1.2), annotation_text=f"tau = {tau}")
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="nats", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="LLC estimate", secondary_y=True)
    fig.update_layout(title=f"{name}: the learning coefficient beside the loss", height=420)
    return fig


def figure1(curves: dict[str, dict[str, Any]]):
    """Figure 1: loss against step for several runs, under both definition families (left: the
    paper's L_seq; right: the first-token Lc), with each run's log K as a labelled horizontal
    line. ``curves`` maps a run label -> {"steps", "L_seq", "Lc", "log_K"}."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.08,
        subplot_titles=("sequence candidate loss L_seq (paper definition)", "first-token candidate loss Lc"),
    )
    top = 0.0
    for i, (name, c) in enumerate(curves.items()):
        col = PALETTE[i % len(PALETTE)]
        for j, key in enumerate(("L_seq", "Lc"), 1):
            y = [nan_none(v) for v in c[key]]
            top = max([top, *finite(y)])
            fig.add_trace(
                go.Scatter(
                    x=c["steps"],
                    y=y,
                    name=name,
                    legendgroup=name,
                    showlegend=j == 1,
                    mode="lines",
                    line=dict(color=col, width=1.6),
                    connectgaps=True,
                ),
                1,
                j,
            )
            label = f"log {name.split('=')[-1]}" if name.startswith("K=") else "log K"
            fig.add_hline(
                y=c["log_K"],
                line=dict(color=col, dash="dash", width=1),
                row=1,
                col=j,
                # with many runs the labels would pile up: the colour says whose line it is
                **(
                    dict(
                        annotation_text=label, annotation_position="top right", annotation_font=dict(size=9, color=col)
                    )
                    if len(curves) <= 5
                    else {}
                ),
            )
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(title_text="nats", range=[0, top * 1.05 or 1.0])
    fig.update_layout(
        title="Figure 1: loss curves (dashed: log K of each run)",
        height=440,
        width=1100,
        template="plotly_white",
        legend=dict(title="run"),
    )
    return fig
