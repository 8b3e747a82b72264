"""``reproduce figure3``: Figure 3 and the abstract's "~50% lead" as the paper computed them, over
the K sweep's runs (``<root>/paper_k_sweep/K*_seed<seed>``), or, for a K where it has one, the
lead sweep's (``<root>/paper_lead_sweep/``, docs/sweeps/lead_sweep.toml: the same runs carried on
until the first-token loss has left its plateau, so that both onsets exist).

Per run: the cheap passes at every checkpoint (``analyze_run(heavy=False)``; cached under
``analyses/<run>/passes/``, shared with ``mi-plateau analyze``) give Lc and the z-shuffle gap,
``passes.lead`` the onsets and the lead; for K in ``DESCENT_KS`` ``passes.descent`` reads the
displacement cosine from the weights. Nothing is trained: the runs are the sweeps'.

Writes ``figure3_lead`` (one row per K), ``figure3_lead_summary`` (the mean lead fraction over the
Ks with a positive lead, its std with ddof 0, the exponent of lead ~ K^s; both z thresholds),
``figure3_descent`` (the cosine per window for K = 10, 20, 36), the figures, and the log
``figure3_log.json`` that keeps every run's series, so the tables rebuild where the run folders
are gone (a run here replaces its logged entry).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from .. import paper
from ..checkpoints import Run, RunError
from ..frames import records
from ..sweeps import status
from .writer import Built, Plot, Table, run_logged

LOG = "figure3_log.json"
SWEEP = "paper_k_sweep"
LEAD_SWEEP = "paper_lead_sweep"  # docs/sweeps/lead_sweep.toml: the K sweep run to the first-token loss onset
DESCENT_KS = (10, 20, 36)
WINDOWS = ("plateau", "pre", "post")
# the descent table's paper column: paper.DESCENT_COS (plateau, pre, post) in words
PAPER_COS = (
    f"~{paper.DESCENT_COS[0]:g} on the plateau, ~{paper.DESCENT_COS[1]:g} around tau "
    "(the original's outputs, as we read them)"
)


def sweep_runs(root: Path, seed: int = 0) -> list[Path]:
    """Per K, the run folder of ``seed`` that has started under ``root``: the lead sweep's
    (``LEAD_SWEEP``: the K sweep's runs carried on past the first-token loss onset) where it has
    one, else the K sweep's; in K order."""
    pat = re.compile(rf"K(\d+)_seed{seed}$")
    found: dict[int, Path] = {}
    for name in (SWEEP, LEAD_SWEEP):  # the lead sweep's run of a K replaces the K sweep's
        folder = Path(root) / name
        for p in folder.iterdir() if folder.is_dir() else ():
            if pat.match(p.name) and status(p) in ("finished", "running"):
                found[int(pat.match(p.name).group(1))] = p
    return [found[k] for k in sorted(found)]


def run_entry(run: Run, analyses: Path, delta: int, device: str, progress: bool) -> dict[str, Any]:
    """One run's part of the log: its K, step count and status, Figure 3(a)'s series and onsets,
    and (K in ``DESCENT_KS``) Figure 3(b)'s displacement rows and windows."""
    from ..passes.analyze import PassConfig, analyze_run
    from ..passes.descent import coherent_descent, window_tau, windows
    from ..passes.lead import curve_rows, z_onsets

    cfg = run.config()
    K = cfg.task.K
    ck = analyze_run(run, analyses / run.name, PassConfig(), progress=progress, device=device, heavy=False)
    ck = records(ck["checkpoint"])
    entry: dict[str, Any] = {
        "run": run.name,
        "K": K,
        "steps": run.steps()[-1],
        "status": status(run.path),
        "a": [{**r, "Lc": c["Lc"], "shuffle_gap": c["shuffle_gap"]} for r, c in zip(curve_rows(ck, K), ck)],
        "onsets": z_onsets(ck, K),
    }
    if K in DESCENT_KS:
        try:
            b = coherent_descent(run, delta)
            tau, source = window_tau(b)
            entry["b"] = records(b)
            entry["windows"] = {**windows(b, tau), "tau_source": source}
        except RunError as e:
            entry["b_error"] = str(e)
    return entry


def lead_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """``figure3_lead``: one row per run, by K."""
    from ..passes.lead import GAPS

    # one column order, fresh or read back from the log (whose JSON keys are sorted)
    keys = ["loss_onset"] + [f"{k}_{g}" for g in GAPS for k in ("z_onset", "lead", "lead_frac")]
    return [
        {"K": e["K"], "run": e["run"], "status": e["status"], "steps": e["steps"], **{k: e["onsets"][k] for k in keys}}
        for e in sorted(entries.values(), key=lambda e: e["K"])
    ]


def summary_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """``figure3_lead_summary``: the abstract's lead at both z thresholds, beside the paper's."""
    from ..passes.lead import GAPS, sweep_lead

    out = []
    for g in GAPS:
        s = sweep_lead([e["onsets"] for e in entries.values()], g)
        s["Ks_positive"] = ", ".join(str(k) for k in sorted(s["Ks_positive"]))  # one order, fresh or from the log
        out.append({**s, "paper_mean_lead_frac": paper.LEAD_FRACTION if g == GAPS[0] else None})
    return out


def descent_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """``figure3_descent``: per K of ``DESCENT_KS`` that is here, the mean cosine per window."""
    rows = []
    for e in sorted(entries.values(), key=lambda e: e["K"]):
        if e["K"] not in DESCENT_KS:
            continue
        got = e.get("windows") or {}
        w = {k: got.get(k) for k in ("tau", "tau_source", *(f"{p}_{n}" for n in WINDOWS for p in ("cos", "n")))}
        rows.append(
            {
                "K": e["K"],
                "run": e["run"],
                "status": e["status"],
                "grid_end": e["b"][-1]["step"] if e.get("b") else None,
                **w,
                "paper": PAPER_COS,
                "error": e.get("b_error"),
            }
        )
    return rows


def build_figure3(entries: dict[str, dict]) -> Built:
    """The tables and the two figures of ``figure3`` from the log's entries."""
    from ..figures import figure3_paper

    lead_note = (
        "Loss onset: first checkpoint with Lc < 0.9 log K; z onset: first with the z-shuffle gap (Lc with the "
        "selectors deranged across the evaluation examples, minus Lc) > 0.1 nats (0.05: the sensitive variant); "
        "lead = loss onset - z onset; lead fraction = lead / loss onset. "
        "Regenerate with `mi-plateau reproduce figure3`."
    )
    a = {f"K={e['K']}": {"a": e["a"], "onsets": e["onsets"]} for e in sorted(entries.values(), key=lambda e: e["K"])}
    b = {
        f"K={e['K']}": {"b": e.get("b") or [], "windows": e.get("windows") or {}}
        for e in sorted(entries.values(), key=lambda e: e["K"])
        if e["K"] in DESCENT_KS
    }
    return Built(
        {
            "Figure 3(a): onsets and lead per K": Table("figure3_lead", lead_rows(entries), "Figure 3(a)", lead_note),
            "the ~50% lead": Table(
                "figure3_lead_summary",
                summary_rows(entries),
                "The abstract's lead: mean lead fraction over the Ks with a positive lead (std ddof 0), lead ~ K^s",
                lead_note,
            ),
            "Figure 3(b): displacement cosine per window": Table(
                "figure3_descent",
                descent_rows(entries),
                "Figure 3(b): cosine of consecutive 200-step weight displacements, mean per window",
                "Windows against tau: plateau t < tau/2, pre tau/2 <= t < tau, post t >= tau. tau_source: the "
                "first-token tau (Lc < 0.5 log K, the paper's), or the L_seq tau where the run stopped before the "
                "first-token one (the K sweep stops at 1.2 x the L_seq tau); grid_end: the last step of the Delta "
                "grid the run's checkpoints hold.",
            ),
        },
        {
            "Figure 3(a)": Plot("figure3a", figure3_paper(a, "a")),
            "Figure 3(b)": Plot("figure3b", figure3_paper(b, "b")),
        },
    )


def run_figure3_recipe(
    root: str | Path = "checkpoints",
    docs: str | Path = "docs/reproduction",
    analyses: str | Path = "analyses",
    *,
    delta: int = 200,
    device: str = "auto",
    progress: bool = True,
    static: bool | None = None,
) -> dict[str, Any]:
    """Read the K sweep's runs here (their entries replace the log's), build, write the tables,
    the figures and the log; returns the log without the series."""
    root, analyses = Path(root), Path(analyses)

    def fresh() -> dict[str, dict]:
        out = {}
        for p in sweep_runs(root):
            if progress:
                print(f"figure3 {p.name}: passes and displacements", file=sys.stderr)
            out[p.name] = run_entry(Run(p), analyses, delta, device, progress)
        return out

    missing = (
        f"{root / SWEEP}: no K-sweep run here and none in " + "{log}; train them with `mi-plateau reproduce k_sweep` "
        "or `mi-plateau sweep docs/sweeps/lead_sweep.toml`"
    )
    return run_logged("figure3", docs, fresh, build_figure3, missing, static, delta=delta)
