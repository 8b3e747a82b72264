"""The interactive report: one self-contained HTML file per run, or per comparison of runs.

``report(runs)`` reads the passes' tidy tables through ``analyze_run`` (cached per checkpoint
under ``analyses/<run>/passes/``, so a report after ``mi-plateau analyze`` costs seconds), turns
them into Tables 6 and 9, the routing summary and plotly figures, and writes one HTML file with
plotly.js embedded once: it opens offline, from a file, with no network. The only numbers made
here are the attention patterns, which need the model forward at a few chosen checkpoints.

Every string that comes from a run (its folder name, its config, its command line) is written
through ``html.escape``; JSON inside ``<script>`` has ``<``, ``>``, ``&`` and ``/`` as unicode escapes.
See docs/report.md.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from .checkpoints import Run, RunError, atomic_write_text, read_json, refuse_inside_run
from .config import compare_name
from .frames import records
from .summaries import nearest

MAX_SLIDER_FRAMES = 40  # checkpoints in the head-grid slider
MAX_ATTENTION_CHECKPOINTS = 12  # checkpoints whose attention patterns are stored
ATTENTION_PATTERN_BUDGET = 48  # K x stored checkpoints of attention patterns, at most (K = 36: 4 checkpoints)

esc = html.escape


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


# --- HTML pieces ----------------------------------------------------------------------------


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


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
            v = _cell(r.pop(c, None))
            r[f"{c} [95% CI]"] = v if _cell(lo) == "—" or _cell(hi) == "—" else f"{v} [{_cell(lo)}, {_cell(hi)}]"
        out.append(r)
    return out_cols, out


def html_table(rows: list[dict], cols: list[str] | None = None) -> str:
    """Rows as an HTML table; columns named paper_* are labelled and shaded as the paper's
    reference values, not our output; intervals (X_lo, X_hi) are folded into their column X.
    Every header and cell is escaped."""
    rows = records(rows)
    if not rows:
        return "<p class='note'>(no rows)</p>"
    cols, rows = fold_intervals(rows, cols or list(dict.fromkeys(k for r in rows for k in r)))
    head = "".join(
        f"<th class='ref'>paper (reference): {esc(c[len('paper_') :])}</th>"
        if c.startswith("paper_")
        else f"<th>{esc(c)}</th>"
        for c in cols
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=ref' if c.startswith('paper_') else ''}>{esc(_cell(r.get(c)))}</td>" for c in cols)
        + "</tr>"
        for r in rows
    )
    return f"<div class='tw'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def transposed_table(rows: list[dict], key: str = "run") -> str:
    """One column per row (per run), one table row per field: for wide records like routing."""
    if not rows:
        return "<p class='note'>(no rows)</p>"
    fields, rows = fold_intervals(rows, [f for f in dict.fromkeys(k for r in rows for k in r) if f != key])
    head = "<th></th>" + "".join(f"<th>{esc(_cell(r.get(key)))}</th>" for r in rows)
    body = "".join(
        f"<tr><th>{esc(f)}</th>" + "".join(f"<td>{esc(_cell(r.get(f)))}</td>" for r in rows) + "</tr>" for f in fields
    )
    return f"<div class='tw'><table class='tr'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def kv_table(d: dict) -> str:
    return (
        "<table class='kv'>"
        + "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_cell(v))}</td></tr>" for k, v in d.items())
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


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1400px;padding:0 18px 60px;color:#222}
h1{font-size:1.5em;margin:18px 0 4px} h2{font-size:1.2em;margin-top:34px;border-bottom:1px solid #ddd;padding-bottom:3px} h3{font-size:1.05em}
nav{position:sticky;top:0;z-index:10;background:#fff;padding:6px 0;border-bottom:1px solid #ddd} nav a{margin-right:12px;font-size:.9em} .note{color:#555;font-size:.88em;max-width:1100px}
table{border-collapse:collapse;font-size:.85em;margin:8px 0} th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4} .kv th,.tr tbody th{text-align:left} .kv td{text-align:left;font-family:monospace;word-break:break-all;max-width:560px}
.tw{overflow-x:auto;max-width:100%} .warn{background:#fff3cd;border:1px solid #e0c36c;padding:6px 10px;font-size:.9em}
th.ref,td.ref{background:#fff6e0;color:#7a5a00} .controls{margin:6px 0 2px;font-size:.9em} .controls label{margin-right:14px}
.grid{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start} .fig{margin:4px 0 10px}
"""

