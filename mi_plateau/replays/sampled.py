"""tau as the original code measured it: L_seq estimated on a few random examples.

The toolkit's tau reads L_seq computed exactly on the fixed evaluation set at every checkpoint.
The original estimated L_seq every 50 steps on 32 random groups, one example each, and took the
first step at which that estimate fell below alpha log K (docs/analyses.md). This pass replays that
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

``sampled_width`` reads the same draws by the transition width's rule (Tables 4 and 8 and the
learning-rate sweep; ``summaries.transition_width``): each replay's t_end is its first estimate
below 0.05 log K and its t_start its last estimate above 0.95 log K before that. A noisy estimate
dips below the bottom line before the mean does and can sit above the top line after the mean
has left it, so the estimator moves both ends, and the width with them.

Checkpoints are scored in step order, and the scoring stops once every replay and the exact
L_seq have crossed, so a run is read up to a little past its tau. Each checkpoint's draws come
from a generator seeded by (seed, step), so a replay's tau does not depend on where the scoring
stopped. The draws depend on the seed and the step only: runs that share an evaluation set (the
same task and eval settings) see the same draws under the same seed, so their replays are paired;
pass another seed for independent ones.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError
from ..config import parse_json
from ..settle import run_summary
from .conditions import condition_spread, replay_spread
from .example_losses import ExampleLosses, replay_scorer

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
    means: list | None = None,
) -> tuple[np.ndarray, int | None]:
    """(the first step at which each of ``draws`` replays of the estimator is below
    ``threshold``, NaN where none is; the first step at which the exact mean is). ``losses``:
    per checkpoint of ``steps``, the per-example L_seq of the evaluation set (group-major rows, K
    per group), or a callable giving it for a step, called in step order and no further than
    the step by which every replay and the exact mean have crossed. ``means``: a list that gets
    (step, the exact mean) at each step read."""
    taus, exact = np.full(draws, np.nan), None
    for step, L in _scored(steps, losses):
        L = np.asarray(L, dtype=np.float64).reshape(-1, K)
        mean = float(L.mean())
        if means is not None:
            means.append((int(step), mean))
        est = estimates(L, step, n_sample, draws, seed)
        taus[np.isnan(taus) & (est < threshold)] = step
        if exact is None and mean < threshold:
            exact = step
        if exact is not None and not np.isnan(taus).any():
            break
    return taus, exact


def _scored(steps: list[int], losses):
    """(step, per-example losses) in step order: ``losses`` a sequence beside ``steps`` or a
    callable giving a step's, called only as far as the caller reads."""
    return zip(steps, losses) if not callable(losses) else ((s, losses(s)) for s in steps)


def estimates(L: np.ndarray, step: int, n_sample: int, draws: int, seed: int) -> np.ndarray:
    """``draws`` estimates of the mean of ``L`` (groups x K per-example losses) at ``step``: each
    the mean over ``n_sample`` groups drawn with replacement, one example of each. The generator
    is seeded by (seed, step) only, so the tau and the width replays read the same draws."""
    K = L.shape[1]
    rng = np.random.default_rng([seed, step, 0x5A4])
    if n_sample > L.shape[0]:
        raise ValueError(
            f"--n-sample {n_sample}: more groups than the run's evaluation set holds ({L.shape[0]}); the original: 32"
        )
    g = rng.integers(0, L.shape[0], size=(draws, n_sample))
    k = rng.integers(0, K, size=(draws, n_sample))
    return L[g, k].mean(-1)


def replay_widths(
    steps: list[int],
    losses,
    K: int,
    hi: float,
    lo: float,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, tuple[int | None, int | None]]:
    """The transition width (``summaries.transition_width``, thresholds ``hi`` and ``lo`` in
    nats) under the estimator: (each replay's t_start, each replay's t_end, NaN where it never
    fell below ``lo``; the exact mean's (t_start, t_end) on the same steps). A replay's t_end is
    its first estimate below ``lo``, its t_start its last estimate above ``hi`` before that (0 if
    none). ``losses`` as in ``replay_taus``; read no further than the step by which every replay
    and the exact mean are below ``lo``."""
    last_hi, t_start, t_end = np.zeros(draws), np.full(draws, np.nan), np.full(draws, np.nan)
    exact_hi, exact = 0, None
    for step, L in _scored(steps, losses):
        L = np.asarray(L, dtype=np.float64).reshape(-1, K)
        est, open_ = estimates(L, step, n_sample, draws, seed), np.isnan(t_end)
        ends = open_ & (est < lo)
        t_start[ends], t_end[ends] = last_hi[ends], step
        last_hi[open_ & (est > hi)] = step
        if exact is None:
            if L.mean() < lo:
                exact = (exact_hi, step)
            elif L.mean() > hi:
                exact_hi = step
        if exact is not None and not np.isnan(t_end).any():
            break
    return t_start, t_end, exact or (None, None)


