"""The scorecard's generic parts: the committed tables read (a missing file: no rows), numbers
written as the page writes them, and a point's cell text. The verdict rule is ``verdicts``'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .verdicts import fmt, num, point


def table_rows(docs: Path, name: str) -> list[dict[str, Any]]:
    """A committed table's rows (a JSON document: one row); [] where the file is absent."""
    path = docs / name
    data = json.loads(path.read_text()) if path.exists() else []
    return [r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict)]


def table_index(docs: Path, name: str, *keys: str, **where: Any) -> dict[Any, dict[str, Any]]:
    """The rows of ``name`` matching ``where``, by their ``keys`` (a tuple of them for several); the
    last row of a key where it has several (``table_groups`` keeps them all)."""
    return {k: g[-1] for k, g in table_groups(docs, name, *keys, **where).items()}


def table_groups(docs: Path, name: str, *keys: str, **where: Any) -> dict[Any, list[dict[str, Any]]]:
    """``table_index``, keeping every row of a key (the runs of one condition: its seeds), in order."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in table_rows(docs, name):
        if all(r.get(k) == v for k, v in where.items()):
            out.setdefault(tuple(r.get(k) for k in keys) if len(keys) > 1 else r.get(keys[0]), []).append(r)
    return out


def core_rows(docs: Path, key: str) -> list[dict[str, Any]]:
    """The rows of one of ``reproduce core``'s tables (``key``: table6, table9, ...) in the committed
    ``tables.json``; [] where it or the table is absent."""
    path = docs / "tables.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    rows = data.get(key) if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def ours_text(p: dict[str, Any]) -> str:
    """Our side of a judged point (``verdicts.judge``): the estimate, its interval for one run and n
    runs ("475 (n = 1)", "1,908 [1,650, 2,210] (n = 3)"); a bound where our runs stopped first."""
    d = p["digits"]
    if p.get("est") is None:
        return f"> {fmt(p['censored'], d)} (stopped first)" if p.get("censored") is not None else "—"
    iv = f" [{fmt(p['lo'], d)}, {fmt(p['hi'], d)}]" if p.get("lo") is not None else ""
    return f"{fmt(p['est'], d)}{iv} (n = {p['n']})"


def paper_text(p: dict[str, Any]) -> str:
    """The paper's side of a point, at the decimals compared."""
    return fmt(p["ref"], p["digits"])


def cells(points: list[dict[str, Any]], text=ours_text) -> str:
    """Points as one cell, ``label: value``; the values of points that share a label joined by " / "."""
    groups: dict[str, list[str]] = {}
    for p in points:
        groups.setdefault(p["label"], []).append(text(p))
    return "; ".join(f"{k}: {' / '.join(v)}" for k, v in groups.items())


def pairs(
    name: str,
    refs: dict,
    fields: Any,
    label: str = "K = {}",
    keys: Any = ("K",),
    iv=None,
    note=None,
    kind: Any = "",
    how: str = "",
    n: Any = None,
    ratio_of: Any = False,
    names: tuple = (),
    digits: Any = None,
    cross: dict[str, tuple[str, str, str]] | None = None,
    **where,
):
    """A reader of the paper's ``refs`` (by key; a tuple read at each field's position) against the
    ``fields`` of the row of ``name`` with that key (``iv``: the fields of its 95% interval, named
    by ``how``, with ``n`` the field of the runs behind it); ``kind``: the quantity (one per field
    where a tuple), for its pooled spread and scale; ``ratio_of``: a ratio of two runs' values of
    that kind (one flag per field where a tuple); ``names``: each field's name in the points' labels
    (by position, where a row compares several); ``digits``: the decimals the paper prints where its
    repr drops a trailing zero (1.20): a number, one per field position, or a function of the value;
    ``cross``: per field, the fields of each run's crossing interval and of its exactness (an
    estimate's interval widens ours; an exact crossing's does not)."""
    fields = [(None, fields)] if isinstance(fields, str) else [(i, f) for i, f in enumerate(fields) if f]
    kinds = (lambda i: kind[i]) if isinstance(kind, tuple) else (lambda i: kind)
    ratios = (lambda i: ratio_of[i]) if isinstance(ratio_of, tuple) else (lambda i: ratio_of)

    def places(i: int, v: Any) -> int | None:
        d = digits[i] if isinstance(digits, tuple) else digits
        return d(v) if callable(d) else d

    def read(docs: Path) -> dict[str, Any]:
        groups = table_groups(docs, name, *keys, **where)
        rows = {k: g[-1] for k, g in groups.items()}  # table_index's rows, without a second read
        at = lambda k, f: rows.get(k, {}).get(f)
        # one value per run where a key has several rows (its seeds), each run's own interval then unused
        runs = lambda k, f: [g.get(f) for g in groups.get(k, [])] or [None]

        def crossings(k, f):
            lo, hi, exact = (cross or {}).get(f, (None, None, None))
            return [(g.get(lo), g.get(hi)) for g in groups.get(k, []) if lo and not g.get(exact)]

        lab = lambda k: label.format(*k) if isinstance(k, tuple) else label.format(k)
        pts = [
            point(
                f"{lab(k)} {names[i]}" if names else lab(k),
                r if i is None else r[i],
                runs(k, f),
                iv and len(groups.get(k, [])) < 2 and (at(k, iv[0]), at(k, iv[1])),
                places(i or 0, r if i is None else r[i]),
                kind=kinds(i or 0),
                ratio_of=ratios(i or 0),
                crossings=crossings(k, f),
                how=how,
                n=int(num(at(k, n)) or 1) if n and at(k, f) is not None else None,
            )
            for k, r in refs.items()
            for i, f in fields
        ]
        return {"points": pts, "note": note(rows) if note and rows else ""}

    return read


def k_list(rows: dict, field: str, what: str) -> str:
    """``what`` and ``K = k: value`` for each row with a number in ``field``; "" if none has."""
    got = "; ".join(f"K = {k}: {fmt(r[field])}" for k, r in rows.items() if num(r.get(field)) is not None)
    return f"{what}{got}" if got else ""