STATUS_HEAD = """<script>
window.__reportErrors=[];
window.addEventListener('error',function(e){window.__reportErrors.push(String(e.message||e))});
window.addEventListener('unhandledrejection',function(e){window.__reportErrors.push('unhandled rejection: '+String(e.reason))});
</script>"""

# After load, write what rendered into the DOM (read by the headless-browser test).
STATUS_TAIL = """<script>
window.addEventListener('load',function(){
var loadms=performance.now();
if(location.hash==='#selftest'){  // exercise every control and slider once, so their errors surface too
 document.querySelectorAll('.controls input,.controls select').forEach(function(c){
  if(c.tagName==='SELECT'){c.selectedIndex=c.options.length-1}else{c.value=c.min}c.dispatchEvent(new Event('input'));});
 document.querySelectorAll('.js-plotly-plot').forEach(function(gd){var sl=(gd.layout.sliders||[])[0];
  if(sl&&sl.steps.length){var a=sl.steps[sl.steps.length-1].args;Plotly.animate(gd,a[0],a[1]);}});}
setTimeout(function(){
var plots=document.querySelectorAll('.js-plotly-plot');var svgs=0;
plots.forEach(function(p){if(p.querySelector('.main-svg'))svgs++;});
var d=document.createElement('div');d.id='render-status';d.hidden=true;
d.setAttribute('data-errors',JSON.stringify(window.__reportErrors));d.setAttribute('data-plots',String(plots.length));
d.setAttribute('data-svgs',String(svgs));d.setAttribute('data-loadms',String(Math.round(loadms)));d.setAttribute('data-expected',String(%d));document.body.appendChild(d);},500);});
</script>"""

ATTN_JS = """<script>
(function(){var D=%s;var id=%s;
var g=function(s){return document.getElementById(id+'-'+s)};
function draw(){var s=+g('step').value,h=+g('head').value,e=+g('ex').value;
 g('steplabel').textContent=D.steps[s];
 Plotly.restyle(id,{z:[D.patterns[s][h][e]]},[0]);
 Plotly.relayout(id,{'title.text':D.title+' '+D.heads[h]+', step '+D.steps[s],
  'xaxis.ticktext':D.labels[e],'yaxis.ticktext':D.labels[e]});}
['step','head','ex'].forEach(function(k){g(k).addEventListener('input',draw);g(k).addEventListener('change',draw);});
})();
</script>"""


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


