"""Tidy tables: every analysis returns a pandas DataFrame (one row per checkpoint, head, group,
...); the functions that draw or write them also accept plain lists of row dicts. Here a table
is made (``frame``), read back as rows (``records``) and turned into text: a cell (``cell``, the
package's one number formatter), a Markdown table (``to_markdown``), CSV (``to_csv``). The files
a table is written to are the report layer's (``outputs``).

pandas is imported when a table is made, not when the package is: light commands stay quick.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
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


def columns(rows: Rows) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def cell(
    v: Any,
    spec: str = ".3g",
    *,
    missing: str | None = "—",
    yes_no: bool = False,
    whole_below: float = 0.0,
    large: tuple[float, str] | None = None,
    small: tuple[float, str] | None = None,
) -> str:
    """A value as a table cell or a line of text shows it; the one number formatter of the package.

    A float is written with the format ``spec`` (``".3g"``, ``".2f"``), or: as an integer when it is
    whole and its size is under ``whole_below`` (steps and counts that a NaN elsewhere made floats);
    with ``large[1]`` when its size is at least ``large[0]``; with ``small[1]`` when it is nonzero and
    its size is under ``small[0]``. None and NaN read ``missing`` (None: written as they are,
    ``None`` and ``nan``); booleans read yes/no with ``yes_no``; anything else is ``str(v)``.

    >>> cell(0.000123), cell(3.0, whole_below=1e7), cell(None), cell(2.5, ".2f"), cell(True, yes_no=True)
    ('0.000123', '3', '—', '2.50', 'yes')
    """
    if missing is not None and (v is None or (isinstance(v, float) and math.isnan(v))):
        return missing
    if isinstance(v, bool):
        return ("yes" if v else "no") if yes_no else str(v)
    if not isinstance(v, float):
        return str(v)
    if abs(v) < whole_below and v.is_integer():
        return str(int(v))
    if large is not None and abs(v) >= large[0]:
        spec = large[1]
    elif small is not None and v != 0 and abs(v) < small[0]:
        spec = small[1]
    return format(v, spec)


def lead(ro: dict, key: str) -> str:
    """A routing number with its bootstrap interval, e.g. ``0.83 [0.78, 0.85]``; an interval of
    one value says why: every resample of the groups gave the same checkpoint (the timing is
    resolved only to the checkpoint spacing)."""
    lo, hi = ro.get(f"{key}_lo"), ro.get(f"{key}_hi")
    if not (finite(lo) and finite(hi)):
        return cell(ro.get(key), ".2f")
    if f"{lo:.2f}" == f"{hi:.2f}":
        return cell(ro.get(key), ".2f") + f" [{lo:.2f}: every resample, the same checkpoint]"
    return cell(ro.get(key), ".2f") + f" [{lo:.2f}, {hi:.2f}]"


def finite(v) -> bool:
    """A number that is neither missing (None), NaN nor infinite."""
    return isinstance(v, (int, float)) and math.isfinite(v)


def _md_cell(text: str) -> str:
    """One Markdown table cell: pipes escaped, line breaks flattened (a newline ends a row)."""
    return " ".join(text.replace("|", "\\|").split()) if ("\n" in text or "\r" in text) else text.replace("|", "\\|")


def to_markdown(rows, cols: Sequence[str] | None = None, digits: int = 3) -> str:
    """Rows as a Markdown table: ``digits`` significant digits, whole floats as integers, sizes
    under 1e-3 in scientific notation (``1.23e-04``), None and NaN as a dash; pipes escaped."""
    rows = records(rows)
    cols = list(cols or columns(rows))
    spec = f".{digits}g"
    out = ["| " + " | ".join(_md_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        cells = (cell(r.get(c), spec, whole_below=1e7, small=(1e-3, ".2e")) for c in cols)
        out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def _csv_cell(v: Any) -> Any:
    """A CSV value; text that a spreadsheet would run as a formula (=, +, -, @ first) is quoted
    with a leading apostrophe. Numbers stay numbers."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def to_csv(rows, cols: Sequence[str] | None = None) -> str:
    rows = records(rows)
    cols = list(cols or columns(rows))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    # a column of whole numbers stays whole where a blank made a DataFrame store it as floats
    # (a tau of 150 beside a run without one is 150, not 150.0)
    whole = {c for c in cols if _whole_column([r.get(c) for r in rows])}
    for r in rows:
        w.writerow({c: _csv_cell(int(r[c]) if c in whole and _is_number(r.get(c)) else r.get(c)) for c in cols})
    return buf.getvalue()


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole_column(values: list) -> bool:
    """Every value a whole number or missing, at least one a float standing for a whole number."""
    nums = [v for v in values if _is_number(v)]
    missing = [v for v in values if v is None or (isinstance(v, float) and math.isnan(v))]
    return (
        bool(nums)
        and len(nums) + len(missing) == len(values)
        and all(float(v).is_integer() and abs(v) < 2**53 for v in nums)
        and any(isinstance(v, float) for v in nums)
        and bool(missing)
    )
