"""Named recipes that rebuild the paper's artifacts: ``mi-plateau reproduce core``.

``core`` trains the runs of its sweep file (``mi_plateau/sweeps/recipes/core.toml``: the paper
configuration, n_b = 1000, paper model and optimiser, for K in {5, 10, 20, 36} with seed 0 and K
in {10, 20} with seeds 1 and 2, and K = 10 under the earlier tl4 recipe), analyses every run,
and writes the static figures and generated tables under ``docs/reproduction/``. It is resumable: finished
runs and analysed checkpoints are skipped, unfinished runs resume from their last checkpoint.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

from .. import figures, paper
from ..api import analyze
from ..checkpoints import Run, RunError, atomic_write_json, atomic_write_text, read_json
from ..config import config_diff
from ..frames import cell, lead, to_markdown
from ..outputs import read_json_rows, write_figures
from ..summaries import nan_to_none, num
from ..sweeps import RunOptions, load_sweep, status, train_local, train_wall
from .registry import SHIPPED, DryRun, Recipe


def plan(recipe: str = "core", root: str | Path = "checkpoints"):
    """(run folder, config) of every run of the recipe's shipped sweep file
    (``mi_plateau/sweeps/recipes/core.toml``), each directly under ``root``, named as
    ``mi-plateau train`` names the run."""
    return [(Path(root) / p.name, p.cfg) for p in load_sweep(SHIPPED / f"{recipe}.toml").points]


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    """The recipe's runs under ``o.root`` and the state of each."""
    runs = plan(r.name, o.root)
    return DryRun(
        [
            {"run": str(p), "preset": c.preset, "K": c.task.K, "seed": c.task.data_seed, "status": status(p)}
            for p, c in runs
        ]
    )


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    return run_recipe(r.name, o)


def train_all(runs, options: RunOptions = RunOptions()) -> None:
    """Train the recipe's unfinished runs on the sweeps' local pool, as ``options`` ask
    (``jobs``, ``threads`` per process, default 1, ``device``, ``progress``)."""
    for path, cfg in runs:
        if (path / "config.json").exists():  # started: it must be this recipe's run
            _check_recipe_config(path, cfg)
    # a started run continues with its stored config (it may differ in the step implementation)
    todo = [(p, Run(p).config() if (p / "config.json").exists() else c) for p, c in runs]
    errors = train_local(todo, options, logs=Path(runs[0][0]).parent / "logs" if runs else None)
    if errors:
        raise RunError(
            f"training failed for {', '.join(f'{k} ({v})' for k, v in errors.items())}; rerun the recipe to resume"
        )


STEP_IMPL = ("impl", "compile")  # how a step is computed, not what the recipe trains


def _check_recipe_config(path: Path, cfg) -> None:
    """A started run must be the recipe's run; only the step implementation may differ (runs
    begun before ``train.impl`` existed trained with ``bridge``, and resume that way), and its
    ``max_steps`` may have been raised."""
    stored, want = Run(path).config().to_dict(), cfg.to_dict()
    keys = STEP_IMPL + (("max_steps",) if stored["train"]["max_steps"] >= want["train"]["max_steps"] else ())
    keys += ("precision",) if want["train"]["precision"] == "auto" else ()  # auto continues what the run chose
    for d in (stored, want):  # (a cap raised with `config.extends` continues the same run)
        for k in keys:
            d["train"].pop(k, None)
        d["eval"].pop("live_groups", None)  # the live subset (a GPU may choose every group) trains the same weights
    if stored != want:
        raise RunError(
            f"{path / 'config.json'}: not this recipe's run ({config_diff(stored, want)}); "
            "move it away or rerun elsewhere"
        )


def seed0_curves(runs) -> dict[str, dict[str, Any]]:
    """Figure 1's curves: L_seq and Lc against step of the paper-preset seed-0 runs, by K."""
    curves = {}
    for p, c in sorted(
        ((p, c) for p, c in runs if c.task.data_seed == 0 and c.preset == "paper"), key=lambda pc: pc[1].task.K
    ):
        recs = Run(p).records()
        curves[f"K={c.task.K}"] = {
            "steps": [r["step"] for r in recs],
            "L_seq": [r["metrics"].get("L_seq") for r in recs],
            "Lc": [r["metrics"].get("Lc") for r in recs],
            "log_K": c.task.log_K,
        }
    return curves