# --- the report ------------------------------------------------------------------------------


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
) -> Path:
    """Write the interactive report of one or several runs (the passes on ``device``); returns
    the HTML path.

    Default path: ``<analyses>/<run name>/report.html`` for one run,
    ``<analyses>/compare_<names>/report.html`` for several. The passes' per-checkpoint caches
    live under ``<analyses>/<run name>/passes/`` (shared with ``mi-plateau analyze --out
    <analyses>``); ``analyses`` defaults to the folder of ``out`` when ``out`` is given (the
    report writes nowhere but beside its output), else to ``analyses/``.
    """
    from . import figures
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
    from .tabular import PLOTLY_MODES

    if plotly not in PLOTLY_MODES:
        raise ValueError(f"--plotly {plotly!r}: choose one of {', '.join(PLOTLY_MODES)}")
    data = [_gather(r, analyses, pc, progress, device) for r in runs]
    names = [d["name"] for d in data]

    page = Page()
    title = "mi_plateau report: " + ", ".join(names)
    label = {d["name"]: esc(d["name"]) for d in data}  # names as they go into plotly text
    notes: list[str] = []

    page.add("<h2 id='summary'>Summary</h2>")
    for d in data:
        if d["summary"]["status"] != "finished":
            page.add(
                f"<p class='warn'>{esc(d['name'])} was still training when this report was written (status "
                f"{esc(str(d['summary']['status']))}, last checkpoint step {esc(str(d['summary']['last_step']))}); "
                "write the report again once it has finished.</p>"
            )
    srows = []
    for d in data:
        s, ro = d["summary"], d["routing"]
        fam = s["definitions"]
        srows.append(
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
                    f"{label}{end}": ro.get(f"{key}{end}")
                    for label, key in (
                        ("lead (tau−t_r)/tau, causal", "routing_lead_swap_contrib"),
                        ("lead, attention", "routing_lead_sel_attn"),
                    )
                    for end in ("", "_lo", "_hi")
                },
            }
        )
    page.add(html_table(srows))

    page.add(
        "<h2 id='loss'>Loss curves</h2><p class='note'>The paper's sequence candidate loss L_seq (log-probability of the "
        "whole target string and EOS, renormalised over the group's K candidate strings), our first-token candidate loss Lc "
        "(the first target token renormalised over the group's K candidate first characters), L1 (first token, full "
        "vocabulary) and the full target loss, in nats, on the fixed evaluation set. Long dashes: log K; dotted vertical: "
        "tau (first step with L_seq &lt; alpha log K). The buttons switch the step axis to log (step 0 is not drawn there).</p>"
    )
    page.fig(
        figures.loss_curves(
            {label[d["name"]]: d["tables"]["checkpoint"] for d in data},
            {label[d["name"]]: {"log_K": d["summary"]["log_K"], "tau": d["summary"]["tau"]} for d in data},
        )
    )

    page.add(
        "<h2 id='figure3'>Figure 3 panels</h2><p class='note'>(a) z-dependence (swap gap / its maximum) and loss progress "
        "against t / tau; (b) between consecutive checkpoints, the fraction of groups whose loss falls and the mean rate. "
        "Top row: the paper's definitions (L_seq and its swap gap, computed at the per-head checkpoints; t / tau with the L_seq "
        "tau); bottom row: first-token definitions (Lc, every checkpoint, the Lc tau).</p>"
    )
    page.fig(figures.figure3({label[d["name"]]: d["figure3"] for d in data}))

    for i, d in enumerate(data):
        _run_sections(page, d, f"r{i}", notes, progress)

    page.add(
        "<h2 id='tables'>Tables</h2><h3>Table 6: the collective transition</h3><p class='note'>"
        "definition paper: a group's accuracy = fraction of its K examples whose target string has the highest score among "
        "the group's K candidate strings (the paper's), at fractions of the L_seq tau; first_token: fraction whose four target "
        "tokens are all the teacher-forced argmax (exact match), at fractions of the Lc tau. "
        "Shaded columns are the paper's values (reference only, nearest row in fraction of tau), never our output.</p>"
    )
    page.add(html_table([r for d in data for r in records(d["table6"])]))
    page.add(
        "<h3>Table 9: head ablation</h3><p class='note'>ΔL (the paper's) = full-vocabulary mean cross-entropy over all "
        "target positions (A1..A4, EOS) with the head's hook_z zeroed, minus clean; ΔLc = the same for the first-token candidate "
        "loss (nats). definition paper: ranked by ΔL at tau/4, tau, 2 tau of the L_seq tau; first_token: ranked by ΔLc at the "
        "same fractions of the Lc tau. Shaded: the paper's Table 9 (reference only).</p>"
    )
    page.add(html_table([r for d in data for r in records(d["table9"])]))
    page.add(
        "<h3>Selector routing</h3><p class='note'>Routing head = largest causal share of the swap gap at the last "
        "ablated checkpoint; t_r = first step at half of a score's final rise; lead = (tau − t_r) / tau with the L_seq tau, and "
        "(keys ending _first_token) with the Lc tau. [95% CI]: percentile bootstrap over the evaluation groups (each resample "
        "recomputes the heads' mean score curves and the swap gap's; heads and tau held fixed).</p>"
    )
    page.add(transposed_table([d["routing"] for d in data]))

    page.add("<h2 id='provenance'>Config and provenance</h2>")
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
        page.add(
            f"<h3>{esc(d['name'])}</h3><div class='grid'><div><b>seeds</b>{kv_table(seeds)}<b>command.json</b>{kv_table(prov)}</div>"
            f"<div><b>config.json</b>{kv_table(_flatten(cfg.to_dict()))}</div></div>"
        )

    page.add("<h2 id='notes'>Downsampling</h2><ul class='note'>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")

    nav = "".join(
        f"<a href='#{a}'>{t}</a>"
        for a, t in (
            ("summary", "summary"),
            ("loss", "loss curves"),
            ("figure3", "Figure 3"),
            ("r0-heads", "heads"),
            ("r0-attn", "attention"),
            ("r0-groups", "groups"),
            ("tables", "tables"),
            ("provenance", "provenance"),
            ("notes", "downsampling"),
        )
    )
    atomic_write_text(out, _document(title, nav, page, out, plotly))
    return out


