"""tau as the original code measured it: L_seq estimated on a few random examples.

The toolkit's tau reads L_seq computed exactly on the fixed evaluation set at every checkpoint.
The original estimated L_seq every 50 steps on 32 random groups, one example each, and took the
first step at which that estimate fell below alpha log K (SPEC section 4). This pass replays that
estimator on a run's checkpoints: it scores every example of the evaluation set (200 groups, all
K examples each) once per checkpoint of the original's 50-step grid (``estimator_grid``;
``metrics.example_losses``),
then draws, for each of ``draws`` replays and each checkpoint, ``n_sample`` of those groups
(uniformly, with replacement) and one example (selector) of each, and records each replay's first
crossing. The original drew from all n_b training groups without replacement; for 32 of n_b
groups that shrinks the estimate's variance by a factor (n_b - 32) / (n_b - 1): 3% at n_b =
1000, 8% at n_b = 400, which this replay leaves out.

The spread of those taus is what the estimator alone adds to a run's tau: the measurement noise
in a tau the paper reports, separate from the seed-to-seed spread of the runs themselves.

Checkpoints are scored in step order, and the scoring stops once every replay and the exact
L_seq have crossed, so a run is read up to a little past its tau. Each checkpoint's draws come
from a generator seeded by (seed, step), so a replay's tau does not depend on where the scoring
stopped. The draws depend on the seed and the step only: runs that share an evaluation set (the
same task and eval settings) see the same draws under the same seed, so their replays are paired;
pass another seed for independent ones.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError, load_state_checked

ORIGINAL_N_SAMPLE = 32  # groups per estimate, one example each
ORIGINAL_EVERY = 50  # steps between the original's evaluations


def replay_taus(
    steps: list[int],
    losses,
    K: int,
    threshold: float,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    seed: int = 0,
) -> tuple[np.ndarray, int | None]:
    """(the first step at which each of ``draws`` replays of the estimator is below
    ``threshold``, NaN where none is; the first step at which the exact mean is). ``losses``:
    per checkpoint of ``steps``, the per-example L_seq of the evaluation set (group-major rows, K
    per group), or a callable giving it for a step, called in step order and no further than
    the step by which every replay and the exact mean have crossed."""
    taus, exact = np.full(draws, np.nan), None
    for step, L in zip(steps, losses) if not callable(losses) else ((s, losses(s)) for s in steps):
        L = np.asarray(L, dtype=np.float64).reshape(-1, K)
        rng = np.random.default_rng([seed, step, 0x5A4])
        g = rng.integers(0, L.shape[0], size=(draws, n_sample))
        k = rng.integers(0, K, size=(draws, n_sample))
        est = L[g, k].mean(-1)
        taus[np.isnan(taus) & (est < threshold)] = step
        if exact is None and L.mean() < threshold:
            exact = step
        if exact is not None and not np.isnan(taus).any():
            break
    return taus, exact


def estimator_grid(steps: list[int], every: int) -> list[int]:
    """The checkpoints the estimator reads: the first, then each next one at least ``every``
    steps after the last kept. On a run checkpointed every 50 steps (every 25 through the
    transition, which may move the lattice by 25) that is a 50-step grid with an occasional
    75-step gap, the original's cadence up to that shift."""
    out: list[int] = []
    for s in steps:
        if not out or s - out[-1] >= every:
            out.append(s)
    return out


def _checked_grid(run: Run, every: int) -> list[int]:
    """The run's checkpoints on the estimator's grid (``estimator_grid``); RunError where they
    are fewer than two or too sparse (a gap over 1.5 ``every``) for an estimate every ``every``
    steps."""
    own = run.steps()
    steps = estimator_grid(own, every)
    hint = "set every (--every on the command line) to the run's checkpoint spacing"
    if len(steps) < 2:
        raise RunError(f"{run.path}: fewer than two checkpoints {every} steps apart; {hint}")
    widest = max(b - a for a, b in zip(steps, steps[1:]))
    if widest > 1.5 * every:
        raise RunError(
            f"{run.path}: too sparse for an estimate every {every} steps: the checkpoints it would read are up "
            f"to {widest} steps apart (the run's own up to {max(b - a for a, b in zip(own, own[1:]))}); {hint}"
        )
    return steps


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


def sampled_tau(
    run: str | Run,
    *,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    every: int = ORIGINAL_EVERY,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """The distribution of the run's tau under the original's estimator (module docstring)
    beside its exact tau. ``tau_recorded``: the run's tau from its checkpoint records (every
    checkpoint; L_seq over ``recorded_groups`` groups, which ``eval.seq_max_strings`` caps at
    large K); ``tau_exact_grid``: exact L_seq over all the evaluation set's groups, on the
    estimator's grid. Over the replays: ``q05``, ``q50``, ``q95``, ``max`` counting a replay that
    never crossed as later than any step (None where that is the answer), ``min``; ``mean`` and
    ``std`` of the replays that crossed; ``p_none``, the share that never crossed within the
    checkpoints there are; ``taus``, each replay's tau (None where none)."""
    import torch

    from ..metrics import example_losses

    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(
            f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; the paper's L_seq is undefined"
        )
    if n_sample < 1 or draws < 1 or every < 1:
        raise ValueError(f"n_sample, draws and every must be positive (got {n_sample}, {draws}, {every})")
    steps = _checked_grid(run, every)
    K, alpha = cfg.task.K, cfg.eval.alpha
    threshold = alpha * math.log(K)
    ev = run.eval_set()
    model = run.load_model(steps[0])
    scored: list[int] = []

    def losses(step: int) -> np.ndarray:
        load_state_checked(model, run.weights(step), run.weights_path(step))
        with torch.no_grad():
            L = example_losses(model, ev)["L_seq"]
        scored.append(step)
        if progress:
            print(f"\r{run.path.name}: step {step}, L_seq {float(L.mean()):.3f}", end="", flush=True, file=sys.stderr)
        return L

    taus, grid = replay_taus(steps, losses, K, threshold, n_sample, draws, seed)
    if progress:
        print(file=sys.stderr)
    n = cfg.eval.seq_groups(K) or len(ev.groups)
    return {
        "run": str(run.path),
        "K": K,
        "alpha": alpha,
        "threshold": threshold,
        "n_sample": n_sample,
        "draws": draws,
        "every": every,
        "seed": seed,
        "tau_recorded": run.summary()["definitions"]["paper"]["tau"],
        "recorded_groups": n,
        "eval_groups": len(ev.groups),
        "tau_exact_grid": grid,
        **replay_spread(taus),
        "checkpoints_scored": len(scored),
        "taus": [None if math.isnan(t) else int(t) for t in taus],
    }
