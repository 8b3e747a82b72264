"""The recipes behind the paper's mechanism tables: ``dissipation`` (Table 11, the gradient
dissipation Q during the transition), ``label_noise`` (Figure 2b) and ``selector_groups``
(Table 12's gradient-cancellation control). Data in, tables out, as in ``boundary``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import figures, paper
from ..summaries import tau
from ..sweeps import Sweep
from .records import NO_CURVES, Collected
from .writer import Built, Plot, Table


def table11(rows: list[dict[str, Any]], records: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per (K, lr): Q by the original's z-gap (``Q_original``: the training batch's,
    ``summaries.dissipation(gap="train")``; None where the window has not closed or the run
    was trained before the trainer kept the training batches' losses) and by ours (``Q``: the
    evaluation set's swap gap), each with its window (the first and last checkpoint summed),
    the run's clipping and checkpoint spacing, status and steps, and the paper's Q. ``records``:
    the recipe log's per-run records (``Collected.kept["records"]``), which hold the original's Q
    beside each row."""
    records = records or {}
    orig = {r["run"]: ((records.get(r["run"]) or {}).get("dissipation_original") or {}) for r in rows}
    return [_with_split(row) for row in _table11_rows(rows, orig)]


def _with_split(row: dict[str, Any]) -> dict[str, Any]:
    """Q_original split into its two factors: the steps its blocks cover (the window, the first
    block included: end - start + spacing) and the mean squared gradient norm over them (Q / (lr x
    steps)); and the window the paper's Q would need at that gradient (``paper_window_steps``)."""
    q, a, b, dt, lr = (row[k] for k in ("Q_original", "window_original_start", "window_original_end", "spacing", "lr"))
    steps = b - a + dt if None not in (a, b, dt) else None
    g2 = q / (lr * steps) if q is not None and steps else None
    paper_q = row["paper_Q"]
    need = round(paper_q / (lr * g2)) if paper_q is not None and g2 else None
    return {**row, "window_original_steps": steps, "mean_grad_sq_original": g2, "paper_window_steps": need}


def _table11_rows(rows: list[dict[str, Any]], orig: dict[str, dict]) -> list[dict[str, Any]]:
    return [
        {
            "K": r["K"],
            "lr": r["lr"],
            "clip": r.get("grad_clip"),
            "spacing": r.get("train.ckpt_every"),
            "Q_original": orig[r["run"]].get("Q"),
            "Q": r.get("dissipation_Q"),
            "paper_Q": paper.TABLE11.get((r["K"], r["lr"])),
            "window_original_start": orig[r["run"]].get("window_start"),
            "window_original_end": orig[r["run"]].get("window_end"),
            "window_start": r.get("dissipation_window_start"),
            "window_end": r.get("dissipation_window_end"),
            "tau_paper": r["tau_paper"],
            "status": r["status"],
            "steps": r["steps"],
        }
        for r in sorted(rows, key=lambda r: (r["K"], r["lr"]))
    ]