def estimator_grid(steps: list[int], every: int) -> list[int]:
    """The checkpoints the estimator reads: for each multiple of ``every`` (the original
    evaluated at the steps its spacing divides), the run's checkpoint at it, or else its first
    checkpoint after it and before the next multiple (none where the run has none there). A run
    checkpointed every 50 steps, and every 25 through the transition, gives the 50-step lattice
    itself; a stretch where the 25-step spacing left it is read 25 steps late."""
    have = sorted(steps)
    out: list[int] = []
    i = 0
    for m in range(have[0] - have[0] % every, have[-1] + 1, every) if have else ():
        while have[i] < m:
            i += 1
        if have[i] < m + every and (not out or have[i] != out[-1]):
            out.append(have[i])
    return out


_SPACING_HINT = "set every (--every on the command line) to the run's checkpoint spacing"


def _grid_of(run: Run, every: int) -> list[int]:
    """The run's checkpoints on the estimator's grid (``estimator_grid``); RunError where they
    are fewer than two."""
    steps = estimator_grid(run.steps(), every)
    if len(steps) < 2:
        raise RunError(f"{run.path}: fewer than two checkpoints {every} steps apart; {_SPACING_HINT}")
    return steps


def _checked_grid(run: Run, every: int) -> list[int]:
    """``_grid_of``, and RunError where it is too sparse (a gap over 1.5 ``every``) for an
    estimate every ``every`` steps."""
    own, steps = run.steps(), _grid_of(run, every)
    widest = max(b - a for a, b in zip(steps, steps[1:]))
    if widest > 1.5 * every:
        raise RunError(
            f"{run.path}: too sparse for an estimate every {every} steps: the checkpoints it would read are up "
            f"to {widest} steps apart (the run's own up to {max(b - a for a, b in zip(own, own[1:]))}); {_SPACING_HINT}"
        )
    return steps


def sampled_tau(
    run: str | os.PathLike | Run,
    *,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    every: int = ORIGINAL_EVERY,
    seed: int = 0,
    progress: bool = False,
    shared: ExampleLosses | None = None,
) -> dict[str, Any]:
    """The distribution of the run's tau under the original's estimator (module docstring)
    beside its exact tau. ``tau_recorded``: the run's tau from its checkpoint records (every
    checkpoint, settled; L_seq live over ``recorded_groups`` groups, ``eval.live_groups``);
    ``tau_exact_grid``: exact L_seq over all the evaluation set's groups, on the
    estimator's grid. Over the replays: ``q05``, ``q50``, ``q95``, ``max`` counting a replay that
    never crossed as later than any step (None where that is the answer), ``min``; ``mean`` and
    ``std`` of the replays that crossed; ``p_none``, the share that never crossed within the
    checkpoints there are (up to ``last_step_read``, the grid's last step: a run still training
    has more checkpoints later); ``taus``, each replay's tau (None where none); ``exact_means``,
    (step, exact L_seq) at each step read (nats). ``shared``: an
    ``ExampleLosses`` of this run to score through (and keep the scores for another replay)."""
    run = _checked_run(run, n_sample, draws, every)
    cfg = run.config()
    steps = _checked_grid(run, every)
    K, alpha = cfg.task.K, cfg.eval.alpha
    threshold = alpha * math.log(K)
    losses, scored, ev = replay_scorer(run, shared, progress)
    means: list[tuple[int, float]] = []
    taus, grid = replay_taus(steps, losses, K, threshold, n_sample, draws, seed, means)
    if progress:
        print(file=sys.stderr)
    n = min(cfg.eval.live_groups or len(ev.groups), len(ev.groups))
    return {
        "run": str(run.path),
        "K": K,
        "alpha": alpha,
        "threshold": threshold,
        "n_sample": n_sample,
        "draws": draws,
        "every": every,
        "seed": seed,
        "tau_recorded": run_summary(run)["definitions"]["paper"]["tau"],
        "recorded_groups": n,
        "eval_groups": len(ev.groups),
        "tau_exact_grid": grid,
        **replay_spread(taus),
        "checkpoints_scored": len(scored),
        "last_step_read": int(steps[-1]),
        "taus": [None if math.isnan(t) else int(t) for t in taus],
        "exact_means": [list(m) for m in means],
    }


def _checked_run(run: str | os.PathLike | Run, n_sample: int, draws: int, every: int) -> Run:
    """The run, with an L_seq to estimate and positive replay settings (else a one-line error)."""
    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(
            f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; the paper's L_seq is undefined"
        )
    if n_sample < 1 or draws < 1 or every < 1:
        raise ValueError(f"n_sample, draws and every must be positive (got {n_sample}, {draws}, {every})")
    return run


