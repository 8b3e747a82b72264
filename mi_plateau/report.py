"""The interactive report: one self-contained HTML file per run, or per comparison of runs.

``report(runs)`` reads the passes' tidy tables through ``analyze_run`` (cached per checkpoint
under ``analyses/<run>/passes/``, so a report after ``mi-plateau analyze`` costs seconds), turns
them into Tables 6 and 9, the routing summary and plotly figures, and writes one HTML file with
plotly.js embedded once: it opens offline, from a file, with no network. The only numbers made
here are the attention patterns, which need the model forward at a few chosen checkpoints.

The page's prose and markup live in ``templates/report.html`` (named blocks, ``string.Template``),
its style sheet in ``templates/report.css`` and its scripts in ``templates/report.js``; this module
fills them with the data. Every string that comes from a run (its folder name, its config, its
command line) is written through ``html.escape`` (``fill`` escapes every value that is not markup
made here); JSON inside ``<script>`` has ``<``, ``>``, ``&`` and ``/`` as unicode escapes.
See docs/report.md.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import cache, partial
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

from .checkpoints import Run, RunError, atomic_write_text, read_json, refuse_inside_run
from .config import compare_name
from .frames import records
from .summaries import nearest
from .tabular import PLOTLY_MODES, cell, plotly_script

MAX_SLIDER_FRAMES = 40  # checkpoints in the head-grid slider
MAX_ATTENTION_CHECKPOINTS = 12  # checkpoints whose attention patterns are stored
ATTENTION_PATTERN_BUDGET = 48  # K x stored checkpoints of attention patterns, at most (K = 36: 4 checkpoints)

esc = html.escape

# a cell of the page's tables: 4 significant digits, sizes from 1e4 on as whole numbers, booleans yes/no
page_cell = partial(cell, spec=".4g", yes_no=True, large=(1e4, ".0f"))


def _script_json(obj: Any) -> str:
    """JSON safe to place inside <script>: no '</script>', no HTML-significant characters."""
    s = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    for a, b in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("/", "\\u002f"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        s = s.replace(a, b)
    return s


def spread(items: list, n: int, keep: tuple = ()) -> list:
    """At most ``n`` items of a sorted list: first, last and ``keep``, the rest evenly spread."""
    if len(items) <= n:
        return list(items)
    must = sorted({items[0], items[-1], *(k for k in keep if k in items)})[:n]
    others = [x for x in items if x not in must]
    r = n - len(must)
    pick = [others[round(i * (len(others) - 1) / max(r - 1, 1))] for i in range(r)] if r > 0 else []
    return sorted(set(must) | set(pick))


# --- templates -------------------------------------------------------------------------------

TEMPLATES = files("mi_plateau") / "templates"
BLOCK = re.compile(r"^(?:<!--|//) block: (\w+)(?: -->)?\n", re.M)


class Html(str):
    """Markup made here (a table, a figure, a filled block): ``fill`` puts it in as it is."""


@cache
def template_text(name: str) -> str:
    """The text of ``templates/<name>`` (shipped as package data)."""
    return TEMPLATES.joinpath(name).read_text(encoding="utf-8")


@cache
def template_blocks(name: str) -> dict[str, Template]:
    """The named blocks of ``templates/<name>``: each starts after a line ``<!-- block: NAME -->``
    (``// block: NAME`` in a script) and runs to the next, trailing newlines dropped; the text
    before the first block is the file's own comment."""
    parts = BLOCK.split(template_text(name))
    return {k: Template(v.rstrip("\n")) for k, v in zip(parts[1::2], parts[2::2])}


def fill(block: str, **values: Any) -> Html:
    """A block of ``templates/report.html`` filled in: ``Html`` values as they are, every other
    value as escaped text."""
    t = template_blocks("report.html")[block]
    return Html(t.substitute({k: v if isinstance(v, Html) else esc(str(v)) for k, v in values.items()}))


def script(block: str, **values: Any) -> Html:
    """A block of ``templates/report.js`` as a <script>, each value written as script-safe JSON."""
    js = template_blocks("report.js")[block].substitute({k: _script_json(v) for k, v in values.items()})
    return Html(f"<script>\n{js}\n</script>")


def nav_links(anchors) -> Html:
    """The page's navigation bar: one link per (anchor, label)."""
    return Html("".join(f"<a href='#{a}'>{esc(t)}</a>" for a, t in anchors))


# --- tables ----------------------------------------------------------------------------------


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


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v if not isinstance(v, (list, tuple)) else json.dumps(v)
    return out


class Page:
    """Collects HTML sections and figures; knows how many figures it emitted."""

    def __init__(self):
        self.parts: list[str] = []
        self.n_figs = 0

    def add(self, s: str) -> None:
        self.parts.append(s)

    def fig(self, fig, div_id: str | None = None) -> str:
        self.n_figs += 1
        div_id = div_id or f"fig{self.n_figs}"
        self.add(
            "<div class='fig'>"
            + fig.to_html(
                full_html=False,
                include_plotlyjs=False,
                auto_play=False,
                div_id=div_id,
                config={"displaylogo": False, "responsive": True},
            )
            + "</div>"
        )
        return div_id

    def html(self) -> Html:
        return Html("".join(self.parts))


# --- the report ------------------------------------------------------------------------------


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


# checkpoints kept in every downsampled view, as fractions of tau
KEY_FRACTIONS = (0.25, 0.5, 1.0, 1.5)


def default_out(names: list[str], analyses: Path) -> Path:
    if len(names) == 1:
        return analyses / names[0] / "report.html"
    return analyses / compare_name(names) / "report.html"


def read_command(run: Run) -> dict[str, Any]:
    """The run's ``command.json`` as the page shows it: {} where there is none, and one "error"
    entry where it is not a JSON object or is a symbolic link (never followed out of the folder)."""
    cmd_path = run.path / "command.json"
    try:
        cmd_path = run.own_file("command.json")
        command = read_json(cmd_path) if cmd_path.exists() else {}
    except RunError as e:
        return {"error": " ".join(str(e).split()) if "symbolic link" in str(e) else f"{cmd_path} is not readable JSON"}
    return command if isinstance(command, dict) else {"error": f"{cmd_path} is not a JSON object"}


def _gather(run: Run, analyses: Path, pc, progress: bool, device: str | None = "auto") -> dict[str, Any]:
    from .passes.analyze import analyze_run, run_outputs

    cfg = run.config()
    s = run.summary()
    tables = analyze_run(run, analyses / run.name, pc, progress=progress, device=device)
    out = run_outputs(run.name, cfg, s, tables, pc)  # the tables read the pass settings the passes ran with
    return {
        "run": run,
        "name": run.name,
        "cfg": cfg,
        "summary": s,
        "tables": tables,
        "command": read_command(run),
        **out,
    }


def report(
    runs,
    out: str | os.PathLike | None = None,
    progress: bool = True,
    *,
    analyses: str | os.PathLike | None = None,
    pass_config=None,
    max_head_checkpoints: int | None = None,
    plotly: str = "inline",
    device: str | None = "auto",
    llc: Sequence[str | os.PathLike] = (),
) -> Path:
    """Write the interactive report of one or several runs (the passes on ``device``); returns
    the HTML path. ``llc``: learning-coefficient curves recorded by ``python -m
    mi_plateau.passes.llc`` (JSON), each drawn beside the loss of the run it names.

    Default path: ``<analyses>/<run name>/report.html`` for one run,
    ``<analyses>/compare_<names>/report.html`` for several. The passes' per-checkpoint caches
    live under ``<analyses>/<run name>/passes/`` (shared with ``mi-plateau analyze --out
    <analyses>``); ``analyses`` defaults to the folder of ``out`` when ``out`` is given (the
    report writes nowhere but beside its output), else to ``analyses/``.
    """
    from .passes.analyze import PassConfig

    if isinstance(runs, (str, os.PathLike, Run)):
        runs = [runs]
    runs = [r if isinstance(r, Run) else Run(r) for r in runs]
    if analyses is None:
        analyses = Path(out).parent if out is not None else Path("analyses")
    analyses = Path(analyses)
    pc = pass_config or PassConfig()
    if max_head_checkpoints is not None:
        pc = replace(pc, max_head_checkpoints=max_head_checkpoints)
    out = Path(out) if out is not None else default_out([r.name for r in runs], analyses)
    refuse_inside_run(out, "report")  # before any work
    if plotly not in PLOTLY_MODES:
        raise ValueError(f"--plotly {plotly!r}: choose one of {', '.join(PLOTLY_MODES)}")
    curves = read_llc(llc, runs)  # before any work: a bad file is refused at once
    data = [_gather(r, analyses, pc, progress, device) for r in runs]

    page, notes = Page(), []
    _summary_section(page, data)
    _curve_sections(page, data)
    for i, d in enumerate(data):
        if d["name"] in curves:
            _llc_section(page, d, f"r{i}", curves[d["name"]])
        _run_sections(page, d, f"r{i}", notes, progress)
    _table_sections(page, data)
    _provenance_section(page, data)
    page.add(fill("notes", items=Html("".join(f"<li>{n}</li>" for n in notes))))
    title = "mi_plateau report: " + ", ".join(d["name"] for d in data)
    atomic_write_text(
        out,
        _document(
            title, nav_links(run_nav([d["name"] for d in data], [d["name"] in curves for d in data])), page, out, plotly
        ),
    )
    return out


# the routing leads in the summary table (column label, routing key), each with its 95% interval
SUMMARY_LEADS = (
    ("lead (tau−t_r)/tau, causal", "routing_lead_swap_contrib"),
    ("lead, attention", "routing_lead_sel_attn"),
)


def summary_rows(data: list[dict]) -> list[dict]:
    """One row per run for the page's summary table: tau and the plateau under both definition
    families, convergence, and the routing heads with their leads (and 95% intervals)."""
    rows = []
    for d in data:
        s, ro = d["summary"], d["routing"]
        fam = s["definitions"]
        rows.append(
            {
                "run": d["name"],
                "K": s["K"],
                "n_b": s["n_b"],
                "tau, paper (L_seq), steps": fam["paper"]["tau"],
                "tau, first token (Lc), steps": fam["first_token"]["tau"],
                "plateau / log K, paper": fam["paper"]["plateau_ratio"],
                "plateau / log K, first token": fam["first_token"]["plateau_ratio"],
                "converged": s["converged"],
                "status": s["status"],
                "checkpoints": s["n_checkpoints"],
                "routing head": ro.get("routing_head"),
                "top attention head": ro.get("top_attention_head"),
                **{
                    f"{label}{end}": ro.get(f"{key}{end}") for label, key in SUMMARY_LEADS for end in ("", "_lo", "_hi")
                },
            }
        )
    return rows


def _summary_section(page: Page, data: list[dict]) -> None:
    page.add(fill("summary"))
    for d in data:
        s = d["summary"]
        if s["status"] != "finished":
            page.add(fill("unfinished", name=d["name"], status=s["status"], last_step=s["last_step"]))
    page.add(html_table(summary_rows(data)))


def _curve_sections(page: Page, data: list[dict]) -> None:
    """The loss curves and the Figure 3 panels of every run, each figure holding all runs."""
    from . import figures

    label = {d["name"]: esc(d["name"]) for d in data}  # names as they go into plotly text
    page.add(fill("loss"))
    page.fig(
        figures.loss_curves(
            {label[d["name"]]: d["tables"]["checkpoint"] for d in data},
            {label[d["name"]]: {"log_K": d["summary"]["log_K"], "tau": d["summary"]["tau"]} for d in data},
        )
    )
    page.add(fill("figure3"))
    page.fig(figures.figure3({label[d["name"]]: d["figure3"] for d in data}))


def _table_sections(page: Page, data: list[dict]) -> None:
    """Tables 6 and 9 and the routing summary, all runs in each."""
    page.add(fill("table6"))
    page.add(html_table([r for d in data for r in records(d["table6"])]))
    page.add(fill("table9"))
    page.add(html_table([r for d in data for r in records(d["table9"])]))
    page.add(fill("routing"))
    page.add(transposed_table([d["routing"] for d in data]))


def _provenance_section(page: Page, data: list[dict]) -> None:
    """Each run's seeds, command line (command.json) and whole config."""
    page.add(fill("provenance"))
    for d in data:
        cfg, cmd = d["cfg"], d["command"]
        seeds = {
            "task.data_seed": cfg.task.data_seed,
            "model.init_seed": cfg.model.init_seed,
            "train.batch_seed": cfg.train.batch_seed,
            "eval.eval_seed": cfg.eval.eval_seed,
        }
        argv = cmd.get("argv")
        prov = {
            "run folder": str(d["run"].path),
            "argv": " ".join(map(str, argv)) if isinstance(argv, list) else argv,
            **{k: v for k, v in cmd.items() if k not in ("argv", "versions")},
            **{f"version {k}": v for k, v in (cmd.get("versions") or {}).items()},
        }
        tables = {"seeds": kv_table(seeds), "command": kv_table(prov), "config": kv_table(_flatten(cfg.to_dict()))}
        page.add(fill("provenance_run", name=d["name"], **tables))


def _document(title: str, nav: Html, page: Page, out: Path, plotly: str = "inline") -> str:
    """The page shell: plotly.js loaded once (``tabular.plotly_script``: inline by default, so
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
    from . import figures

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


# --- the per-run sections --------------------------------------------------------------------


def read_llc(paths: Sequence[str | os.PathLike], runs: Sequence[Run]) -> dict[str, list[dict]]:
    """{run name: LLC rows} from recorded curves (``passes.llc``'s JSON: "run" and "rows" with
    step, llc_mean, llc_std); one line naming the file where one is unreadable, has no rows, or
    names none of ``runs``."""
    names = {r.name for r in runs}
    out: dict[str, list[dict]] = {}
    for p in paths:
        doc = read_json(Path(p))
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and "step" in r for r in rows):
            raise RunError(f"{p}: not an LLC curve (expected an object with rows of step, llc_mean, llc_std)")
        name = Path(str(doc.get("run", ""))).name
        if name not in names:
            raise RunError(
                f"{p}: an LLC curve of run {name!r}, which is not in this report ({', '.join(sorted(names))})"
            )
        out[name] = rows
    return out


def _llc_section(page: Page, d: dict, key: str, rows: list[dict]) -> None:
    from . import figures

    first = rows[0]
    page.add(
        fill(
            "llc",
            key=key,
            name=d["name"],
            points=len(rows),
            lr=first.get("lr"),
            gamma=first.get("localization"),
            nbeta=first.get("nbeta"),
            chains=first.get("n_chains"),
            draws=first.get("n_draws"),
        )
    )
    s = d["summary"]
    page.fig(figures.llc_curve(esc(d["name"]), d["tables"]["checkpoint"], rows, s["log_K"], s["tau"]))


def _run_sections(page: Page, d: dict, key: str, notes: list[str], progress: bool) -> None:
    """The per-run figures: head scores, head grid with slider, attention, groups, patching."""
    from . import figures
    from .passes.tables import accuracy_histogram

    name, lab, tau, K = d["name"], esc(d["name"]), d["summary"]["tau"], d["cfg"].task.K
    t = {k: records(v) for k, v in d["tables"].items()}
    all_steps = sorted({r["step"] for r in t["checkpoint"]})
    _head_section(page, d, key, t["heads"], len(all_steps), notes)
    _attention_section(page, d, key, all_steps, notes, progress)
    page.add(fill("groups", key=key, name=name, K=K, checkpoints=len(all_steps)))
    page.fig(figures.group_accuracy(accuracy_histogram(t["groups"], K), t["checkpoint"], lab, tau))
    if t["patching"]:
        page.add(fill("patching", name=name))
        page.fig(figures.patching(t["patching"], lab, tau))


def _head_section(page: Page, d: dict, key: str, heads: list[dict], n_checkpoints: int, notes: list[str]) -> None:
    """Head scores over training, and the head grid with a slider over the ablated checkpoints
    (at most ``MAX_SLIDER_FRAMES``, the key fractions of tau kept)."""
    from . import figures

    name, lab, tau = d["name"], esc(d["name"]), d["summary"]["tau"]
    page.add(fill("heads", key=key, name=name))
    page.fig(figures.head_scores_over_training(heads, lab, tau))
    ablated = sorted({r["step"] for r in heads if r["dLc"] == r["dLc"]})
    if not ablated:
        return
    keep = [s for s in ablated if tau and s in (nearest(ablated, f * tau) for f in KEY_FRACTIONS)]
    frames = spread(ablated, MAX_SLIDER_FRAMES, tuple(keep))
    notes.append(fill("slider_note", name=name, shown=len(frames), ablated=len(ablated), checkpoints=n_checkpoints))
    page.fig(figures.head_grid_slider(heads, lab, frames))


def _attention_section(page: Page, d: dict, key: str, all_steps: list[int], notes: list[str], progress: bool) -> None:
    """The attention viewer: every selector of the first base group (eval rows 0..K-1) at a few
    checkpoints, fewer for large K so that the page stays in bounds (K x checkpoints patterns
    per head), with controls for the checkpoint, the head and the example."""
    from . import figures
    from .passes.attention import attention_patterns

    name, lab, tau, K = d["name"], esc(d["name"]), d["summary"]["tau"], d["cfg"].task.K
    n_att = max(4, min(MAX_ATTENTION_CHECKPOINTS, ATTENTION_PATTERN_BUDGET // K))
    att_steps = spread(all_steps, n_att, tuple(nearest(all_steps, f * tau) for f in KEY_FRACTIONS) if tau else ())
    A = attention_patterns(d["run"], d["cfg"], att_steps, K, progress=progress)
    routing = d["routing"].get("routing_head")
    h0 = A["heads"].index(routing) if routing in A["heads"] else 0
    notes.append(
        fill(
            "attention_note",
            name=name,
            stored=len(att_steps),
            checkpoints=len(all_steps),
            steps=", ".join(map(str, att_steps)),
            examples=len(A["examples"]),
            last_z=K - 1,
            routing=routing,
        )
    )
    A["title"] = f"{lab}:"
    page.add(fill("attention", key=key, name=name, first_pred=A["first_pred"]))
    div = f"{key}-attnfig"
    heads, examples = options(A["heads"], h0), options(A["examples"])
    page.add(
        fill("attention_controls", div=div, last=len(att_steps) - 1, step=att_steps[-1], heads=heads, examples=examples)
    )
    first = figures.attention_pattern(
        A["patterns"][-1][h0][0], A["labels"][0], f"{lab}: {A['heads'][h0]}, step {att_steps[-1]}", A["first_pred"]
    )
    page.fig(first, div)
    page.add(script("attention", data={k: A[k] for k in ("steps", "heads", "labels", "patterns", "title")}, id=div))


def options(items, chosen: int = 0) -> Html:
    """<option>s of a <select>, valued by position, ``chosen`` selected."""
    return Html(
        "".join(
            f"<option value='{i}'{' selected' if i == chosen else ''}>{esc(str(x))}</option>"
            for i, x in enumerate(items)
        )
    )
