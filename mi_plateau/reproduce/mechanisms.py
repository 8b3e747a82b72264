"""The recipes behind the paper's mechanism tables: ``dissipation`` (Table 11, the gradient
dissipation Q during the transition). Data in, tables out, as in ``boundary``."""

from __future__ import annotations

from typing import Any

from .. import paper
from ..sweeps import Sweep
from .records import Collected
from .writer import Built, Table


def table11(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (K, lr): our Q (``summaries.dissipation``, None where the window has not
    closed), the run's status and steps, and the paper's Q."""
    return [
        {
            "K": r["K"],
            "lr": r["lr"],
            "Q": r.get("dissipation_Q"),
            "paper_Q": paper.TABLE11.get((r["K"], r["lr"])),
            "tau_paper": r["tau_paper"],
            "status": r["status"],
            "steps": r["steps"],
        }
        for r in sorted(rows, key=lambda r: (r["K"], r["lr"]))
    ]


def build_dissipation(collected: Collected, sweep: Sweep, n_boot: int, seed: int) -> Built:
    """Table 11: Q per K and lr beside the paper's."""
    note = (
        "Q = sum over the checkpoints from the first with a z-gap (swap gap) above 0.1 nats to the first "
        "above 0.9 log K of lr x mean squared gradient norm before clipping x spacing; clipping 1.0. "
        "None: the window has not closed (or the run was recorded before the squared norm was kept)."
    )
    title = "Table 11: gradient dissipation Q during the transition"
    return Built({"Table 11": Table("table11", table11(collected.rows), title, note)})


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
    return Built({"Figure 2b": Table("label_noise", noise_delays(collected.rows), title, note)})
