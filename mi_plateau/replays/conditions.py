"""One Table 4 condition as the original's 32-example estimator would have read its seeds: the
seeds' replayed widths (``replays.sampled.sampled_width``) paired replay by replay."""

from __future__ import annotations

from typing import Any

import numpy as np


def replay_spread(taus: np.ndarray) -> dict[str, Any]:
    """The spread of the replays' taus (steps; NaN where a replay never crossed): ``mean`` and
    ``std`` of the replays that crossed; ``q05``, ``q50``, ``q95``, ``max`` (the lower
    percentiles) counting a replay that never crossed as later than any step (None where that is
    the answer); ``min``; ``p_none``, the share that never crossed."""
    crossed = taus[~np.isnan(taus)]
    late = np.where(np.isnan(taus), np.inf, taus)  # never crossed: later than any step
    q = [float(v) if np.isfinite(v) else None for v in np.percentile(late, [5, 50, 95, 100], method="lower")]
    return {
        "mean": float(crossed.mean()) if len(crossed) else None,
        "std": float(crossed.std(ddof=1)) if len(crossed) > 1 else None,
        "q05": q[0],
        "q50": q[1],
        "q95": q[2],
        "max": q[3],
        "min": float(crossed.min()) if len(crossed) else None,
        "p_none": float(np.isnan(taus).mean()),
    }


def _mean_std_cv(xs: list[float]) -> tuple[float, float, float]:
    """Mean, standard deviation with ddof 0 (Table 4's) and CV = std / mean (NaN for a zero mean)."""
    a = np.asarray(xs, dtype=np.float64)
    mean, std = float(a.mean()), float(a.std())
    return mean, std, std / mean if mean else float("nan")


SAME_SETTINGS = ("draws", "n_sample", "every", "seed", "hi", "lo")  # what paired replays must share


def condition_spread(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One Table 4 condition as the original's estimator would have read its seeds: for each
    replay index, the mean, std (ddof 0) and CV of the seeds' widths in that replay (``results``:
    ``sampled_width`` of each seed with the same settings, so replay d of every seed used the
    same draws), and their spread over the replays (``replay_spread``), beside the exact widths'
    mean, std and CV, read on every checkpoint (``exact``) and on the estimator's grid
    (``exact_grid``). A replay where a seed never ended is left out of the spread
    (``replays_with_every_seed`` counts the rest); an exact mean needs every seed's width."""
    if len(results) < 2:
        raise ValueError("a condition needs two or more sampled_width results")
    for key in SAME_SETTINGS:
        if len({r[key] for r in results}) != 1:
            raise ValueError(f"the results differ in {key} ({sorted({r[key] for r in results})}): replay them alike")
    per = [[r["widths"][d] for r in results] for d in range(results[0]["draws"])]
    stats = np.array([_mean_std_cv(ws) for ws in per if None not in ws]).reshape(-1, 3)

    def exact(key: str) -> dict[str, float] | None:
        ws = [r[key][2] for r in results]
        return None if None in ws else dict(zip(("mean", "std", "cv"), _mean_std_cv(ws)))

    return {
        "runs": [r["run"] for r in results],
        **{k: results[0][k] for k in SAME_SETTINGS},
        "exact_widths": [r["width_recorded"][2] for r in results],
        "exact": exact("width_recorded"),
        "exact_grid_widths": [r["width_exact_grid"][2] for r in results],
        "exact_grid": exact("width_exact_grid"),
        "replays_with_every_seed": len(stats),
        **{k: replay_spread(stats[:, i]) if len(stats) else None for i, k in enumerate(("mean", "std", "cv"))},
    }
