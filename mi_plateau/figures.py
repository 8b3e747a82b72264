"""Plotly figures built from the passes' tidy tables (no computation of results here)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from .frames import Rows, records

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


FAMILY_LABEL = {"paper": "paper definitions (L_seq)", "first_token": "first token (Lc)"}


def figure3(data: dict[str, dict[str, dict[str, Rows]]]):
    """Figure 3 for one or more runs under both definition families: data maps run name ->
    family -> figure3_data(...) output. One row of panels per family; one colour per run; in
    (a) solid = z-dependence, dashed = loss progress; in (b) solid = fraction of groups whose
    loss falls, dotted = the mean rate (right axis)."""
    import plotly.graph_objects as go
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
            c = PALETTE[i % len(PALETTE)]
            a, b = records(d["a"]), records(d["b"])
            x = [r["t_over_tau"] for r in a]
            show = row == 1
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[_nan_none(r["z_norm"]) for r in a],
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
                    y=[_nan_none(r["loss_progress"]) for r in a],
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
        for col in (1, 2):
            fig.add_vline(x=1.0, line=dict(color="gray", dash="longdashdot", width=1), row=row, col=col)
            fig.update_xaxes(title_text="t / tau (tau of this family)", row=row, col=col)
        fig.update_yaxes(title_text="normalised (0 to 1)", row=row, col=1)
        fig.update_yaxes(title_text="fraction of groups", row=row, col=2, range=[0, 1.05])
        fig.update_yaxes(title_text="nats / 100 steps", row=row, col=2, secondary_y=True)
    fig.update_layout(
        title="Figure 3: z-dependence, loss progress and per-group descent against t / tau",
        height=420 * len(fams) + 60 + 22 * len(data),
        template="plotly_white",
        legend=dict(font=dict(size=10), orientation="h", y=-0.08, yanchor="top", x=0, xanchor="left"),
        margin=dict(b=40 + 22 * len(data)),
    )
    return fig


# --- the interactive report's figures (mi_plateau.report) ----------------------------
# Every function takes tidy rows and draws them; the only arithmetic is choosing colour ranges.
# Strings that reach a figure (run names) arrive HTML-escaped from the report: plotly renders
# a small HTML subset in text and decodes entities, so escaped names display as typed.


def _finite(vals) -> list[float]:
    return [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _nan_none(v):
    """JSON has no NaN; plotly draws None as a gap."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


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
    import plotly.graph_objects as go
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
        ck = sorted(records(ck), key=lambda r: r["step"])
        x = [r["step"] for r in ck]
        for key, label, dash in LOSS_SERIES:
            if not _finite([r.get(key) for r in ck]):
                continue
            line = dict(color=METRIC_COLOURS[key], width=1.8) if one else dict(color=c, dash=dash)
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[_nan_none(r.get(key)) for r in ck],
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
                y=[_nan_none(r["cand_mass"]) for r in ck],
                name="candidate mass" if one else f"{name}: candidate mass",
                mode="lines",
                line=line,
                legendgroup=name,
            ),
            1,
            2,
        )
        m = marks.get(name, {})
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
            tc = "#444" if one else c
            fig.add_vline(
                x=m["tau"],
                line=dict(color=tc, dash="dot", width=1.2),
                row=1,
                col=1,
                annotation_text=f"tau = {m['tau']}",
                annotation_position="top left",
            )
            fig.add_vline(x=m["tau"], line=dict(color=tc, dash="dot", width=1.2), row=1, col=2)
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="nats", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="mass", range=[0, 1.02], row=1, col=2)
    both = lambda t: [{"xaxis.type": t, "xaxis2.type": t}]  # noqa: E731
    fig.update_layout(
        title=f"Loss curves: {', '.join(rows)}" if one else "Loss curves",
        height=460,
        template="plotly_white",
        legend=dict(font=dict(size=10)),
        updatemenus=[
            dict(
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
        ],
    )
    return fig


HEAD_SCORES = (
    ("sel_attn", "selector attention − baseline", "RdBu", True),
    ("dLc", "ablation ΔLc (nats)", "Reds", False),
    ("causal_share", "causal share of Δz", "RdBu", True),
)


def llc_curve(name: str, checkpoint_rows: Rows, llc_rows: Rows, log_K: float, tau: int | None = None):
    """The learning coefficient beside the loss: L_seq and Lc (nats, left axis) at every
    checkpoint and the LLC estimate (right axis) at the sampled ones, its error bars the spread
    over chains; log K long-dashed, tau dotted (``passes.llc``)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    ck = sorted(records(checkpoint_rows), key=lambda r: r["step"])
    for key in ("L_seq", "Lc"):
        if _finite([r.get(key) for r in ck]):
            fig.add_trace(
                go.Scatter(
                    x=[r["step"] for r in ck],
                    y=[_nan_none(r.get(key)) for r in ck],
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
            y=[_nan_none(r.get("llc_mean")) for r in llc],
            error_y=dict(type="data", array=[_nan_none(r.get("llc_std")) for r in llc], visible=True),
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


def _zrange(vals, diverging: bool) -> tuple[float, float]:
    v = _finite(vals) or [0.0]
    if diverging:
        m = max(abs(min(v)), abs(max(v))) or 1.0
        return -m, m
    return min(0.0, min(v)), max(v) or 1.0


def head_scores_over_training(head_rows: Rows, name: str, tau: int | None = None):
    """Every head's scores (rows L{l}H{h}) against step: selector attention at every checkpoint,
    ablation ΔLc and causal share at the checkpoints that had the per-head ablations."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    head_rows = records(head_rows)
    heads = sorted({(r["layer"], r["head_index"], r["head"]) for r in head_rows})
    labels = [h[2] for h in heads]
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.07, subplot_titles=[t for _, t, _, _ in HEAD_SCORES])
    for col, (key, _title, scale, div) in enumerate(HEAD_SCORES, 1):
        rows = [r for r in head_rows if _nan_none(r[key]) is not None]
        steps = sorted({r["step"] for r in rows})
        val = {(r["head"], r["step"]): r[key] for r in rows}
        z = [[_nan_none(val.get((h, s))) for s in steps] for h in labels]
        lo, hi = _zrange([r[key] for r in rows], div)
        fig.add_trace(
            go.Heatmap(
                x=steps,
                y=labels,
                z=z,
                colorscale=scale,
                zmin=lo,
                zmax=hi,
                zmid=0 if div else None,
                colorbar=dict(x=0.285 + 0.355 * (col - 1), len=0.9, thickness=10),
                hovertemplate="%{y} step %{x}<br>" + key + " = %{z:.3f}<extra></extra>",
            ),
            1,
            col,
        )
        if tau is not None:
            fig.add_vline(x=tau, line=dict(color="black", dash="dash", width=1), row=1, col=col)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="step", matches="x")
    fig.update_layout(
        title=f"{name}: per-head scores over training (dashed: tau)",
        height=max(320, 60 + 22 * len(labels)),
        template="plotly_white",
    )
    return fig


