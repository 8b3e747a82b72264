"""The pages: ``report`` (one run, or a comparison of runs), ``sweep_report`` (a whole sweep,
from tables and figures its recipe built) and ``scorecard_report`` (the paper beside ours, as a
forest plot and a table), each written atomically as one HTML file with plotly.js loaded once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import figures
from ..checkpoints import Run, RunError, atomic_write_text, refuse_inside_run
from ..config import AnalysisConfig, RunOptions, compare_name
from ..config.options import with_old_keywords
from ..figures import forest
from ..outputs import PLOTLY_MODES, STATIC_NEEDS, chromium, plotly_script, write_figures
from ..passes.analyze import pass_config_of
from .html_tables import html_table
from .inputs import gather, read_llc
from .markup import Html, Page, fill, nav_links, script, template_text
from .runs import llc_section, run_sections
from .sections import curve_sections, provenance_section, summary_section, table_sections


# the run report's navigation bar (anchor, label); the per-run links go to the first run
def run_nav(names: Sequence[str], with_llc: Sequence[bool] = ()) -> tuple[tuple[str, str], ...]:
    """The navigation of a report of the runs ``names``: the shared sections, and each run's own
    (heads, attention, groups, and its LLC curve where it has one), named by run when several."""
    own = []
    for i, name in enumerate(names):
        tag = f" ({name})" if len(names) > 1 else ""
        llc = ((f"r{i}-llc", f"LLC{tag}"),) if i < len(with_llc) and with_llc[i] else ()
        own += [
            *llc,
            (f"r{i}-heads", f"heads{tag}"),
            (f"r{i}-attn", f"attention{tag}"),
            (f"r{i}-groups", f"groups{tag}"),
        ]
    return (
        ("summary", "summary"),
        ("loss", "loss curves"),
        ("figure3", "Figure 3"),
        *own,
        ("tables", "tables"),
        ("provenance", "provenance"),
    )


def default_out(names: list[str], analyses: Path) -> Path:
    if len(names) == 1:
        return analyses / names[0] / "report.html"
    return analyses / compare_name(names) / "report.html"


def report(
    runs,
    out: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    analyses: str | os.PathLike | None = None,
    pass_config: AnalysisConfig | None = None,
    plotly: str = "inline",
    options: RunOptions | None = None,
    llc: Sequence[str | os.PathLike] = (),
    static: bool = False,
    **old,
) -> Path:
    """Write the interactive report of one or several runs (the passes on ``options.device``;
    the pass settings ``pass_config``; ``device=`` and ``max_head_checkpoints=``: deprecated, as in
    ``api.analyze``); returns the HTML path. ``llc``:
    learning-coefficient curves recorded by ``mi-plateau llc`` (JSON), each drawn beside the loss
    of the run it names. ``static``: also every figure of the page as ``<report
    stem>_figures/<figure id>.svg`` (a Chromium is needed; without one, a one-line error before
    any work).

    Default path: ``<analyses>/<run name>/report.html`` for one run,
    ``<analyses>/compare_<names>/report.html`` for several. The passes' per-checkpoint caches
    live under ``<analyses>/<run name>/passes/`` (shared with ``mi-plateau analyze --out
    <analyses>``); ``analyses`` defaults to the folder of ``out`` when ``out`` is given (the
    report writes nowhere but beside its output), else to ``analyses/``.
    """
    pc = pass_config_of(pass_config, old, "report")
    options = with_old_keywords(options, old, "report")
    if isinstance(runs, (str, os.PathLike, Run)):
        runs = [runs]
    runs = [r if isinstance(r, Run) else Run(r) for r in runs]
    if analyses is None:
        analyses = Path(out).parent if out is not None else Path("analyses")
    analyses = Path(analyses)
    out = Path(out) if out is not None else default_out([r.name for r in runs], analyses)
    refuse_inside_run(out, "report")  # before any work
    if plotly not in PLOTLY_MODES:
        raise ValueError(f"--plotly {plotly!r}: choose one of {', '.join(PLOTLY_MODES)}")
    if static and chromium() is None:
        raise RunError(f"--static: no browser found: {STATIC_NEEDS}")
    curves = read_llc(llc, runs)  # before any work: a bad file is refused at once
    data = [gather(r, analyses, pc, progress, options) for r in runs]

    page, notes = Page(), []
    summary_section(page, data)
    curve_sections(page, data)
    for i, d in enumerate(data):
        if d["name"] in curves:
            llc_section(page, d, f"r{i}", curves[d["name"]])
        run_sections(page, d, f"r{i}", notes, progress)
    table_sections(page, data, pc.head_ablation)
    provenance_section(page, data)
    page.add(fill("notes", items=Html("".join(f"<li>{n}</li>" for n in notes))))
    title = "mi_plateau report: " + ", ".join(d["name"] for d in data)
    atomic_write_text(
        out,
        _document(
            title, nav_links(run_nav([d["name"] for d in data], [d["name"] in curves for d in data])), page, out, plotly
        ),
    )
    if static:
        figs = out.parent / f"{out.stem}_figures"
        figs.mkdir(parents=True, exist_ok=True)
        write_figures([(figs / f"{div_id}.svg", fig, {}) for div_id, fig in page.figures], static=True)
    return out


def _document(title: str, nav: Html, page: Page, out: Path, plotly: str = "inline") -> str:
    """The page shell: plotly.js loaded once (``outputs.plotly_script``: inline by default, so
    the page opens offline on its own), the render-status hooks, the sections."""
    return fill(
        "page",
        title=title,
        css=Html(template_text("report.css")),
        errors_js=script("errors"),
        plotly=Html(plotly_script(plotly, out)),
        nav=nav,
        body=page.html(),
        status_js=script("status", expected=page.n_figs),
    )


def sweep_report(
    out: str | os.PathLike,
    name: str,
    tables: dict[str, list[dict]],
    figs: dict[str, Any],
    curves: dict[str, dict[str, Any]],
    note: str = "",
    plotly: str = "inline",
) -> Path:
    """One page for a whole sweep: its figures (tau against the swept key with the fit), every
    run's loss curves (both families) and its tables. Computes nothing: the recipe built them."""
    out = Path(out)
    refuse_inside_run(out, "sweep report")
    page = Page()
    page.add(fill("sweep_note", note=note) if note else "")
    anchors = []
    for i, (title, fig) in enumerate(figs.items()):
        anchors.append((f"f{i}", title))
        page.add(fill("sweep_figure", id=f"f{i}", title=title))
        page.fig(fig)
    if curves:
        anchors.append(("curves", "loss curves"))
        page.add(fill("sweep_curves"))
        page.fig(figures.figure1(curves).update_layout(title="loss against step, every run of the sweep"))
    for i, (title, rows) in enumerate(tables.items()):
        anchors.append((f"t{i}", title))
        page.add(fill("sweep_table", id=f"t{i}", title=title, table=html_table(rows)))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, _document(f"mi_plateau sweep: {name}", nav_links(anchors), page, out, plotly))
    return out


