"""Tidy tables (lists of row dicts) written as Markdown, CSV and JSON. No pandas needed."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Sequence

Rows = list[dict[str, Any]]


def columns(rows: Rows) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _cell(v: Any, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
    return str(v)


def to_markdown(rows: Rows, cols: Sequence[str] | None = None, digits: int = 3) -> str:
    cols = list(cols or columns(rows))
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_cell(r.get(c), digits).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(out) + "\n"


def to_csv(rows: Rows, cols: Sequence[str] | None = None) -> str:
    cols = list(cols or columns(rows))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None or (isinstance(r.get(c), float) and math.isnan(r[c])) else r.get(c)) for c in cols})
    return buf.getvalue()


def write_table(path_stem: Path, rows: Rows, *, title: str = "", note: str = "", cols: Sequence[str] | None = None) -> list[Path]:
    """Write ``<stem>.md``, ``<stem>.csv`` and ``<stem>.json``; returns the paths."""
    from .checkpoints import atomic_write_bytes

    path_stem = Path(path_stem)
    md = (f"## {title}\n\n" if title else "") + to_markdown(rows, cols) + (f"\n{note}\n" if note else "")
    paths = [path_stem.with_suffix(".md"), path_stem.with_suffix(".csv"), path_stem.with_suffix(".json")]
    atomic_write_bytes(paths[0], md.encode())
    atomic_write_bytes(paths[1], to_csv(rows, cols).encode())
    from .summaries import nan_to_none

    # not atomic_write_json: that sorts keys, and a table keeps its column order
    atomic_write_bytes(paths[2], (json.dumps(nan_to_none({"title": title, "note": note, "rows": rows}), indent=1) + "\n").encode())
    return paths


def read_json_rows(path: Path) -> Rows:
    return json.loads(Path(path).read_text())["rows"]