def _document(title: str, nav: str, page: Page, out: Path, plotly: str = "inline") -> str:
    """The page shell: plotly.js loaded once (``tabular.plotly_script``: inline by default, so
    the page opens offline on its own), the render-status hooks, the sections."""
    from .tabular import plotly_script

    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{CSS}</style>{STATUS_HEAD}"
        f"{plotly_script(plotly, out)}</head><body>"
        f"<h1>{esc(title)}</h1><p class='note'>Marginals Before Conditionals (arXiv 2603.10074): plateau at log K, then a "
        f"collective transition. Written by mi_plateau; self-contained, opens offline.</p><nav>{nav}</nav>"
        + "".join(page.parts)
        + (STATUS_TAIL % page.n_figs)
        + "</body></html>"
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
    page.add(f"<p class='note'>{esc(note)}</p>" if note else "")
    anchors = []
    for i, (title, fig) in enumerate(figs.items()):
        anchors.append((f"f{i}", title))
        page.add(f"<h2 id='f{i}'>{esc(title)}</h2>")
        page.fig(fig)
    if curves:
        anchors.append(("curves", "loss curves"))
        page.add("<h2 id='curves'>Every run's loss curves</h2>")
        page.fig(figures.figure1(curves).update_layout(title="loss against step, every run of the sweep"))
    for i, (title, rows) in enumerate(tables.items()):
        anchors.append((f"t{i}", title))
        page.add(f"<h2 id='t{i}'>{esc(title)}</h2><div class='tw'>{html_table(rows)}</div>")
    nav = "".join(f"<a href='#{a}'>{esc(t)}</a>" for a, t in anchors)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, _document(f"mi_plateau sweep: {name}", nav, page, out, plotly))
    return out