def width_grid(run: Run, every: int) -> tuple[list[int], int]:
    """The checkpoints the width replay reads (``estimator_grid``) and the step from which they
    are dense enough for an estimate every ``every`` steps (no gap over 1.5 ``every``). A run
    whose spacing widened on a quiet plateau (``train.ckpt_every_max``) is sparse before its
    escape, where every estimate sits near log K; RunError where the grid is not dense from
    the last recorded evaluation above the width's top threshold before the recorded L_seq
    first fell below it, or the run never fell below it."""
    cfg, recs = run.config(), run.records()
    steps = _grid_of(run, every)
    top = cfg.eval.width_hi * cfg.task.log_K
    seq = [(r["step"], r["metrics"].get("L_seq")) for r in recs]
    below = next((i for i, (_, v) in enumerate(seq) if v is not None and v < top), None)
    if below is None:
        raise RunError(f"{run.path}: L_seq never fell below {cfg.eval.width_hi:g} log K; it has no width to replay")
    before = [s for s, v in seq[:below] if v is not None and v > top]
    need = before[-1] if before else 0
    dense = steps[0]
    for a, b in zip(steps, steps[1:]):
        if b - a > 1.5 * every:
            dense = b
    if dense > need:
        raise RunError(
            f"{run.path}: the checkpoints are more than {1.5 * every:g} steps apart after step {need} (up to step "
            f"{dense}), where the width's start is read; {_SPACING_HINT}"
        )
    return steps, dense


def sampled_width(
    run: str | os.PathLike | Run,
    *,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    every: int = ORIGINAL_EVERY,
    seed: int = 0,
    progress: bool = False,
    shared: ExampleLosses | None = None,
) -> dict[str, Any]:
    """The distribution of the run's transition width under the original's estimator (the
    draws of ``sampled_tau``: the same replays, read by the width's rule) beside its exact width.
    ``width_recorded``: (t_start, t_end, width) from the run's records; ``width_exact_grid``: from
    the exact L_seq over all evaluation groups on the estimator's grid. Per replay quantity
    (``t_start``, ``t_end``, ``tau_width``): the spread of ``replay_spread``. ``dense_from``: the
    grid is sparse before this step (a widened spacing on the plateau); ``t_start_before_dense``:
    the share of the replays that ended whose t_start lies there, where the original read more
    estimates. A replay that has not fallen below the bottom line by the run's last checkpoint
    has no width (``p_none``): on a run stopped at that line (a floor at ``lo``) the spread then
    covers only the replays that ended early, and reads short. ``shared`` as in ``sampled_tau``."""
    run = _checked_run(run, n_sample, draws, every)
    cfg = run.config()
    steps, dense = width_grid(run, every)
    K, log_K = cfg.task.K, cfg.task.log_K
    hi, lo = cfg.eval.width_hi, cfg.eval.width_lo
    losses, scored, ev = replay_scorer(run, shared, progress)
    t_start, t_end, exact = replay_widths(steps, losses, K, hi * log_K, lo * log_K, n_sample, draws, seed)
    if progress:
        print(file=sys.stderr)
    width = t_end - t_start
    paper = run_summary(run)["definitions"]["paper"]
    crossed = t_start[~np.isnan(t_start)]
    grid_width = None if exact[1] is None else exact[1] - exact[0]
    return {
        "run": str(run.path),
        "K": K,
        "hi": hi,
        "lo": lo,
        "n_sample": n_sample,
        "draws": draws,
        "every": every,
        "seed": seed,
        "width_recorded": [paper[k] for k in ("t_start", "t_end", "tau_width")],
        "width_exact_grid": [*exact, grid_width],
        "eval_groups": len(ev.groups),
        "dense_from": dense,
        "t_start_before_dense": float(np.mean(crossed < dense)) if len(crossed) else 0.0,
        "t_start": replay_spread(t_start),
        "t_end": replay_spread(t_end),
        "tau_width": replay_spread(width),
        "checkpoints_scored": len(scored),
        "widths": [None if math.isnan(w) else int(w) for w in width],
    }


def condition_from(
    sources: Sequence[str],
    *,
    n_sample: int = ORIGINAL_N_SAMPLE,
    draws: int = 1000,
    every: int = ORIGINAL_EVERY,
    seed: int = 0,
) -> dict[str, Any]:
    """One condition's seeds paired under the original's estimator: the width replay
    (``sampled_width``) of each source, a run folder replayed here or a JSON file written by
    ``mi-plateau summary RUN --sampled-width --json`` read, and the condition's mean, std and CV
    under the estimator (``condition_spread``). ValueError, before any replay, for fewer than
    two sources."""
    if len(sources) < 2:
        raise ValueError(f"a condition needs two or more seeds (got {len(sources)}: {' '.join(sources)})")
    results = []
    for src in sources:
        if src.endswith(".json"):
            doc = parse_json(Path(src).read_text(), src)
            got = doc.get("sampled_width") if isinstance(doc, dict) else None
            if not isinstance(got, dict):
                raise ValueError(f"{src}: no sampled_width in it (mi-plateau summary RUN --sampled-width --json)")
            results.append(got)
        else:
            results.append(sampled_width(src, n_sample=n_sample, draws=draws, every=every, seed=seed))
    return condition_spread(results)
