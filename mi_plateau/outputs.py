"""The report layer's outputs: a tidy table (a DataFrame or a list of row dicts) written as
Markdown, CSV and JSON files, a plotly figure as a static image or an HTML page, and what
``mi-plateau analyze`` writes for a run or a comparison. The one place these files are written;
the text of a table (``frames.to_markdown``, ``frames.to_csv``) is made in ``frames``.

The JSON file is the list of rows (``orient="records"``), so ``pandas.read_json(path)`` reads
the table itself; the title and the note go in the Markdown file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import figures
from .checkpoints import RunError, atomic_write_bytes, atomic_write_json, atomic_write_text, one_line
from .frames import Rows, records, to_csv, to_markdown
from .summaries import nan_to_none


def write_table(
    path_stem: Path, rows, *, title: str = "", note: str = "", cols: Sequence[str] | None = None
) -> list[Path]:
    """Write ``<stem>.md``, ``<stem>.csv`` and ``<stem>.json``; returns the paths."""
    rows = records(rows)
    path_stem = Path(path_stem)
    md = (f"## {title}\n\n" if title else "") + to_markdown(rows, cols) + (f"\n{note}\n" if note else "")
    paths = [path_stem.with_suffix(".md"), path_stem.with_suffix(".csv"), path_stem.with_suffix(".json")]
    atomic_write_text(paths[0], md)
    atomic_write_text(paths[1], to_csv(rows, cols))
    # not atomic_write_json: that sorts keys, and a table keeps its column order
    atomic_write_bytes(paths[2], (json.dumps(nan_to_none(rows), indent=1) + "\n").encode())
    return paths


STATIC_FORMATS = ("svg", "png", "pdf", "jpeg", "jpg", "webp")
EXPORT_TRIES = 3
# What a user without a browser is told, in one line, wherever a static figure is skipped or refused.
STATIC_NEEDS = (
    "static figures (.svg) need a Chromium for kaleido: install one (Debian: apt-get install chromium; "
    "any OS: plotly_get_chrome) or set BROWSER_PATH to one"
)


def chromium() -> str | None:
    """The Chromium kaleido would start for a static export (its own lookup: ``BROWSER_PATH``,
    then the usual names on ``PATH``, then the usual install paths), or None when there is none
    that can run. ``BROWSER_PATH=/nonexistent`` hides every browser from both."""
    import os

    from choreographer.browsers.chromium import Chromium

    path = Chromium.find_browser(skip_local=False)
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def write_figure(
    path: Path, fig, *, width: int | None = None, height: int | None = None, tries: int = EXPORT_TRIES
) -> Path:
    """A plotly figure as a static image (format from the suffix: .svg, .png), exported by
    kaleido with the system's Chromium; the same figure object the HTML report shows. Without a
    Chromium (``chromium()``), a one-line RunError that says how to get one, before any work.

    kaleido drives a headless Chromium page, and under load that page sometimes fails before
    its scripts are ready (``JavascriptError: ReferenceError: kaleido_scopes is not defined``);
    a fresh export of the same figure then succeeds. So a failed export is tried again, up to
    ``tries`` times, and a figure that still fails is a one-line RunError naming the file, with
    nothing written for it (write a builder's tables before its figures: they stay written)."""
    import time

    import plotly.io

    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in STATIC_FORMATS:
        raise RunError(f"{path}: a static figure is one of {', '.join('.' + f for f in STATIC_FORMATS)}")
    if chromium() is None:
        raise RunError(f"{path}: no browser found: {STATIC_NEEDS}")
    size = {"width": width or fig.layout.width or 1100, "height": height or fig.layout.height or 480}
    for attempt in range(1, tries + 1):
        try:
            data = plotly.io.to_image(fig, format=fmt, **size)
            break
        except Exception as e:  # kaleido and Chromium raise their own error types
            if attempt == tries:
                raise RunError(
                    f"{path}: the static export failed {tries} times ({type(e).__name__}: {one_line(e)[:300]})"
                ) from None
            time.sleep(0.5 * attempt)
    atomic_write_bytes(path, data)
    return path


def write_figures(figures: Sequence[tuple[Path, Any, dict]], static: bool | None = None) -> tuple[list[Path], str]:
    """Static exports of ``(path, figure, size keywords)``: ``static`` True exports them all (no
    browser: the one-line RunError of ``write_figure``), False none, None (the default) all where
    a browser is found and none otherwise. Returns the paths written and, where figures were
    skipped for want of a browser, the one line that says so (else "")."""
    if not figures or static is False:
        return [], ""
    if static is None and chromium() is None:
        return [], f"skipped {len(figures)} static figure(s): {STATIC_NEEDS} (--static makes this an error)"
    return [write_figure(path, fig, **size) for path, fig, size in figures], ""


def read_json_rows(path: Path) -> Rows:
    """The rows of a table ``write_table`` wrote (as ``pandas.read_json`` reads them)."""
    return json.loads(Path(path).read_text())


PLOTLY_MODES = ("inline", "cdn", "directory")


def plotly_script(mode: str, page: Path, root: Path | None = None) -> str:
    """The <script> that loads plotly.js for an HTML file at ``page``: ``inline`` embeds it (the
    page opens offline, alone; about 4.6 MB), ``cdn`` links the plotly CDN (a small page that
    needs the network), ``directory`` links one ``plotly.min.js`` in ``root`` (default: the
    page's folder), written once and shared by every page under it (offline, with that file)."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    if mode == "inline":
        return f"<script>{get_plotlyjs()}</script>"
    if mode == "cdn":
        return f"<script src='https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js' charset='utf-8'></script>"
    if mode == "directory":
        import os

        js = Path(root or page.parent) / "plotly.min.js"
        text = get_plotlyjs()
        if not js.is_file() or js.stat().st_size != len(text.encode()):
            atomic_write_text(js, text)
        return f"<script src='{Path(os.path.relpath(js, page.parent)).as_posix()}'></script>"
    raise ValueError(f"plotly mode {mode!r}: choose one of {', '.join(PLOTLY_MODES)}")


def figure_html(fig, path: Path, root: Path | None = None) -> str:
    """A whole HTML page of one figure that links the shared ``plotly.min.js`` in ``root``."""
    return figures_html([fig], path, root)


def figures_html(figs, path: Path, root: Path | None = None) -> str:
    """A whole HTML page of figures, one below the other, that links the shared ``plotly.min.js``."""
    body = "".join(f.to_html(include_plotlyjs=False, full_html=False) for f in figs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{plotly_script('directory', path, root)}</head>"
        f"<body>{body}</body></html>"
    )


def write_run_analysis(
    folder: Path, name: str, tables: dict, outputs: dict, note6: str = "", note9: str = ""
) -> list[Path]:
    """What ``mi-plateau analyze`` writes for one run: the pass tables, Tables 6 and 9, the
    routing summary (JSON), and Figure 3: ``figure3.json`` (``paper``: the panels as the paper
    computed them, the lead and the displacement cosine; ``ours``: our variants, both families)
    and ``figure3.html`` (both)."""
    folder = Path(folder)
    paths = []
    for key in ("checkpoint", "heads", "groups", "patching"):
        paths += write_table(folder / f"pass_{key}", tables[key], title=f"{name}: {key} pass rows")
    paths += write_table(
        folder / "table6", outputs["table6"], title=f"Table 6 (collective transition): {name}", note=note6
    )
    paths += write_table(folder / "table9", outputs["table9"], title=f"Table 9 (head ablation): {name}", note=note9)
    atomic_write_json(folder / "routing.json", outputs["routing"])
    paper = outputs["figure3_paper"]
    ours = outputs["figure3"]
    atomic_write_json(
        folder / "figure3.json",
        nan_to_none(
            {
                "paper": {k: records(v) if k in ("a", "b") else v for k, v in paper.items()},
                "ours": {f: {p: records(rows) for p, rows in d.items()} for f, d in ours.items()},
            }
        ),
    )
    # the paper's two panels as tables too: (a) the curves, (b) the displacements
    paths += write_table(folder / "figure3_a", paper["a"], title=f"Figure 3(a), Lc and z-gap over log K: {name}")
    paths += write_table(folder / "figure3_b", paper["b"], title=f"Figure 3(b), weight displacements: {name}")
    f3 = folder / "figure3.html"
    atomic_write_text(
        f3, figures_html([figures.figure3_paper({name: paper}), figures.figure3({name: ours})], f3, folder.parent)
    )
    return paths + [folder / "routing.json", folder / "figure3.json", f3]


def write_comparison(
    folder: Path, table6, table9, routing: Rows, figure3_data: dict, note6: str = "", note9: str = ""
) -> list[Path]:
    """The comparison folder of several runs: Tables 6 and 9 and the routing summaries of all of
    them, and one Figure 3."""
    folder = Path(folder)
    paths = write_table(folder / "table6", table6, title="Table 6 (collective transition)", note=note6)
    paths += write_table(folder / "table9", table9, title="Table 9 (head ablation)", note=note9)
    paths += write_table(folder / "routing", routing, title="Selector-routing heads and leads")
    atomic_write_text(
        folder / "figure3.html", figure_html(figures.figure3(figure3_data), folder / "figure3.html", folder.parent)
    )
    return paths + [folder / "figure3.html"]
