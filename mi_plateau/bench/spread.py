"""How the paper family's L_seq spreads over the evaluation set, checkpoint by checkpoint: what
decides how many groups the live evaluation (``eval.live_groups``) needs.

Per checkpoint of a run, from every row of the evaluation set (``metrics.example_losses``):

- ``sd_row``, ``sd_group``: the standard deviation of L_seq over rows, and over the groups' means;
- ``design_effect`` = K sd_group^2 / sd_row^2: the variance of a mean over n whole groups against
  that over the same number of rows (n K) drawn one by one. Below 1, scoring whole groups (the
  live unit) is the better sample for the strings it costs; about 1, the two are equal;
- ``cv_factor_row``, ``cv_factor_group``: Var(L_seq - Lc) / Var(L_seq) over rows and over group
  means. The first-token loss Lc is known on every row at every checkpoint, so a difference
  estimator (mean Lc over all rows plus the subset's mean of L_seq - Lc) would cut the live
  variance by this factor;
- ``se_groups``, ``se_rows``: the standard error the live subset reports (in expectation,
  of its square) with ``subset`` whole groups, and with ``subset`` groups of ``rows`` seeded rows
  each (two-stage sampling, Cochran's E[s_b^2] = S_1^2 + (1 - m/K) S_2^2 / m
  with S_1 the spread of the true group means and S_2 the mean within-group spread, no
  finite-population factor). Settlement scores the full set where 4 of them reach from L_seq
  to a threshold a question reads.

``mi-plateau estimator-spread RUN [--every N] [--subset n] [--rows m] [--out FILE]`` writes the
rows and a summary as JSON (with the command, the commit and the date).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoints import Run
from ..metrics.evaluation import example_losses


def spread_row(seq: np.ndarray, lc: np.ndarray, K: int, subset: int = 20, rows: int = 10) -> dict[str, float]:
    """The spread statistics of one checkpoint from its rows' L_seq and Lc (group-major, K rows
    per group); ``subset`` groups and ``rows`` rows of each for the first stage's standard errors."""
    d = seq - lc
    G, m = len(seq) // K, min(rows, K)
    within = float(np.var(seq.reshape(-1, K), axis=1, ddof=1).mean()) if K > 1 else 0.0

    def var(x: np.ndarray) -> float:
        return float(np.var(x, ddof=1))

    def groups(x: np.ndarray) -> np.ndarray:
        return x.reshape(-1, K).mean(axis=1)

    sd_row, sd_group = var(seq) ** 0.5, var(groups(seq)) ** 0.5
    return {
        "L_seq": float(seq.mean()),
        "Lc": float(lc.mean()),
        "sd_row": sd_row,
        "sd_group": sd_group,
        "design_effect": K * sd_group**2 / sd_row**2,
        "cv_factor_row": var(d) / var(seq),
        "cv_factor_group": var(groups(d)) / var(groups(seq)),
        "se_groups": (max(0.0, 1 - subset / G) * sd_group**2 / subset) ** 0.5,
        "se_rows": ((sd_group**2 + (1 - m / K) * within / m) / subset) ** 0.5,
    }


def run_spread(path: str | Path, every: int = 1, subset: int = 20, rows: int = 10) -> dict[str, Any]:
    """``spread_row`` at every ``every``-th checkpoint of the run, and the medians over them.
    ValueError for a count below 1."""
    import torch

    if min(every, subset, rows) < 1:
        raise ValueError(f"every, subset and rows must be at least 1 (got {every}, {subset}, {rows})")
    run = Run(path)
    K, ev = run.config().task.K, run.eval_set()
    out = []
    with torch.no_grad():
        for step in run.steps()[::every]:
            e = example_losses(run.load_model(step), ev)
            out.append({"step": step, **spread_row(e["L_seq"], e["Lc"], K, subset, rows)})
    keys = ("design_effect", "cv_factor_row", "cv_factor_group")
    return {
        "run": str(path),
        "K": K,
        "subset": subset,
        "seq_rows": min(rows, K),
        "rows": out,
        "median": {k: float(np.median([r[k] for r in out])) for k in keys},
    }
