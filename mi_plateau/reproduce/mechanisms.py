"""The recipes behind the paper's mechanism tables: ``dissipation`` (Table 11, the gradient
dissipation Q during the transition). Data in, tables out, as in ``boundary``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import paper
from ..sweeps import Sweep
from ..tabular import write_table
from .records import collect


def table11(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (K, lr): our Q (``summaries.dissipation``, None where the window has not
    closed), the run's status and steps, and the paper's Q."""
    return [{"K": r["K"], "lr": r["lr"], "Q": r.get("dissipation_Q"), "paper_Q": paper.TABLE11.get((r["K"], r["lr"])),
             "tau_paper": r["tau_paper"], "status": r["status"], "steps": r["steps"]}
            for r in sorted(rows, key=lambda r: (r["K"], r["lr"]))]


def build_dissipation(sweep: Sweep, root: Path, docs: Path, n_boot: int, seed: int) -> dict[str, Any]:
    """Table 11: Q per K and lr beside the paper's."""
    t11 = table11(collect(sweep, root, docs)[0])
    written = write_table(docs / "table11", t11, title="Table 11: gradient dissipation Q during the transition",
                          note="Q = sum over the checkpoints from the first with a z-gap (swap gap) above 0.1 nats to the first "
                               "above 0.9 log K of lr x mean squared gradient norm before clipping x spacing; clipping 1.0. "
                               "None: the window has not closed (or the run was recorded before the squared norm was kept).")
    return {"tables": {"Table 11": t11}, "figures": {}, "written": written}
