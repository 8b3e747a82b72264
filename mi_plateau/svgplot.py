"""Minimal static line plots as SVG, for figures that must read on GitHub without JavaScript.

Interactive figures are plotly (figures.py); these small SVGs go in docs/. Pure string
building, no plotting dependency.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + 1e-9 * step:
        out.append(round(v, 10))
        v += step
    return out


def line_plot(
    series: Sequence[dict],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    hlines: Sequence[dict] = (),
    vlines: Sequence[float] = (),
    width: int = 640,
    height: int = 360,
    ylim: tuple[float, float] | None = None,
) -> str:
    """series: dicts with x, y, label, optional color and dash. hlines: dicts with y, color, label."""
    ml, mr, mt, mb = 60, 170, 34, 46
    pw, ph = width - ml - mr, height - mt - mb
    xs = [x for s in series for x in s["x"]]
    ys = [y for s in series for y in s["y"] if y is not None and math.isfinite(y)] + [h["y"] for h in hlines]
    x0, x1 = min(xs), max(xs)
    y0, y1 = ylim if ylim else (min(ys), max(ys))
    if y1 == y0:
        y1 = y0 + 1
    if x1 == x0:
        x1 = x0 + 1

    def X(x):
        return ml + (x - x0) / (x1 - x0) * pw

    def Y(y):
        return mt + (1 - (min(max(y, y0), y1) - y0) / (y1 - y0)) * ph

    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{ml + pw / 2}" y="18" text-anchor="middle" font-size="13">{e(title)}</text>',
           f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for t in _ticks(x0, x1):
        out.append(f'<line x1="{X(t):.1f}" y1="{mt + ph}" x2="{X(t):.1f}" y2="{mt + ph + 4}" stroke="#888"/>'
                   f'<text x="{X(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">{t:g}</text>')
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{ml - 4}" y1="{Y(t):.1f}" x2="{ml + pw}" y2="{Y(t):.1f}" stroke="#eee"/>'
                   f'<text x="{ml - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    out.append(f'<text x="{ml + pw / 2}" y="{height - 8}" text-anchor="middle">{e(xlabel)}</text>')
    out.append(f'<text transform="translate(14,{mt + ph / 2}) rotate(-90)" text-anchor="middle">{e(ylabel)}</text>')
    for v in vlines:
        out.append(f'<line x1="{X(v):.1f}" y1="{mt}" x2="{X(v):.1f}" y2="{mt + ph}" stroke="#999" stroke-dasharray="2,3"/>')
    legend = []
    for h in hlines:
        c = h.get("color", "#999")
        out.append(f'<line x1="{ml}" y1="{Y(h["y"]):.1f}" x2="{ml + pw}" y2="{Y(h["y"]):.1f}" stroke="{c}" stroke-dasharray="5,4" stroke-width="1"/>')
    for i, s in enumerate(series):
        c = s.get("color", COLORS[i % len(COLORS)])
        pts = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in zip(s["x"], s["y"]) if y is not None and math.isfinite(y))
        dash = ' stroke-dasharray="6,3"' if s.get("dash") else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.6"{dash}/>')
        legend.append((s["label"], c, dash))
    for i, (label, c, dash) in enumerate(legend):
        y = mt + 8 + 16 * i
        out.append(f'<line x1="{ml + pw + 10}" y1="{y}" x2="{ml + pw + 30}" y2="{y}" stroke="{c}" stroke-width="2"{dash}/>'
                   f'<text x="{ml + pw + 34}" y="{y + 4}">{e(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