def head_grid_slider(head_rows: Rows, name: str, steps: list[int]):
    """Layer x head grids of selector attention, ablation ΔLc and causal share, and bars of ΔLc
    and ΔL1 per head, at one checkpoint chosen with a slider (one frame per step in ``steps``)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    head_rows = records(head_rows)
    L = 1 + max(r["layer"] for r in head_rows)
    H = 1 + max(r["head_index"] for r in head_rows)
    by = {(r["step"], r["layer"], r["head_index"]): r for r in head_rows}
    heads = [f"L{l}H{h}" for l in range(L) for h in range(H)]
    shown = set(steps)
    ranges = {key: _zrange([r[key] for r in head_rows if r["step"] in shown], div) for key, _, _, div in HEAD_SCORES}
    bar_hi = max(
        _finite([by[(s, l, h)][k] for s in steps for l in range(L) for h in range(H) for k in ("dLc", "dL1")]) or [1.0]
    )
    bar_lo = min(
        _finite([by[(s, l, h)][k] for s in steps for l in range(L) for h in range(H) for k in ("dLc", "dL1")]) + [0.0]
    )

    def traces(step):
        out = []
        for key, _, scale, div in HEAD_SCORES:
            z = [[_nan_none(by[(step, l, h)][key]) for h in range(H)] for l in range(L)]
            lo, hi = ranges[key]
            out.append(
                go.Heatmap(
                    z=z,
                    x=[f"H{h}" for h in range(H)],
                    y=[f"L{l}" for l in range(L)],
                    colorscale=scale,
                    zmin=lo,
                    zmax=hi,
                    zmid=0 if div else None,
                    texttemplate="%{z:.2f}",
                    showscale=False,
                    hovertemplate="%{y}%{x}: %{z:.3f}<extra>" + key + "</extra>",
                )
            )
        for key, c in (("dLc", "#d62728"), ("dL1", "#1f77b4")):
            out.append(
                go.Bar(
                    x=heads,
                    y=[_nan_none(by[(step, l, h)][key]) for l in range(L) for h in range(H)],
                    name=key,
                    marker_color=c,
                )
            )
        return out

    fig = make_subplots(
        rows=2,
        cols=3,
        specs=[[{}, {}, {}], [{"colspan": 3}, None, None]],
        row_heights=[0.55, 0.45],
        vertical_spacing=0.14,
        subplot_titles=[t for _, t, _, _ in HEAD_SCORES] + ["ablation ΔLc and ΔL1 per head (nats)"],
    )
    first = traces(steps[-1])  # open on the last checkpoint (the converged circuit)
    for i, t in enumerate(first):
        fig.add_trace(t, *((1, i + 1) if i < 3 else (2, 1)))
    fig.frames = [go.Frame(name=str(s), data=traces(s), traces=list(range(len(first)))) for s in steps]
    for c in (1, 2, 3):
        fig.update_yaxes(autorange="reversed", row=1, col=c)
    fig.update_yaxes(range=[bar_lo * 1.05, bar_hi * 1.05], title_text="nats", row=2, col=1)
    fig.update_layout(
        title=f"{name}: heads at a checkpoint (slider)",
        height=640,
        template="plotly_white",
        barmode="group",
        sliders=[
            dict(
                active=len(steps) - 1,
                currentvalue=dict(prefix="step "),
                pad=dict(t=40),
                steps=[
                    dict(
                        label=str(s),
                        method="animate",
                        args=[
                            [str(s)],
                            dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0)),
                        ],
                    )
                    for s in steps
                ],
            )
        ],
    )
    return fig


def attention_pattern(pattern: list[list[float | None]], labels: list[str], title: str, query: int | None = None):
    """One head's attention pattern (rows: query position, columns: key position); ``labels``
    name the positions (tick text, so repeated characters stay distinct positions). ``query``
    outlines one query row (the position that predicts A1)."""
    import plotly.graph_objects as go

    n = len(labels)
    fig = go.Figure(
        go.Heatmap(
            z=pattern,
            x=list(range(n)),
            y=list(range(n)),
            colorscale="Blues",
            zmin=0,
            zmax=1,
            hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>",
        )
    )
    ticks = dict(tickmode="array", tickvals=list(range(n)), ticktext=labels, tickangle=0)
    fig.update_xaxes(title_text="key position", side="top", **ticks)
    fig.update_yaxes(title_text="query position", autorange="reversed", **ticks)
    if query is not None:
        fig.add_shape(
            type="rect", x0=-0.5, x1=query + 0.5, y0=query - 0.5, y1=query + 0.5, line=dict(color="#d62728", width=2)
        )
    fig.update_layout(title=title, height=560, width=640, template="plotly_white", margin=dict(t=110))
    return fig


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
                y=[None if _nan_none(r[key]) is None else 100 * r[key] for r in ck],
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


def patching(patch_rows: Rows, name: str, tau: int | None = None):
    """Causal patching of the selector positions: fraction of the logit difference moved when
    ``blocks.{l}.hook_resid_pre`` (solid) or ``hook_resid_post`` (dashed) at z is patched from
    the swapped example, per layer (one colour each), per step."""
    import plotly.graph_objects as go

    patch_rows = records(patch_rows)
    fig = go.Figure()
    for hook, dash in (("resid_pre", "solid"), ("resid_post", "dash")):
        for l in sorted({r["layer"] for r in patch_rows}):
            rows = sorted(
                (r for r in patch_rows if r["layer"] == l and r.get("hook", "resid_pre") == hook),
                key=lambda r: r["step"],
            )
            if rows:
                fig.add_trace(
                    go.Scatter(
                        x=[r["step"] for r in rows],
                        y=[_nan_none(r["patch_frac"]) for r in rows],
                        name=f"{hook} L{l}",
                        mode="lines+markers",
                        line=dict(color=PALETTE[l % len(PALETTE)], dash=dash),
                    )
                )
    if tau is not None:
        fig.add_vline(x=tau, line=dict(color="gray", dash="dash"), annotation_text="tau")
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="fraction of logit difference moved")
    fig.update_layout(
        title=f"{name}: patching the selector positions, layer by layer", height=380, template="plotly_white"
    )
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
            y = [_nan_none(v) for v in c[key]]
            top = max([top, *_finite(y)])
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
    names = {"paper": "paper definition (L_seq)", "first_token": "first token (Lc)"}
    for i, (fam, pts) in enumerate(points.items()):
        col = PALETTE[i % len(PALETTE)]
        shift = dodge ** (i - (len(points) - 1) / 2)
        xs = [x for x, t in zip(pts["x"], pts["tau"]) if t]
        fig.add_trace(
            go.Scatter(
                x=[x * shift for x in xs],
                y=[t for t in pts["tau"] if t],
                mode="markers",
                name=names.get(fam, fam),
                customdata=xs,
                marker=dict(color=col, size=9, symbol="circle" if i == 0 else "square"),
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
                    name=f"{names.get(fam, fam)}: no tau by this step (tau is above)",
                    marker=dict(color=col, size=10, symbol="triangle-up-open"),
                    text=[b[2] for b in bounds],
                    customdata=[b[0] for b in bounds],
                    hovertemplate="%{text}<br>x=%{customdata}<br>no tau by %{y}<extra></extra>",
                )
            )
        f = fits.get(fam) or {}
        if f.get("slope") is not None and xs:
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
    # explicit ticks with full labels (plotly's own log ticks label 20,000 as a bare "2"): the
    # swept values themselves when there are a few, else 1-2-5 steps
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
