"""The circuit: every head's scores over training, the layer x head grids at one checkpoint (a
slider), one head's attention pattern, and residual-stream patching layer by layer.

The score columns are the per-head scores registered with a ``Panel`` in
``passes.head_scores`` (selector attention, ablation ΔLc and causal share today), as many as
there are, each drawn with its own title and colour scale."""

from __future__ import annotations

from typing import Any

from ..frames import Rows, records
from ..interventions import resid_patches
from ..passes.head_scores import panels
from .style import PALETTE, finite, nan_none


def _zrange(vals, diverging: bool) -> tuple[float, float]:
    """The colour range of a heatmap: symmetric about 0 when ``diverging``, else from min(0, lowest)."""
    v = finite(vals) or [0.0]
    if diverging:
        m = max(abs(min(v)), abs(max(v))) or 1.0
        return -m, m
    return min(0.0, min(v)), max(v) or 1.0


def head_scores_over_training(head_rows: Rows, name: str, tau: int | None = None):
    """Every head's scores (rows L{l}H{h}) against step, one column per panel score
    (``head_scores.panels``): a score that needs no ablation at every checkpoint, the others
    (ablation ΔLc, causal share) at the checkpoints that had the per-head ablations."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    head_rows = records(head_rows)
    heads = sorted({(r["layer"], r["head_index"], r["head"]) for r in head_rows})
    labels = [h[2] for h in heads]
    shown = panels()
    fig = make_subplots(
        rows=1,
        cols=len(shown),
        # room for a colour bar and the next panel's head labels; narrower only past 8 panels
        horizontal_spacing=min(0.07, 0.5 / max(len(shown) - 1, 1)),
        subplot_titles=[sc.panel.title for sc in shown],
    )
    for col, score in enumerate(shown, 1):
        key, p = score.name, score.panel
        rows = [r for r in head_rows if nan_none(r[key]) is not None]
        steps = sorted({r["step"] for r in rows})
        val = {(r["head"], r["step"]): r[key] for r in rows}
        z = [[nan_none(val.get((h, s))) for s in steps] for h in labels]
        lo, hi = _zrange([r[key] for r in rows], p.diverging)
        fig.add_trace(
            go.Heatmap(
                x=steps,
                y=labels,
                z=z,
                colorscale=p.scale,
                zmin=lo,
                zmax=hi,
                zmid=0 if p.diverging else None,
                # the colour bar at its subplot's right edge
                colorbar=dict(x=fig.get_subplot(1, col).xaxis.domain[1], len=0.9, thickness=10),
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
    """Layer x head grids of the panel scores (``head_scores.panels``: selector attention,
    ablation ΔLc and causal share today), and bars of ΔLc and ΔL1 per head, at one checkpoint
    chosen with a slider (one frame per step in ``steps``)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    head_rows = records(head_rows)
    L = 1 + max(r["layer"] for r in head_rows)
    H = 1 + max(r["head_index"] for r in head_rows)
    by = {(r["step"], r["layer"], r["head_index"]): r for r in head_rows}
    shown, scores = set(steps), panels()
    n = len(scores)
    ranges = {
        sc.name: _zrange([r[sc.name] for r in head_rows if r["step"] in shown], sc.panel.diverging) for sc in scores
    }
    bar_lo, bar_hi = _bar_range(by, steps, L, H)
    fig = make_subplots(
        rows=2,
        cols=n,
        specs=[[{}] * n, [{"colspan": n}] + [None] * (n - 1)],
        row_heights=[0.55, 0.45],
        vertical_spacing=0.14,
        subplot_titles=[sc.panel.title for sc in scores] + ["ablation ΔLc and ΔL1 per head (nats)"],
    )
    first = _grid_traces(by, steps[-1], L, H, ranges)  # open on the last checkpoint (the converged circuit)
    for i, t in enumerate(first):
        fig.add_trace(t, *((1, i + 1) if i < n else (2, 1)))
    fig.frames = [
        go.Frame(name=str(s), data=_grid_traces(by, s, L, H, ranges), traces=list(range(len(first)))) for s in steps
    ]
    for c in range(1, n + 1):
        fig.update_yaxes(autorange="reversed", row=1, col=c)
    fig.update_yaxes(range=[bar_lo * 1.05, bar_hi * 1.05], title_text="nats", row=2, col=1)
    fig.update_layout(
        title=f"{name}: heads at a checkpoint (slider)",
        height=640,
        template="plotly_white",
        barmode="group",
        sliders=[_step_slider(steps)],
    )
    return fig


def _bar_range(by: dict[tuple[int, int, int], dict], steps: list[int], L: int, H: int) -> tuple[float, float]:
    """The bars' value range over the shown ``steps``: the lowest ΔLc / ΔL1 (or 0), the highest (or 1)."""
    vals = finite([by[(s, l, h)][k] for s in steps for l in range(L) for h in range(H) for k in ("dLc", "dL1")])
    return min(vals + [0.0]), max(vals or [1.0])


def _grid_traces(by: dict[tuple[int, int, int], dict], step: int, L: int, H: int, ranges: dict[str, tuple]) -> list:
    """One slider frame: a layer x head heatmap per panel score (colour ranges fixed across
    frames by ``ranges``), then the ΔLc and ΔL1 bars per head, at ``step``."""
    import plotly.graph_objects as go

    out = []
    for score in panels():
        key, p = score.name, score.panel
        z = [[nan_none(by[(step, l, h)][key]) for h in range(H)] for l in range(L)]
        lo, hi = ranges[key]
        out.append(
            go.Heatmap(
                z=z,
                x=[f"H{h}" for h in range(H)],
                y=[f"L{l}" for l in range(L)],
                colorscale=p.scale,
                zmin=lo,
                zmax=hi,
                zmid=0 if p.diverging else None,
                texttemplate="%{z:.2f}",
                showscale=False,
                hovertemplate="%{y}%{x}: %{z:.3f}<extra>" + key + "</extra>",
            )
        )
    heads = [f"L{l}H{h}" for l in range(L) for h in range(H)]
    for key, c in (("dLc", "#d62728"), ("dL1", "#1f77b4")):
        out.append(
            go.Bar(
                x=heads,
                y=[nan_none(by[(step, l, h)][key]) for l in range(L) for h in range(H)],
                name=key,
                marker_color=c,
            )
        )
    return out


def _step_slider(steps: list[int]) -> dict[str, Any]:
    """A slider with one position per step (each animates to that step's frame), set on the last."""
    return dict(
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


PATCH_DASHES = ("solid", "dash", "dot", "dashdot")  # one per registered patch, in its order


def patching(patch_rows: Rows, name: str, tau: int | None = None):
    """Causal patching of the selector positions: fraction of the logit difference moved when
    the hook of each registered patch (``interventions.resid_patches``: ``blocks.{l}.hook_resid_pre``
    solid, ``hook_resid_post`` dashed) at z is patched from the swapped example, per layer (one
    colour each), per step."""
    import plotly.graph_objects as go

    patch_rows = records(patch_rows)
    fig = go.Figure()
    for i, iv in enumerate(resid_patches()):
        hook, dash = iv.name, PATCH_DASHES[i % len(PATCH_DASHES)]
        for l in sorted({r["layer"] for r in patch_rows}):
            rows = sorted(
                (r for r in patch_rows if r["layer"] == l and r.get("hook", "resid_pre") == hook),
                key=lambda r: r["step"],
            )
            if rows:
                fig.add_trace(
                    go.Scatter(
                        x=[r["step"] for r in rows],
                        y=[nan_none(r["patch_frac"]) for r in rows],
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
