"""The page's tables: rows as HTML (one column per field, or one per run), a dict as a key-value
table, and intervals (X_lo, X_hi) folded into their column; every header and cell escaped."""

from __future__ import annotations

from functools import partial

from ..frames import cell, records
from .markup import Html, esc

# a cell of the page's tables: 4 significant digits, sizes from 1e4 on as whole numbers, booleans yes/no
page_cell = partial(cell, spec=".4g", yes_no=True, large=(1e4, ".0f"))


def fold_intervals(rows: list[dict], cols: list[str]) -> tuple[list[str], list[dict]]:
    """A column X with X_lo and X_hi beside it becomes one column "X [95% CI]" whose cells read
    ``v [lo, hi]`` (``v`` alone where the row has no interval), so that tables with intervals stay
    narrow enough to read."""
    folded = [c for c in cols if f"{c}_lo" in cols and f"{c}_hi" in cols]
    if not folded:
        return cols, rows
    drop = {f"{c}_{e}" for c in folded for e in ("lo", "hi")}
    out_cols = [f"{c} [95% CI]" if c in folded else c for c in cols if c not in drop]
    out = []
    for r in rows:
        r = dict(r)
        for c in folded:
            lo, hi = r.pop(f"{c}_lo", None), r.pop(f"{c}_hi", None)
            v = page_cell(r.pop(c, None))
            r[f"{c} [95% CI]"] = (
                v if page_cell(lo) == "—" or page_cell(hi) == "—" else f"{v} [{page_cell(lo)}, {page_cell(hi)}]"
            )
        out.append(r)
    return out_cols, out


def html_table(rows: list[dict], cols: list[str] | None = None) -> Html:
    """Rows as an HTML table; columns named paper_* are labelled and shaded as the paper's
    reference values, not our output; intervals (X_lo, X_hi) are folded into their column X.
    Every header and cell is escaped."""
    rows = records(rows)
    if not rows:
        return Html("<p class='note'>(no rows)</p>")
    cols, rows = fold_intervals(rows, cols or list(dict.fromkeys(k for r in rows for k in r)))
    head = "".join(
        f"<th class='ref'>paper (reference): {esc(c[len('paper_') :])}</th>"
        if c.startswith("paper_")
        else f"<th>{esc(c)}</th>"
        for c in cols
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=ref' if c.startswith('paper_') else ''}>{esc(page_cell(r.get(c)))}</td>" for c in cols)
        + "</tr>"
        for r in rows
    )
    return Html(f"<div class='tw'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def transposed_table(rows: list[dict], key: str = "run") -> Html:
    """One column per row (per run), one table row per field: for wide records like routing."""
    if not rows:
        return Html("<p class='note'>(no rows)</p>")
    fields, rows = fold_intervals(rows, [f for f in dict.fromkeys(k for r in rows for k in r) if f != key])
    head = "<th></th>" + "".join(f"<th>{esc(page_cell(r.get(key)))}</th>" for r in rows)
    body = "".join(
        f"<tr><th>{esc(f)}</th>" + "".join(f"<td>{esc(page_cell(r.get(f)))}</td>" for r in rows) + "</tr>"
        for f in fields
    )
    return Html(f"<div class='tw'><table class='tr'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def kv_table(d: dict) -> Html:
    """A dict as a two-column table, key and value, every cell escaped."""
    return Html(
        "<table class='kv'>"
        + "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(page_cell(v))}</td></tr>" for k, v in d.items())
        + "</table>"
    )