def _run_sections(page: Page, d: dict, key: str, notes: list[str], progress: bool) -> None:
    """The per-run figures: head scores, head grid with slider, attention, groups, patching."""
    from . import figures
    from .passes.attention import attention_patterns
    from .passes.tables import accuracy_histogram

    name, lab, tau, K = d["name"], esc(d["name"]), d["summary"]["tau"], d["cfg"].task.K
    t = {k: records(v) for k, v in d["tables"].items()}
    all_steps = sorted({r["step"] for r in t["checkpoint"]})
    page.add(
        f"<h2 id='{key}-heads'>Heads: {esc(name)}</h2><p class='note'>sel_attn = attention from the position that predicts "
        "A1 to the selector positions minus the uniform baseline; ΔLc = ablation (hook_z zeroed) effect on Lc in nats; "
        "causal share = swap gap removed by ablating the head / swap gap (blank while the gap is below 0.05 nats).</p>"
    )
    page.fig(figures.head_scores_over_training(t["heads"], lab, tau))
    ablated = sorted({r["step"] for r in t["heads"] if r["dLc"] == r["dLc"]})
    if ablated:
        keep = [s for s in ablated if tau and s in (nearest(ablated, f * tau) for f in (0.25, 0.5, 1.0, 1.5))]
        frames = spread(ablated, MAX_SLIDER_FRAMES, tuple(keep))
        notes.append(
            f"{esc(name)}: the head-grid slider shows {len(frames)} of the {len(ablated)} checkpoints that had the "
            f"per-head ablations ({len(all_steps)} checkpoints in the run; the others have selector attention only, "
            "drawn in the heat maps over training)."
        )
        page.fig(figures.head_grid_slider(t["heads"], lab, frames))

    # every selector of the first base group (eval rows 0..K-1); fewer checkpoints for large K
    # keep the page's size in bounds (K x checkpoints patterns per head)
    n_att = max(4, min(MAX_ATTENTION_CHECKPOINTS, ATTENTION_PATTERN_BUDGET // K))
    att_steps = spread(
        all_steps, n_att, tuple(nearest(all_steps, f * tau) for f in (0.25, 0.5, 1.0, 1.5)) if tau else ()
    )
    A = attention_patterns(d["run"], d["cfg"], att_steps, K, progress=progress)
    routing = d["routing"].get("routing_head")
    h0 = A["heads"].index(routing) if routing in A["heads"] else 0
    notes.append(
        f"{esc(name)}: attention patterns are stored for {len(att_steps)} of {len(all_steps)} checkpoints "
        f"(steps {', '.join(map(str, att_steps))}) and the {len(A['examples'])} examples of the first base group (every "
        f"selector z = 0..{K - 1}); the viewer opens on the routing head ({routing})."
    )
    A["title"] = f"{lab}:"
    page.add(
        f"<h2 id='{key}-attn'>Attention patterns: {esc(name)}</h2><p class='note'>Rows: query position, columns: key "
        f"position. The query at position {A['first_pred']} (the SEP before A, outlined) predicts A1; z:… are the selector tokens, "
        "A:… the target.</p>"
    )

    def opts(items, chosen: int = 0) -> str:
        return "".join(
            f"<option value='{i}'{' selected' if i == chosen else ''}>{esc(str(x))}</option>"
            for i, x in enumerate(items)
        )

    div = f"{key}-attnfig"
    page.add(
        f"<div class='controls'><label>checkpoint <input type='range' id='{div}-step' min='0' max='{len(att_steps) - 1}' "
        f"value='{len(att_steps) - 1}'> step <b id='{div}-steplabel'>{att_steps[-1]}</b></label>"
        f"<label>head <select id='{div}-head'>{opts(A['heads'], h0)}</select></label>"
        f"<label>example <select id='{div}-ex'>{opts(A['examples'])}</select></label></div>"
    )
    page.fig(
        figures.attention_pattern(
            A["patterns"][-1][h0][0], A["labels"][0], f"{lab}: {A['heads'][h0]}, step {att_steps[-1]}", A["first_pred"]
        ),
        div,
    )
    payload = {k: A[k] for k in ("steps", "heads", "labels", "patterns", "title")}
    page.add(ATTN_JS % (_script_json(payload), _script_json(div)))

    page.add(
        f"<h2 id='{key}-groups'>Per-group accuracy: {esc(name)}</h2><p class='note'>A group's accuracy is the fraction of "
        f"its K = {K} examples whose target is fully right (teacher-forced argmax); {len(all_steps)} checkpoints, all shown. "
        "Groups that learn together move the whole distribution up at once; groups that learn one by one split it between 0 and 1.</p>"
    )
    page.fig(figures.group_accuracy(accuracy_histogram(t["groups"], K), t["checkpoint"], lab, tau))
    if t["patching"]:
        page.add(f"<h3>Causal patching: {esc(name)}</h3>")
        page.fig(figures.patching(t["patching"], lab, tau))
