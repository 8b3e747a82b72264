"""Figure 3 as the paper drew it: (a) the first-token loss and the z-gap, both over log K, against
the step, with the two onsets marked, by the original's quantity (the training batches'
full-vocabulary first-token loss and its z-deranged gap) and by ours (Lc and the z-shuffle gap on
the evaluation set); (b) the cosine of consecutive weight displacements (5-point rolling mean)
against the step, tau marked, with reference series (the original code's own run) drawn dashed.
The data come from ``passes.lead`` and ``passes.descent`` (``figure3.json``'s ``paper`` part)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frames import records
from .style import PALETTE, nan_none

REFERENCE_COLOUR = "black"


@dataclass(frozen=True)
class PanelA:
    """One Figure 3(a) panel: where a run's data keep its rows and onsets, the loss and gap columns
    (over log K) it draws, their names in the legend, the onsets' label and the panel's title."""

    rows: str
    onsets: str
    loss: str
    gap: str
    loss_name: str
    gap_name: str
    onset_label: str
    title: str


PANELS_A = {
    "a_original": PanelA(
        "a_original",
        "onsets_original",
        "first_loss_over_logK",
        "zgap_over_logK",
        "train first-token loss / log K",
        "z-deranged gap / log K",
        " (original)",
        "(a) the original's: training first-token loss / log K, z-deranged gap / log K",
    ),
    "a": PanelA(
        "a",
        "onsets",
        "Lc_over_logK",
        "zgap_over_logK",
        "Lc / log K",
        "z-gap / log K",
        "",
        "(a) ours: Lc / log K and z-shuffle gap / log K",
    ),
}
TITLE_B = "(b) coherent descent: cosine of consecutive displacements (5-point mean)"


def figure3_paper(data: dict[str, dict[str, Any]], panels=None):
    """One run or several: ``data`` maps a run's name to its ``figure3.json`` ``paper`` part
    (``a_original``, ``onsets_original``: the original's curve rows and onsets; ``a``,
    ``onsets``: ours; ``b``: the displacement rows; ``windows``: its tau; ``reference``: True for
    a reference series, drawn black and dashed in (b) only). One colour per run; in (a) solid =
    loss / log K, dashed = z-gap / log K, a circle at the loss onset and a diamond at the z onset
    (0.1 nats); in (b) the smoothed cosine, a dotted line at the windows' tau. ``panels`` names
    the panels drawn side by side in that order: letters of "ab" ("a": ours), or a sequence of
    names among ``PANELS_A`` and "b"; None: the original's (a) where a run has its series, ours,
    and (b)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if panels is None:
        has_original = any(len(_rows(d, "a_original")) for d in data.values())
        panels = ("a_original", "a", "b") if has_original else ("a", "b")
    names = list(panels)
    if not names or set(names) - {*PANELS_A, "b"} or len(set(names)) != len(names):
        raise ValueError(f"figure3_paper: panels must be distinct names among {[*PANELS_A, 'b']}, not {panels!r}")
    col = {p: i + 1 for i, p in enumerate(names)}
    titles = [TITLE_B if p == "b" else PANELS_A[p].title for p in names]
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=titles)
    runs = [(n, d) for n, d in data.items() if not d.get("reference")]
    for i, (name, d) in enumerate(runs):
        c = PALETTE[i % len(PALETTE)]
        for p in names:
            if p == "b":
                _panel_b(fig, go, name, d, dict(color=c), col["b"])
            else:
                _panel_a(fig, go, name, d, PANELS_A[p], c, col[p])
    if "b" in col:
        for name, d in data.items():
            if d.get("reference"):
                _panel_b(fig, go, name, d, dict(color=REFERENCE_COLOUR, dash="dash"), col["b"])
    fig.update_xaxes(title_text="step")
    for p in names:
        y = dict(title_text="cosine", range=[-0.3, 1.0]) if p == "b" else dict(title_text="fraction of log K")
        fig.update_yaxes(row=1, col=col[p], **y)
    fig.update_layout(
        title="Figure 3 as the paper computed it (onsets: loss < 0.9 log K; z-gap > 0.1 nats; tau dotted)",
        height=480 + 18 * len(data),
        template="plotly_white",
        legend=dict(font=dict(size=10), orientation="h", y=-0.15, yanchor="top", x=0, xanchor="left"),
    )
    return fig


def _panel_b(fig, go, name: str, d: dict[str, Any], line: dict, col: int) -> None:
    """Panel (b) of one run: its smoothed cosine, its tau dotted."""
    b = records(_rows(d, "b"))
    fig.add_trace(
        go.Scatter(
            x=[r["step"] for r in b],
            y=[nan_none(r["cos_smooth"]) for r in b],
            name=f"{name}: cos (5-point mean)",
            line=line,
        ),
        1,
        col,
    )
    tau = (d.get("windows") or {}).get("tau")
    if tau:
        fig.add_vline(x=tau, line=dict(color=line["color"], dash="dot", width=1), row=1, col=col)


def _panel_a(fig, go, name: str, d: dict[str, Any], p: PanelA, c: str, col: int) -> None:
    """One (a) panel of one run: the loss and the z-gap over log K, the two onsets marked."""
    a, on = records(_rows(d, p.rows)), d.get(p.onsets) or {}
    x = [r["step"] for r in a]
    for key, name_, dash in ((p.loss, p.loss_name, None), (p.gap, p.gap_name, "dash")):
        fig.add_trace(
            go.Scatter(x=x, y=[nan_none(r[key]) for r in a], name=f"{name}: {name_}", line=dict(color=c, dash=dash)),
            1,
            col,
        )
    for key, ycol, symbol in [("loss_onset", p.loss, "circle"), ("z_onset_0.1", p.gap, "diamond")]:
        at = next((r for r in a if r["step"] == on.get(key)), None)
        if at is not None:
            fig.add_trace(
                go.Scatter(
                    x=[at["step"]],
                    y=[at[ycol]],
                    mode="markers",
                    marker=dict(color=c, symbol=symbol, size=10),
                    name=f"{name}: {key.replace('_', ' ')}{p.onset_label} {at['step']}",
                ),
                1,
                col,
            )


def _rows(d: dict[str, Any], key: str):
    """A panel's rows (a DataFrame or a list; none where absent)."""
    v = d.get(key)
    return [] if v is None else v