def build_dissipation(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 11: Q per K and lr beside the paper's."""
    note = (
        "Q = sum over the checkpoints from the first with a z-gap above 0.1 nats to the first above 0.9 log K "
        "(both blocks included) of lr x mean squared gradient norm before clipping x spacing. As the original "
        "ran them, the lr = 1e-3 cells are unclipped with a checkpoint every 50 steps (its K sweep), the others "
        "clipped at 1.0 (clip) with a checkpoint every 200 (spacing). "
        "Q_original: the original's z-gap, the first-token loss of the last training batch with z deranged "
        "across that batch minus the mean clean first-token training loss since the previous checkpoint; "
        "Q: ours, the evaluation set's swap gap (Lc with each selector replaced, minus Lc). None: the window "
        "has not closed, or the run was recorded before the trainer kept what that column reads. "
        "window_original_steps: the steps Q_original's blocks cover; mean_grad_sq_original: Q_original / (lr x "
        "those steps); paper_window_steps: the window the paper's Q needs at that mean squared gradient."
    )
    title = "Table 11: gradient dissipation Q during the transition"
    rows = table11(collected.rows, collected.kept.get("records"))
    return Built({"Table 11": Table("table11", rows, title, note)})


def noise_delays(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figure 2b's rows: per K and label noise p, tau (steps; the batch is fixed, so also
    examples / B) and the delay tau(p) / tau(0) at the same K; where a run has no tau, the step
    it got to (``no_escape_by``)."""
    base = {r["K"]: r["tau_paper"] for r in rows if r["label_noise"] == 0 and r["tau_paper"]}
    return [
        {
            "K": r["K"],
            "label_noise": r["label_noise"],
            "tau_paper": r["tau_paper"],
            "delay": r["tau_paper"] / base[r["K"]] if r["tau_paper"] and r["K"] in base else None,
            "no_escape_by": r["steps"] if not r["tau_paper"] and r["status"] == "finished" else None,
            "paper_delay_at_0.2": paper.LABEL_NOISE_DELAY if r["label_noise"] == 0.2 else None,
            "status": r["status"],
            "steps": r["steps"],
        }
        for r in sorted(rows, key=lambda r: (r["K"], r["label_noise"]))
    ]


def build_label_noise(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Figure 2b: tau against the label noise p per K, and the delay over p = 0."""
    note = (
        "tau: the first evaluation with clean-label L_seq < 0.5 log K (steps; batch 128 throughout, so "
        "the delay is also in tokens); delay = tau(p) / tau(0) at the same K; no_escape_by: a finished run "
        "without a tau, the step its budget ended at. The paper: a 16x delay at p = 0.2."
    )
    title = "Figure 2b: tau against fixed label noise"
    rows = noise_delays(collected.rows)
    return Built(
        {"Figure 2b": Table("label_noise", rows, title, note)},
        {"Figure 2b": Plot("label_noise", noise_figure(rows))},
    )


def noise_figure(rows: list[dict[str, Any]]):
    """Figure 2b as a picture: the delay tau(p) / tau(0) against p, one series per K; a run
    without a tau (finished or still running) drawn open at the step it got to over tau(0), a
    lower bound; the paper's 16x at p = 0.2 as a cross."""
    base = {r["K"]: r["tau_paper"] for r in rows if r["label_noise"] == 0 and r["tau_paper"]}
    pts = {
        f"K={K}": {
            "x": [r["label_noise"] for r in rs],
            "tau": [r["delay"] for r in rs],
            "reached": [r["steps"] / base[K] if r["delay"] is None and r["steps"] and K in base else None for r in rs],
            "label": [f"K={K}, p={r['label_noise']:g} ({r['status']})" for r in rs],
        }
        for K in sorted({r["K"] for r in rows})
        for rs in [[r for r in rows if r["K"] == K]]
    }
    fig = figures.tau_power_law(
        pts,
        {},
        x_label="label noise p (a fixed share of the training examples relabelled once)",
        x_symbol="p",
        y_label="delay: tau(p) / tau(0) at the same K",
        reference={"x": [0.2], "tau": [paper.LABEL_NOISE_DELAY]},
        log_x=False,
        title="Figure 2b: the delay label noise adds<br><sup>cross: the paper's 16x at p = 0.2; open triangle: "
        "no tau yet, drawn at the step reached over tau(0) (a lower bound)</sup>",
    )
    fig.update_xaxes(dtick=0.05, range=[-0.01, max([0.2, *(r["label_noise"] for r in rows)]) + 0.01])
    return fig


HALF_NAT = 0.5  # the duration's end: L_seq below this many nats (absolute)


def cancellation_runs(rows: list[dict[str, Any]], curves: dict[str, dict]) -> list[dict[str, Any]]:
    """Per run of the selector-groups sweep: G, seed, the first step with L_seq below log K
    (``t_below_log_K``), the first below 0.5 nats (``t_half_nat``) and the duration between them
    (None until both are reached)."""
    out = []
    for r in rows:
        c = curves.get(r["run"])
        lo = tau(c["step"], c["L_seq"], math.log(r["K"]), alpha=1.0) if c else None  # first below log K
        hi = tau(c["step"], c["L_seq"], 1.0, alpha=HALF_NAT) if c else None  # first below 0.5 nats (x 1 nat)
        out.append(
            {
                "run": r["run"],
                "G": r["task.selector_groups"],
                "seed": r["seed"],
                "n_b": r["n_b"],
                "t_below_log_K": lo,
                "t_half_nat": hi,
                "duration": hi - lo if lo is not None and hi is not None else None,
                "status": r["status"],
                "steps": r["steps"],
            }
        )
    return sorted(out, key=lambda r: (r["G"], r["seed"]))


def cancellation_beta(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per G: its runs (points), how many started, finished with a duration, and finished without
    one (``censored``: no 0.5 nats by the budget), the mean and std (ddof 0) of the durations, and
    ``in_beta``: every started run finished with a duration (a G with a run still going, a
    censored one, or one recorded without its curves would bias its mean or hide a seed). beta:
    the least-squares slope of log(mean duration + 1) against log(n_b / G) over the G in beta
    (None below two), beside the paper's."""
    per_g = []
    for G in sorted({r["G"] for r in runs}):
        mine = [r for r in runs if r["G"] == G]
        started = [r for r in mine if r["status"] in ("finished", "running", NO_CURVES)]  # no curves: unknown
        d = [r["duration"] for r in started if r["status"] == "finished" and r["duration"] is not None]
        censored = sum(r["status"] == "finished" and r["duration"] is None for r in started)
        per_g.append(
            {
                "G": G,
                "n_b_over_G": mine[0]["n_b"] / G,
                "runs": len(mine),
                "started": len(started),
                "with_duration": len(d),
                "censored": censored,
                "mean_duration": float(np.mean(d)) if d else None,
                "std_duration": float(np.std(d)) if d else None,
                "in_beta": bool(d) and len(d) == len(started),
            }
        )
    pts = [(math.log(g["n_b_over_G"]), math.log(g["mean_duration"] + 1)) for g in per_g if g["in_beta"]]
    beta = float(np.polyfit(*zip(*pts), 1)[0]) if len({x for x, _ in pts}) >= 2 else None
    n_runs = sum(g["with_duration"] for g in per_g if g["in_beta"])
    fit = [{"beta": beta, "n_G": len(pts), "n_runs": n_runs, "paper_beta": paper.CANCELLATION_BETA}]
    return per_g, fit


def build_selector_groups(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 12's gradient cancellation: the plateau's duration per run and per number of selector
    sets G, and beta, the slope of log(mean duration + 1) against log(n_b / G)."""
    runs = cancellation_runs(collected.rows, collected.curves)
    per_g, fit = cancellation_beta(runs)
    note = (
        "duration = the first checkpoint with L_seq < 0.5 nats minus the first with L_seq < log K (steps; every "
        "group scored at every checkpoint); G selector sets shared by the groups (group g uses set g mod G); "
        "beta = least-squares slope of log(mean duration + 1) against log(n_b / G) over the G whose started runs "
        "all have a duration (in_beta)."
    )
    return Built(
        {
            "Table 12 cancellation runs": Table("table12_cancellation_runs", runs, "Table 12: durations per run", note),
            "Table 12 cancellation": Table("table12_cancellation", per_g, "Table 12: durations per G", note),
            "Table 12 beta": Table("table12_beta", fit, "Table 12: gradient cancellation, beta", note),
        }
    )
