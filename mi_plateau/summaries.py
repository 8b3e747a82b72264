"""Run-level summaries from checkpoint records: tau, plateau height, convergence (SPEC section 4).

Pure Python plus numpy: ``mi-plateau summary`` never imports torch or transformer_lens.
Records store NaN as JSON null; ``_num`` maps both to NaN so comparisons are simply false.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .config import RunConfig


def _num(v: Any) -> float:
    """A metric value as float; None (JSON null) and non-numbers become NaN."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")



def tau(steps: Sequence[int], Lc: Sequence[float], log_K: float, alpha: float = 0.5) -> int | None:
    """Waiting time: the first evaluated step at which Lc < alpha * log K (None if never)."""
    for s, v in zip(steps, Lc):
        if _num(v) < alpha * log_K:
            return int(s)
    return None


def plateau_height(steps: Sequence[int], Lc: Sequence[float], log_K: float, start: int) -> float:
    """Median Lc over the plateau window.

    The window runs from ``start`` (after the first few hundred steps) up to, not including,
    the first step at which Lc < 0.9 log K (the onset of the transition). If the transition
    begins before ``start`` the window is every evaluated step before the onset but step 0.
    """
    steps, Lc = np.asarray(steps), np.asarray([_num(v) for v in Lc], dtype=float)
    below = np.nonzero((Lc < 0.9 * log_K) & (steps > 0))[0]
    onset = steps[below[0]] if below.size else steps[-1] + 1
    window = (steps >= start) & (steps < onset)
    if not window.any():
        window = (steps > 0) & (steps < onset)
    if not window.any():
        return float("nan")
    return float(np.median(Lc[window]))


def summarize(cfg: RunConfig, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of one run from its checkpoint records (what ``mi-plateau summary`` prints)."""
    steps = [r["step"] for r in records]
    Lc = [_num(r["metrics"].get("Lc")) for r in records]
    log_K = cfg.task.log_K
    t = tau(steps, Lc, log_K, cfg.eval.alpha)
    ph = plateau_height(steps, Lc, log_K, cfg.eval.plateau_start) if steps else float("nan")
    conv = next((s for s, v in zip(steps, Lc) if v < cfg.train.converge_Lc), None)
    gap_step = next((r["step"] for r in records if _num(r["metrics"].get("swap_gap")) > 0.1), None)
    return {
        "K": cfg.task.K,
        "n_b": cfg.task.n_b,
        "D": cfg.task.D,
        "direction": cfg.task.direction,
        "log_K": log_K,
        "plateau_Lc": ph,
        "plateau_ratio": ph / log_K if log_K > 0 else float("nan"),
        "alpha": cfg.eval.alpha,
        "tau": t,
        "tau_examples": None if t is None else t * cfg.train.batch_size,
        "converged": conv is not None,
        "converged_step": conv,
        "swap_gap_0.1_step": gap_step,
        "last_step": steps[-1] if steps else None,
        "final_Lc": Lc[-1] if Lc else None,
        "n_checkpoints": len(records),
    }


def nan_to_none(x: Any) -> Any:
    """JSON has no NaN: map float NaN/inf to None, recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: nan_to_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [nan_to_none(v) for v in x]
    return x