def scorecard_report(
    out: str | os.PathLike,
    points: list[dict[str, Any]],
    rows: list[dict[str, Any]] = (),
    note: str = "",
    plotly: str = "inline",
) -> Path:
    """The scorecard's page: the forest plot of every number compared (``figures.forest`` of
    ``points``; its docstring has a point's fields), then the scorecard's rows as a table when
    given, ``note`` below it (the verdict rules). Computes nothing: the scorecard made the points
    and the rows.
    ``plotly="inline"`` (the default) makes a page that opens offline, alone."""
    out = Path(out)
    refuse_inside_run(out, "scorecard page")
    if plotly not in PLOTLY_MODES:
        raise ValueError(f"plotly mode {plotly!r}: choose one of {', '.join(PLOTLY_MODES)}")
    fig = forest(points)  # before any writing: a bad point is refused with nothing written
    page = Page()
    page.add(fill("scorecard_forest"))
    page.fig(fig, div_id="forest-plot")
    anchors = [("forest", "every number")]
    if rows:
        anchors.append(("table", "the scorecard"))
        page.add(fill("scorecard_table", table=html_table(rows)))
        page.add(fill("sweep_note", note=note) if note else "")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        out, _document("mi_plateau scorecard: the paper beside ours", nav_links(anchors), page, out, plotly)
    )
    return out
