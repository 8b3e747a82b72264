"""What every figure shares: the run palette, and how missing values reach plotly.

Strings that reach a figure (run names) arrive HTML-escaped from the report: plotly renders a
small HTML subset in text and decodes entities, so escaped names display as typed.
"""

from __future__ import annotations

import math

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


def finite(vals) -> list[float]:
    """The values that are neither None nor NaN, in order."""
    return [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]


def nan_none(v):
    """JSON has no NaN; plotly draws None as a gap."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v
