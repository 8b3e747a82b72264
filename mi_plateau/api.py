"""The Python API: the same operations as the command line, returning data instead of text."""

from __future__ import annotations

import os
from typing import Any

from .checkpoints import Run


def summary(run: str | os.PathLike | Run) -> dict[str, Any]:
    """Plateau height, tau and convergence of a run, computed from its checkpoint records.

    Keys include K, log_K, plateau_Lc, plateau_ratio, tau, tau_examples, alpha, converged,
    last_step, n_checkpoints. NaN values become None so the dict is valid JSON.
    """
    from .metrics import nan_to_none, summarize

    run = run if isinstance(run, Run) else Run(run)
    manifest = run.manifest()
    s = summarize(run.config(), [c["record"] for c in manifest["checkpoints"]])
    s["status"] = manifest.get("status")
    s["run"] = str(run.path)
    return nan_to_none(s)
