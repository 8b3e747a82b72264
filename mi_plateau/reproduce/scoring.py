"""The scorecard's generic parts: the committed tables read (a missing file: no rows), numbers
written as the page writes them, a comparison point of the paper's value and ours, and the
verdict rule over a row's points."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

INSIDE = "inside our seed spread"


def table_rows(docs: Path, name: str) -> list[dict[str, Any]]:
    """A committed table's rows (a JSON document: one row); [] where the file is absent."""
    path = docs / name
    data = json.loads(path.read_text()) if path.exists() else []
    return [r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict)]


def table_index(docs: Path, name: str, *keys: str, **where: Any) -> dict[Any, dict[str, Any]]:
    """The rows of ``name`` matching ``where``, by their ``keys`` (a tuple of them for several)."""
    rows = [r for r in table_rows(docs, name) if all(r.get(k) == v for k, v in where.items())]
    return {tuple(r.get(k) for k in keys) if len(keys) > 1 else r.get(keys[0]): r for r in rows}


def core_rows(docs: Path, key: str) -> list[dict[str, Any]]:
    """The rows of one of ``reproduce core``'s tables (``key``: table6, table9, ...) in the committed
    ``tables.json``; [] where it or the table is absent."""
    path = docs / "tables.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    rows = data.get(key) if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def num(v: Any) -> float | None:
    """A finite number, or None (a blank, a dash, text)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fmt(v: Any, dec: int = 0) -> str:
    """A number as the page writes it: whole thousands with separators, else 3 significant digits
    or ``dec`` decimals, whichever shows more; a missing one as a dash."""
    x = num(v)
    if x is None:
        return "—"
    if abs(x) >= 1000 or (x.is_integer() and abs(x) >= 100):
        return f"{round(x):,}"
    return max(f"{x:.3g}", f"{x:.{dec}f}" if dec else "", key=len)


def decimals(x: Any) -> int:
    """The decimals of a number as printed (its shortest repr): 3.6 -> 1, 23200 -> 0."""
    text = repr(x)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def point(label: str, ref: Any, ours: Any = (), interval: Any = None, digits: int | None = None) -> dict[str, Any]:
    """One comparison: the paper's ``ref`` and ours (a value per run, or one estimate and its 95%
    ``interval``), compared at ``digits`` decimals (default: those the paper prints)."""
    vals = [x for x in map(num, ours) if x is not None]
    iv = tuple(map(num, interval)) if interval and None not in map(num, interval) else None
    return {
        "label": label,
        "ref": num(ref),
        "vals": vals,
        "iv": iv,
        "digits": decimals(ref) if digits is None else digits,
    }


def inside(p: dict[str, Any]) -> bool:
    """The paper's value within our range (runs' min to max, or the interval), at its decimals."""
    lo, hi = p["iv"] or (min(p["vals"]), max(p["vals"]))
    return round(lo, p["digits"]) <= p["ref"] <= round(hi, p["digits"])


def ours_text(p: dict[str, Any]) -> str:
    """Our side of a point: one value, a range over runs with their mean, or an estimate and its interval."""
    v, d = p["vals"], p["digits"]
    if not v or p["iv"]:
        return f"{fmt(v[0], d)} [{fmt(p['iv'][0], d)}, {fmt(p['iv'][1], d)}]" if v else "—"
    mean = fmt(sum(v) / len(v), d)
    return fmt(v[0], d) if len(v) == 1 else f"{fmt(min(v), d)} to {fmt(max(v), d)} ({len(v)} runs, mean {mean})"


def paper_text(p: dict[str, Any]) -> str:
    """The paper's side of a point, at the decimals compared."""
    return fmt(p["ref"], p["digits"])


def cells(points: list[dict[str, Any]], text=ours_text) -> str:
    """Points as one cell, ``label: value``; the values of points that share a label joined by " / "."""
    groups: dict[str, list[str]] = {}
    for p in points:
        groups.setdefault(p["label"], []).append(text(p))
    return "; ".join(f"{k}: {' / '.join(v)}" for k, v in groups.items())


def verdict(row: dict[str, Any], explained: tuple[str, str] | None = None) -> tuple[str, str]:
    """The verdict and its reason: from ``agree`` (a bool per case, where the paper's value is a
    verdict or a sign), else from the points with a number on both sides (``bound``: our lower
    bound where none has), and the row's explanation (the reason, the doc section)."""
    if row.get("agree"):
        ok, n = sum(row["agree"]), len(row["agree"])
        return ("same verdict" if ok == n else "open"), f"the paper's verdict or sign in {ok} of {n} cases"
    both = [p for p in row["points"] if p["ref"] is not None and p["vals"]]
    if not both:
        return (
            ("open", row["bound"]) if row.get("bound") else ("not run", row.get("missing") or "no number of ours yet")
        )
    out = [p for p in both if not inside(p)]
    if not out:
        return INSIDE, "the paper's value inside ours" + (f" at all {len(both)} points" if len(both) > 1 else "")
    if explained:
        return "explained", f"{explained[0]} ([{explained[1].split('#')[0]}]({explained[1]}))"
    p, more = out[0], f"; {len(out) - 1} more outside" if len(out) > 1 else ""
    one = " (one run)" if len(p["vals"]) == 1 and not p["iv"] else ""
    return "open", f"{p['label']}: the paper's {fmt(p['ref'], p['digits'])} against ours {ours_text(p)}{one}{more}"


def pairs(name: str, refs: dict, fields: Any, label: str = "K = {}", keys: Any = ("K",), iv=None, note=None, **where):
    """A reader of the paper's ``refs`` (by key; a tuple read at each field's position) against the
    ``fields`` of the row of ``name`` with that key (``iv``: the fields of its 95% interval)."""
    fields = [(None, fields)] if isinstance(fields, str) else [(i, f) for i, f in enumerate(fields) if f]

    def read(docs: Path) -> dict[str, Any]:
        rows = table_index(docs, name, *keys, **where)
        at = lambda k, f: rows.get(k, {}).get(f)
        lab = lambda k: label.format(*k) if isinstance(k, tuple) else label.format(k)
        pts = [
            point(lab(k), r if i is None else r[i], [at(k, f)], iv and (at(k, iv[0]), at(k, iv[1])))
            for k, r in refs.items()
            for i, f in fields
        ]
        return {"points": pts, "note": note(rows) if note and rows else ""}

    return read


def k_list(rows: dict, field: str, what: str) -> str:
    """``what`` and ``K = k: value`` for each row with a number in ``field``; "" if none has."""
    got = "; ".join(f"K = {k}: {fmt(r[field])}" for k, r in rows.items() if num(r.get(field)) is not None)
    return f"{what}{got}" if got else ""
