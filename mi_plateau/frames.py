"""Tidy tables: every analysis returns a pandas DataFrame (one row per checkpoint, head, group,
...); the functions that draw or write them also accept plain lists of row dicts.

pandas is imported when a table is made, not when the package is: light commands stay quick.
"""

from __future__ import annotations

import math
from typing import Any

Rows = list[dict[str, Any]]


def frame(rows: Rows, columns: list[str] | None = None):
    """A DataFrame of the rows (columns in first-seen order; missing values NaN)."""
    import pandas as pd

    df = pd.DataFrame.from_records(rows, columns=columns) if rows or columns else pd.DataFrame()
    return df


def records(table) -> Rows:
    """Row dicts from a DataFrame (NaN kept as float NaN) or from a list of row dicts."""
    if table is None:
        return []
    if hasattr(table, "to_dict"):
        out = table.to_dict("records")
        for r in out:  # pandas gives numpy scalars and None for missing objects: plain Python, NaN
            for k, v in r.items():
                if v is None:
                    r[k] = math.nan
                elif hasattr(v, "item"):
                    r[k] = v.item()
        return out
    return list(table)