def tau_tables(results: dict[str, Any], runs) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Table 3's rows (one per run: both families' tau and plateau, the paper's tau at its K) and
    the spread of tau across seeds (mean, sample std per preset and K with more than one seed)."""
    t3, by = [], {}
    for p, c in runs:
        s = results["summaries"][p.name]
        fam = s["definitions"]
        by.setdefault((c.preset, c.task.K), []).append(fam)
        t3.append(
            {
                "run": p.name,
                "preset": c.preset,
                "K": c.task.K,
                "seed": c.task.data_seed,
                "tau_paper": fam["paper"]["tau"],
                "tau_first_token": fam["first_token"]["tau"],
                "paper_tau": paper.TABLE3.get(c.task.K),
                "plateau_paper": fam["paper"]["plateau_loss"],
                "plateau_paper_over_logK": fam["paper"]["plateau_ratio"],
                "plateau_first_token_over_logK": fam["first_token"]["plateau_ratio"],
                "converged_step": s["converged_step"],
                "last_step": s["last_step"],
                "status": s.get("status"),
                "train_wall_s": results["train_wall"].get(p.name),
            }
        )
    spread = []
    for (pre, K), fams in sorted(by.items()):
        row: dict[str, Any] = {"preset": pre, "K": K, "seeds": len(fams), "paper_tau": paper.TABLE3.get(K)}
        for f in ("paper", "first_token"):
            taus = [x[f]["tau"] for x in fams if x[f]["tau"] is not None]
            row[f"tau_{f}_mean"] = statistics.mean(taus) if taus else None
            row[f"tau_{f}_std"] = statistics.stdev(taus) if len(taus) > 1 else None
        if len(fams) > 1:
            spread.append(row)
    return t3, spread


TABLES = "tables"  # docs/reproduction/tables.md and its JSON twin tables.json (what readers read)
# the twin's keys and the Markdown's headings, in the page's order
SECTIONS = (
    ("table3", "Table 3 (K column) and Table 7 (K = 10): tau and plateau height, both definitions"),
    ("tau_spread", "tau across seeds"),
    ("table6", "Table 6: collective transition"),
    ("table9", "Table 9: head ablation (top 4 heads per phase; Delta L and Delta Lc in nats)"),
    ("routing", "Selector routing: routing head, assembly time t_r and lead (tau - t_r) / tau"),
)


def core_tables(t3: list[dict[str, Any]], spread: list[dict[str, Any]], comp: Path) -> dict[str, list]:
    """The tau tables and the comparison's Tables 6 and 9 and routing, by ``SECTIONS``' keys."""
    rows = {k: read_json_rows(comp / f"{k}.json") for k in ("table6", "table9", "routing")}
    return {"table3": t3, "tau_spread": spread, **rows}


def tables_md(tables: dict[str, list]) -> str:
    """docs/reproduction/tables.md: ``core_tables`` as Markdown, one section each."""
    parts = [
        "# Generated tables (mi-plateau reproduce core)\n",
        "Regenerate with `mi-plateau reproduce core`. Columns named paper_* are the paper's values, for reference; "
        "`definition` says which family a row measures (paper: L_seq / candidate accuracy / Delta L; first_token: Lc / "
        "exact match / Delta Lc). The same rows as JSON: [tables.json](tables.json).\n",
    ]
    for i, (key, heading) in enumerate(SECTIONS):
        parts.append(("\n" if i else "") + f"## {heading}\n")
        rows = tables[key]
        parts.append(to_markdown(rows) if rows or key != "tau_spread" else "(one seed per K)\n")
    return "".join(parts)


def write_tables(tables: dict[str, list], docs: Path) -> list[Path]:
    """``core_tables`` as docs/reproduction/tables.md and its JSON twin tables.json."""
    docs.mkdir(parents=True, exist_ok=True)
    atomic_write_text(docs / f"{TABLES}.md", tables_md(tables))
    atomic_write_json(docs / f"{TABLES}.json", nan_to_none(tables))
    return [docs / f"{TABLES}.md", docs / f"{TABLES}.json"]


def write_assets(results: dict[str, Any], runs, docs: Path, static: bool | None = None) -> tuple[list[Path], str]:
    """The generated tables Markdown for docs/reproduction.md (``core_tables``, also left in
    ``results["core_tables"]`` for the log) and the static figures (exported from the same plotly
    figures the report draws; ``static`` as in ``outputs.write_figures``); returns the paths
    written and the one-line note of skipped figures."""
    curves = seed0_curves(runs)
    f3 = {name: d for name, d in results["figure3"].items() if any(len(v["a"]) for v in d.values())}
    results["core_tables"] = core_tables(*tau_tables(results, runs), Path(results["comparison"]))
    written = write_tables(results["core_tables"], docs)
    # the figures last: a failed export (the static writer's browser) leaves the tables written
    figs = [(docs / "figure1.svg", figures.figure1(curves), {})] if curves else []
    if f3:
        figs.append((docs / "figure3.svg", figures.figure3(f3), {"width": 1200}))
    done, note = write_figures(figs, static)
    return written + done, note


def run_recipe(
    recipe: str = "core", options: RunOptions = RunOptions(), *, analyses: str | Path = "analyses"
) -> dict[str, Any]:
    """Train (unless ``options.train`` is False) and analyse the recipe's runs (under
    ``options.root``; ``jobs``, ``device``, ``progress`` as in ``train_all``; the analysis on
    ``device`` too); write docs assets and a log into ``options.docs`` (``options.static``: the
    static figures, ``outputs.write_figures``)."""
    t0 = time.perf_counter()
    runs = plan(recipe, options.root)
    if options.train:
        train_all(runs, options)
    else:  # analyse what exists: finished runs and unfinished ones up to their last checkpoint
        states = {p: status(p) for p, _ in runs}
        if all(s == "not started" for s in states.values()):  # none here: the tables from the log alone
            return nan_to_none(from_log(Path(options.docs)))
        runs = [(p, c) for p, c in runs if states[p] in ("finished", "running")]
        if not runs:
            raise RunError(
                "no run of this recipe can be analysed: "
                + ", ".join(f"{p} ({s})" for p, s in states.items() if s != "not started")
            )
    t_train = time.perf_counter() - t0
    res = analyze([p for p, _ in runs], analyses, progress=options.progress, with_figure3=True, options=options)
    t_an = time.perf_counter() - t0 - t_train
    fig3 = {p.name: res["runs"][p.name]["figure3"] for p, c in runs if c.task.data_seed == 0 and c.preset == "paper"}
    results = {
        "summaries": {n: r["summary"] for n, r in res["runs"].items()},
        "routing": {n: r["routing"] for n, r in res["runs"].items()},
        "comparison": res["comparison"],
        "figure3": fig3,
        "train_wall": {p.name: num(train_wall(Run(p))) for p, _ in runs},
    }
    written, static_note = write_assets(results, runs, Path(options.docs), options.static)
    log = {
        "recipe": recipe,
        "recipe_train_wall_s": t_train,
        "recipe_analysis_wall_s": t_an,
        "sum_of_run_train_wall_s": sum(v for v in results["train_wall"].values() if math.isfinite(v)),
        "summaries": results["summaries"],
        "routing": results["routing"],
        "tables": {"Runs (tau in steps; leads (tau - t_r) / tau, ours)": run_rows(results)},
        "core_tables": results["core_tables"],  # what tables.md shows: rebuilt from here without the runs
        "written": [str(w) for w in written],
        "static_note": static_note,
    }
    atomic_write_json(Path(options.docs) / LOG, log)
    return nan_to_none(log)


LOG = "recipe_log.json"


def from_log(docs: Path) -> dict[str, Any]:
    """tables.md and tables.json rebuilt from the recipe's log alone (``core_tables``, what the
    last run with the run folders wrote): on a machine without them. The figures need the runs."""
    path = docs / LOG
    log = read_json(path) if path.exists() else {}
    if "core_tables" not in log:
        raise RunError(
            f"no run of this recipe has started under this root and {path} holds no tables; "
            "run it without --no-train first"
        )
    tables = {key: log["core_tables"][key] for key, _ in SECTIONS}
    written = write_tables(tables, docs)
    return {
        "recipe": "core",
        "tables": {heading: tables[key] for key, heading in SECTIONS},
        "written": [str(w) for w in written],
        "static_note": f"the figures were not drawn: they need the run folders (the tables come from {path})",
    }


def run_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per run: both families' tau and plateau height over log K, the routing head and
    its leads (tau - t_r) / tau with their bootstrap intervals."""
    rows = []
    for name, s in results["summaries"].items():
        ro, fam = results["routing"][name], s["definitions"]
        rows.append(
            {
                "run": name,
                "tau_paper": fam["paper"]["tau"],
                "tau_first_token": fam["first_token"]["tau"],
                "plateau_ratio_paper": cell(fam["paper"]["plateau_ratio"], ".3f"),
                "plateau_ratio_first_token": cell(fam["first_token"]["plateau_ratio"], ".3f"),
                "routing_head": ro.get("routing_head"),
                "lead_attention": lead(ro, "routing_lead_sel_attn"),
                "lead_causal": lead(ro, "routing_lead_swap_contrib"),
            }
        )
    return rows
