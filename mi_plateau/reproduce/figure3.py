"""``reproduce figure3``: Figure 3 and the abstract's "~50% lead" as the original code computed them,
ours beside, over the K sweep's runs (``<root>/paper_k_sweep/K*_seed<seed>``) or, where a K has
one, the lead sweep's (``<root>/paper_lead_sweep/``: the same runs carried on past the first-token
loss onset, docs/sweeps/lead_sweep.toml).

Per run: (a) by the original's quantity, the training batches' first-token loss and its
z-deranged gap read off the run's checkpoint records (``passes.lead.original_series``); ours, Lc
and the z-shuffle gap on the evaluation set, from the cheap passes at every checkpoint
(``analyze_run(heavy=False)``; cached under ``analyses/<run>/passes/``, shared with ``mi-plateau
analyze``); ``passes.lead`` gives the onsets and the lead of both. (b) for K in ``DESCENT_KS``,
``passes.descent`` reads the displacement cosines from the weights, windowed against the
original's first-token tau (``train_first_loss`` < 0.5 log K). The original code's own K = 10 run
(``REFERENCE`` under the docs folder: maintainers' reference data) is read by the same windows
and drawn beside ours. Nothing is trained: the runs are the sweeps'.

Seed 0's run at every K, and those of seeds 1 and 2 at K = 10 and 20 (``SEEDS``, ``SEED_KS``).
Writes ``figure3_lead`` (one row per run, by K and seed), ``figure3_lead_summary`` (over seed 0's
runs: the mean lead fraction over the Ks with a positive lead, its std with ddof 0, the exponent of
lead ~ K^s; both quantities, both z thresholds), ``figure3_descent`` (the cosine per window, the
original's run first, then ours run by run), the figures (seed 0),
and the log ``figure3_log.json`` that keeps every run's series, so the tables rebuild where the
run folders are gone (a run here replaces its logged entry). The tables are computed from the
logged series, never from the logged onsets of the original's quantity.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

from .. import paper
from ..checkpoints import Run, RunError
from ..figures import figure3_paper
from ..frames import records
from ..passes import descent, lead
from ..passes.analyze import PassConfig, analyze_run
from ..passes.descent import COMPONENTS, WINDOWS, windows
from ..passes.lead import GAPS, original_tau
from ..sweeps import RunOptions, status
from .logged import each_run, run_logged, runs_dry, started
from .registry import DryRun, Recipe
from .writer import Built, Plot, Table

LOG = "figure3_log.json"
SWEEP = "paper_k_sweep"
LEAD_SWEEP = "paper_lead_sweep"  # docs/sweeps/lead_sweep.toml: the K sweep run to the first-token loss onset
RETRAIN = "retrain it (docs/sweeps/lead_sweep.toml)"
DESCENT_KS = (10, 20, 36)
# Figure 3 on more data seeds (the paper's fixed init) at these Ks: the original's lead and the
# displacement windows of each seed's run; the lead's summary and ours by Lc stay on seed 0
SEEDS, SEED_KS = (1, 2), (10, 20)
# the descent table's paper column: paper.DESCENT_COS (plateau, pre, post) in words
PAPER_COS = (
    f"~{paper.DESCENT_COS[0]:g} on the plateau, ~{paper.DESCENT_COS[1]:g} around tau "
    "(the original's outputs, as we read them)"
)
# the original code's own Figure 3(b) run, under the docs folder (its README says how it was made)
REFERENCE = Path("reference") / "original_fig3b_k10"
REFERENCE_CSV = "k10_weight_displacement.csv"
REFERENCE_K = 10
REFERENCE_SOURCE = "the original code, its own run"
# its csv's columns -> ours (its buckets attention and other are our attn and ln)
REFERENCE_COLUMNS = {
    "first_target_loss": "train_first_loss",
    "total_disp": "disp",
    "relative_disp": "rel_disp",
    "cos": "cos",
    **{f"cos_{o}": f"cos_{c}" for o, c in zip(("embed", "attention", "mlp", "unembed", "other"), COMPONENTS)},
}


def sweep_runs(root: Path, seed: int = 0) -> list[Path]:
    """Per K, the run folder of ``seed`` that has started under ``root``: the lead sweep's
    (``LEAD_SWEEP``: the K sweep's runs carried on past the first-token loss onset) where it has
    one, else the K sweep's; in K order."""
    pat = re.compile(rf"K(\d+)_seed{seed}$")
    runs = [p for name in (SWEEP, LEAD_SWEEP) for p in started(Path(root) / name)]
    found = {int(m.group(1)): p for p in runs if (m := pat.match(p.name))}  # the lead sweep's replaces the K sweep's
    return [found[k] for k in sorted(found)]


def seed_runs(root: Path) -> list[Path]:
    """The runs ``fresh`` reads: seed 0's at every K (``sweep_runs``), then those of ``SEEDS`` at
    ``SEED_KS``."""
    more = [p for s in SEEDS for p in sweep_runs(root, s) if int(re.match(r"K(\d+)_", p.name).group(1)) in SEED_KS]
    return [*sweep_runs(root), *more]


def run_entry(run: Run, analyses: Path, delta: int, options: RunOptions) -> dict[str, Any]:
    """One run's log entry: K, seed, steps, status, Figure 3(a)'s series (``a``: ours with our onsets,
    seed 0 only, the passes on ``options.device``; ``a_original``: the original's quantity) and
    (``DESCENT_KS``) Figure 3(b)'s rows."""
    cfg, recs = run.config(), run.records()
    K, seed = cfg.task.K, cfg.task.data_seed
    entry: dict[str, Any] = {
        "run": run.name,
        "K": K,
        "seed": seed,
        "steps": run.steps()[-1],
        "status": status(run.path),
        "a_original": lead.original_series(recs, K),
    }
    if seed:  # another seed: the original's lead and the windows; our passes are paid on seed 0 only
        entry["a"], entry["onsets"] = [], None
    elif has_loss_onset(recs, K):
        ck = analyze_run(
            run, analyses / run.name, PassConfig(), heavy=False, progress=options.progress, options=options
        )
        ck = records(ck["checkpoint"])
        entry["a"] = [{**r, "Lc": c["Lc"], "shuffle_gap": c["shuffle_gap"]} for r, c in zip(lead.curve_rows(ck, K), ck)]
        entry["onsets"] = lead.z_onsets(ck, K)
    else:  # no loss onset on Lc by the last checkpoint: ours has no lead, and its passes are not paid for
        logK = math.log(K)
        lc = [(r["step"], r["metrics"].get("Lc")) for r in recs]
        entry["a"] = [
            {"step": s, "Lc_over_logK": v / logK, "zgap_over_logK": None, "Lc": v, "shuffle_gap": None}
            for s, v in lc
            if isinstance(v, (int, float))
        ]
        entry["onsets"] = {"K": K, "loss_onset": None} | {
            f"{k}_{g}": None for g in GAPS for k in ("z_onset", "lead", "lead_frac")
        }
    if K in DESCENT_KS:
        try:
            entry["b"] = records(descent.coherent_descent(run, delta))
        except RunError as e:
            entry["b_error"] = str(e)
    return entry


def has_loss_onset(recs: list[dict[str, Any]], K: int) -> bool:
    """Whether a run's records reach our loss onset (Lc < ``lead.LOSS_FRAC`` log K, scored on every
    group live): without it the lead on Lc is undefined, whatever the z-shuffle gap does."""
    floor = lead.LOSS_FRAC * math.log(K)
    return any(isinstance(v := r["metrics"].get("Lc"), (int, float)) and v < floor for r in recs)


def _series_missing(e: dict, need: str) -> str | None:
    """Why the log entry ``e`` cannot give the original's quantity ``need`` (``train_gap`` or
    ``train_first_loss``), in words; None where it can."""
    if "a_original" not in e:
        return "its log entry keeps no train_first_loss series"
    if not any(isinstance(r.get(need), (int, float)) for r in e["a_original"]):
        key = "train_first_loss_z_deranged" if need == "train_gap" else need
        return f"its records keep no {key}"
    return None


def _onset_notes(on: dict[str, Any], steps: int, loss: str, gap: str) -> list[str]:
    """The onsets ``on`` (of the loss and gap named ``loss`` and ``gap``) that a run has not
    reached by ``steps``."""
    if on["loss_onset"] is None:
        return [f"no loss onset by {steps} steps ({loss} < {lead.LOSS_FRAC} log K)"]
    return [f"no z onset by {steps} steps ({gap} > {g} nats)" for g in GAPS if on[f"z_onset_{g}"] is None]


def original_lead(e: dict) -> tuple[dict[str, Any] | None, list[str]]:
    """The onsets by the original's quantity of one log entry, recomputed from its series, and
    the notes on what it lacks (no series: it cannot be recomputed; an onset not reached)."""
    why = _series_missing(e, "train_gap")
    if why:
        return None, [f"{why}: the lead by the original's quantity cannot be recomputed, {RETRAIN}"]
    on = lead.original_onsets(e["a_original"], e["K"])
    return on, _onset_notes(on, e["steps"], "train_first_loss", "z-deranged gap")


def _columns(on: dict[str, Any] | None, tag: str = "") -> dict[str, Any]:
    """The onset columns of one quantity, ``tag`` after their name (``loss_onset_original``,
    ``z_onset_original_0.1``; ours untagged: ``loss_onset``, ``z_onset_0.1``)."""
    on, t = on or {}, f"_{tag}" if tag else ""
    out = {f"loss_onset{t}": on.get("loss_onset")}
    for g in GAPS:
        out |= {f"{k}{t}_{g}": on.get(f"{k}_{g}") for k in ("z_onset", "lead", "lead_frac")}
    return out


def lead_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """``figure3_lead``: one row per run, by K: the original's onsets and leads (``*_original*``),
    ours on Lc (unsuffixed), and ``note``: what could not be computed, and why."""
    out = []
    for e in sorted(entries.values(), key=_order):
        orig, notes = original_lead(e)
        if e["onsets"] is not None:  # another seed's run has the original's lead only
            notes += _onset_notes(e["onsets"], e["steps"], "Lc", "z-shuffle gap")
        out.append(
            {
                **{k: e[k] for k in ("K", "run", "status", "steps")},
                "seed": e.get("seed", 0),
                **_columns(orig, "original"),
                **_columns(e["onsets"]),
                "note": f"{e['run']}: " + "; ".join(notes) if notes else None,
            }
        )
    return out


def _order(e: dict) -> tuple[int, int]:  # by K, then seed (entries logged before seeds: 0)
    return e["K"], e.get("seed", 0)


def _seed0(entries: dict[str, dict]) -> list[dict]:  # one per K: what the summary and figures read
    return sorted((e for e in entries.values() if not e.get("seed", 0)), key=_order)


def summary_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """``figure3_lead_summary``: the abstract's lead at both z thresholds by the original's
    quantity (the paper's row: ``quantity`` original, gap 0.1) and by ours on Lc, over seed 0's
    run at each K."""
    es = _seed0(entries)
    orig = [(e, original_lead(e)[0]) for e in es]
    without = ", ".join(e["run"] for e, on in orig if on is None)
    by = {
        "original": (
            [on for _, on in orig if on is not None],
            f"without the original's quantity (figure3_lead's note says why): {without}" if without else None,
        ),
        "ours (Lc)": ([e["onsets"] for e in es], None),
    }
    out = []
    for quantity, (onsets, note) in by.items():
        for g in GAPS:
            s = lead.sweep_lead(onsets, g)
            s["Ks_positive"] = ", ".join(str(k) for k in sorted(s["Ks_positive"]))  # one order, fresh or from the log
            paper_row = quantity == "original" and g == GAPS[0]
            out.append(
                {
                    "quantity": quantity,
                    **s,
                    "paper_mean_lead_frac": paper.LEAD_FRACTION if paper_row else None,
                    "note": note,
                }
            )
    return out


def read_reference(docs: str | Path) -> list[dict[str, Any]] | None:
    """The original code's own K = 10 run (``REFERENCE_CSV`` under ``<docs>/REFERENCE``) as
    displacement rows in our column names (``REFERENCE_COLUMNS``; ``cos_smooth`` by our
    ``smooth``); None where the folder is absent."""
    path = Path(docs) / REFERENCE / REFERENCE_CSV
    if not path.exists():
        return None
    with path.open(newline="") as f:
        rows = [
            {"step": int(r["step"]), **{c: float(r[o]) for o, c in REFERENCE_COLUMNS.items()}}
            for r in csv.DictReader(f)
        ]
    for r, m in zip(rows, descent.smooth([r["cos"] for r in rows])):
        r["cos_smooth"] = m
    return rows


def _descent_row(
    source: str, K: int, seed: int | None, run: str, status_: str, grid_end, w: dict, note: str | None
) -> dict[str, Any]:
    """One ``figure3_descent`` row, every column in one order (a window's absence: None)."""
    keys = ["tau", "post_end"]
    keys += [
        f"{p}_{n}{q}"
        for n in (*WINDOWS, "post_to_end")
        for p, q in (("cos", ""), ("n", ""), ("cos", "_lo"), ("cos", "_hi"))
    ]
    keys += [f"cos_{c}_{n}" for c in COMPONENTS for n in WINDOWS]
    head = {"source": source, "K": K, "seed": seed, "run": run, "status": status_, "grid_end": grid_end}
    return {**head, **{k: w.get(k) for k in keys}, "paper": PAPER_COS, "note": note}


def reference_row(ref: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The original code's own run as a ``figure3_descent`` row, by the windows ours are read with
    (tau: its ``first_target_loss`` < 0.5 log 10), or a row saying its data are missing."""
    folder = REFERENCE.as_posix()
    if ref is None:
        return _descent_row(
            REFERENCE_SOURCE, REFERENCE_K, None, None, None, None, {}, f"{folder}/: not found, not shown"
        )
    w = windows(ref, original_tau(ref, REFERENCE_K))
    note = f"mihirs-0/synass-lens at 54951567, its K = 10 config and posthoc script ({folder}/README.md)"
    return _descent_row(REFERENCE_SOURCE, REFERENCE_K, None, "synass-lens K=10", "finished", ref[-1]["step"], w, note)


def _our_descent_row(e: dict) -> dict[str, Any]:
    """One of our runs as a ``figure3_descent`` row: its windows against the original's
    first-token tau, recomputed from its logged series; none before that tau (status: not
    reached) or without the series (note: cannot be recomputed)."""
    b = e.get("b") or []
    grid_end = b[-1]["step"] if b else None
    row = lambda st, w, note: _descent_row("ours", e["K"], e.get("seed", 0), e["run"], st, grid_end, w, note)
    why = _series_missing(e, "train_first_loss")
    if why:
        note = f"{e['run']}: {why}: the first-token tau, and so the windows, cannot be recomputed, {RETRAIN}"
        return row(e["status"], {}, note)
    tau = original_tau(e["a_original"], e["K"])
    if tau is None:
        st = f"not reached by {e['steps']} steps"
        return row(st, {}, f"{e['run']}: first-token tau {st}")
    return row(e["status"], windows(b, tau), e.get("b_error"))


def descent_rows(entries: dict[str, dict], ref: list[dict] | None) -> list[dict[str, Any]]:
    """``figure3_descent``: the original code's own run first, then per K of ``DESCENT_KS`` that
    is here, ours, seed by seed."""
    ours = [_our_descent_row(e) for e in sorted(entries.values(), key=_order) if e["K"] in DESCENT_KS]
    return [reference_row(ref), *ours]


LEAD_NOTE = (
    f"The original's quantity (the paper's; `*_original*` columns): loss onset = first checkpoint with "
    f"train_first_loss (the training batches' full-vocabulary first-token cross-entropy) < {lead.LOSS_FRAC} log K; "
    "z onset = first with the z-deranged gap (train_first_loss_z_deranged - train_first_loss: the last "
    "training batch with its selectors deranged across it) > 0.1 nats (0.05: the sensitive variant). Ours "
    "(unsuffixed columns): the same onsets on Lc and the z-shuffle gap of the evaluation set. lead = loss onset "
    "- z onset; lead fraction = lead / loss onset. Seeds 1 and 2 (K = 10, 20): the original's quantity only; "
    "the summary reads seed 0's run at each K. note: what a run lacks, and why. "
    "Regenerate with `mi-plateau reproduce figure3`."
)
DESCENT_NOTE = (
    f"source: ours, or {REFERENCE_SOURCE} (K = 10, docs/reproduction/{REFERENCE.as_posix()}/, read by the "
    f"same windows). tau: the original's first-token tau, the first checkpoint with train_first_loss < "
    f"{lead.TAU_FRAC} log K. Windows: plateau t < tau/2, pre tau/2 <= t < tau, post tau <= t <= tau + 1,600 "
    "(post_end: the original's reference window), post_to_end t >= tau to grid_end (the last step of the "
    "Delta grid). cos_<window>: mean raw cosine of consecutive 200-step displacements over n_<window> grid "
    "points; cos_<component>_<window>: the same over one component (ln: the LayerNorms, the original's "
    "other). A run before its tau has no windows (status: not reached by N steps)."
)


def build_figure3(entries: dict[str, dict], ref: list[dict] | None = None) -> Built:
    """The tables and the two figures of ``figure3`` from the log's entries and the original
    code's own run (``read_reference``; None: missing, said in its row)."""
    es = _seed0(entries)
    a = {
        f"K={e['K']}": {**{k: e.get(k) for k in ("a", "onsets", "a_original")}, "onsets_original": original_lead(e)[0]}
        for e in es
    }
    b = {
        f"K={e['K']}": {"b": e.get("b") or [], "windows": {"tau": original_tau(e.get("a_original") or [], e["K"])}}
        for e in es
        if e["K"] in DESCENT_KS
    }
    if ref is not None:
        b[f"{REFERENCE_SOURCE} (K = {REFERENCE_K})"] = {
            "b": ref,
            "windows": {"tau": original_tau(ref, REFERENCE_K)},
            "reference": True,
        }
    return Built(
        {
            "Figure 3(a): onsets and lead per K": Table("figure3_lead", lead_rows(entries), "Figure 3(a)", LEAD_NOTE),
            "the ~50% lead": Table(
                "figure3_lead_summary",
                summary_rows(entries),
                "The abstract's lead: mean lead fraction over the Ks with a positive lead (std ddof 0), lead ~ K^s",
                LEAD_NOTE,
            ),
            "Figure 3(b): displacement cosine per window": Table(
                "figure3_descent",
                descent_rows(entries, ref),
                "Figure 3(b): cosine of consecutive 200-step weight displacements, mean per window",
                DESCENT_NOTE,
            ),
        },
        {
            "Figure 3(a)": Plot("figure3a", figure3_paper(a, ("a_original", "a"))),
            "Figure 3(b)": Plot("figure3b", figure3_paper(b, "b")),
        },
    )


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    return runs_dry(seed_runs(Path(o.root)))


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    return run_figure3_recipe(o)


def run_figure3_recipe(
    options: RunOptions = RunOptions(), *, analyses: str | Path = "analyses", delta: int = 200
) -> dict[str, Any]:
    """Read the K sweep's runs under ``options.root`` (their entries replace the log's) and the
    original code's own run under ``options.docs``, build, write the tables, the figures
    (``options.static``) and the log; returns the log without the series. The passes run on
    ``options.device``, with progress on standard error unless ``options.progress`` is False."""
    root, docs, analyses, progress = Path(options.root), options.docs, Path(analyses), options.progress
    entry = lambda p: run_entry(Run(p), analyses, delta, options)  # noqa: E731
    passes = each_run("figure3", seed_runs(root), entry, "passes and displacements", progress)
    missing = (
        f"{root / SWEEP}: no K-sweep run here and none in " + "{log}; train them with `mi-plateau reproduce k_sweep` "
        "or `mi-plateau sweep docs/sweeps/lead_sweep.toml`"
    )
    ref = read_reference(docs)
    build = lambda entries: build_figure3(entries, ref)  # noqa: E731
    return run_logged("figure3", docs, passes, build, missing, options.static, extra=lambda entries: {"delta": delta})
