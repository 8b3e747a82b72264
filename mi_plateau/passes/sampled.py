"""tau as the original code measured it: L_seq estimated on a few random examples.

The toolkit's tau reads L_seq computed exactly on the fixed evaluation set at every checkpoint.
The original estimated L_seq every 50 steps on 32 random groups, one example each, and took the
first step at which that estimate fell below alpha log K (SPEC section 4). This pass replays that
estimator on a run's checkpoints: it scores every example of the evaluation set once per
checkpoint on the original's 50-step grid (``metrics.example_losses``), then draws, for each of
``draws`` replays and each checkpoint, ``n_sample`` groups (uniformly, with replacement: the
original drew from all n_b >= 1000 training groups, where drawing 32 without replacement is the
same to within 2%) and one example (selector) of each, and records each replay's first crossing.

The spread of those taus is what the estimator alone adds to a run's tau: the measurement noise
in a tau the paper reports, separate from the seed-to-seed spread of the runs themselves.

Checkpoints are scored in step order and the scoring stops once every replay has crossed, so a
run is read up to a little past its tau. Each checkpoint's draws come from a generator seeded by
(seed, step): the replays do not depend on where the scoring stopped.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError

ORIGINAL_N_SAMPLE = 32  # groups per estimate, one example each
ORIGINAL_EVERY = 50  # steps between the original's evaluations


def replay_taus(steps: list[int], losses, K: int, threshold: float, n_sample: int = ORIGINAL_N_SAMPLE,
                draws: int = 1000, seed: int = 0) -> np.ndarray:
    """The first step at which each of ``draws`` replays of the estimator is below ``threshold``
    (NaN where none is). ``losses``: per checkpoint of ``steps``, the per-example L_seq of the
    evaluation set (group-major rows, K per group), or a callable giving it for a step, called
    in step order and no further than needed (the last call is the step every replay has
    crossed by)."""
    taus = np.full(draws, np.nan)
    for step, L in zip(steps, losses) if not callable(losses) else ((s, losses(s)) for s in steps):
        L = np.asarray(L, dtype=np.float64).reshape(-1, K)
        rng = np.random.default_rng([seed, step, 0x5A4])
        g = rng.integers(0, L.shape[0], size=(draws, n_sample))
        k = rng.integers(0, K, size=(draws, n_sample))
        est = L[g, k].mean(-1)
        new = np.isnan(taus) & (est < threshold)
        taus[new] = step
        if not np.isnan(taus).any():
            break
    return taus


def sampled_tau(run: str | Run, *, n_sample: int = ORIGINAL_N_SAMPLE, draws: int = 1000, every: int = ORIGINAL_EVERY,
                seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """The distribution of the run's tau under the original's estimator (module docstring) beside
    its exact tau: ``tau_exact`` (the run's, every checkpoint), ``tau_exact_grid`` (exact L_seq on
    the estimator's grid), and over the replays ``mean``, ``std``, ``q05``, ``q50``, ``q95``,
    ``min``, ``max``, ``p_none`` (the share that never crossed within the checkpoints there
    are) and ``taus`` (each replay's tau, None where none)."""
    import torch

    from ..metrics import example_losses

    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; the paper's L_seq is undefined")
    if n_sample < 1 or draws < 1 or every < 1:
        raise ValueError(f"n_sample, draws and every must be positive (got {n_sample}, {draws}, {every})")
    steps = [s for s in run.steps() if s % every == 0]
    if len(steps) < 2:
        raise RunError(f"{run.path}: fewer than two checkpoints at multiples of {every} steps; pass every= its checkpoint cadence")
    K, alpha = cfg.task.K, cfg.eval.alpha
    threshold = alpha * math.log(K)
    ev = run.eval_set()
    model = run.load_model(steps[0])
    exact: dict[int, float] = {}

    def losses(step: int) -> np.ndarray:
        model.load_state_dict(run.weights(step), strict=False)
        with torch.no_grad():
            L = example_losses(model, ev)["L_seq"]
        exact[step] = float(L.mean())
        if progress:
            print(f"\r{run.path.name}: step {step}, L_seq {exact[step]:.3f}", end="", flush=True, file=sys.stderr)
        return L

    taus = replay_taus(steps, losses, K, threshold, n_sample, draws, seed)
    if progress:
        print(file=sys.stderr)
    grid = next((s for s in sorted(exact) if exact[s] < threshold), None)
    crossed = taus[~np.isnan(taus)]
    q = np.percentile(crossed, [5, 50, 95]) if len(crossed) else [None] * 3
    stat = (lambda f: float(f(crossed)) if len(crossed) else None)
    return {"run": str(run.path), "K": K, "alpha": alpha, "threshold": threshold, "n_sample": n_sample, "draws": draws,
            "every": every, "seed": seed, "tau_exact": run.summary()["definitions"]["paper"]["tau"], "tau_exact_grid": grid,
            "mean": stat(np.mean), "std": float(np.std(crossed, ddof=1)) if len(crossed) > 1 else None,
            "q05": None if q[0] is None else float(q[0]), "q50": None if q[1] is None else float(q[1]),
            "q95": None if q[2] is None else float(q[2]), "min": stat(np.min), "max": stat(np.max),
            "p_none": float(np.isnan(taus).mean()), "checkpoints_scored": len(exact),
            "taus": [None if math.isnan(t) else int(t) for t in taus]}
