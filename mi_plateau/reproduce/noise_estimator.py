"""``reproduce noise_estimator``: Figure 2b's 16x read the way the original measured it.

The paper's delay at label noise p = 0.2 is the crossing of its 32-sample clean L_seq estimator
(32 random groups, one example each), read every 200 steps: a random variable with a long tail,
not the crossing of the exact mean. Over the runs of ``<root>/paper_noise_f2b/``
(docs/sweeps/noise_f2b.toml: one long K = 10 run at p = 0.2 and its clean twin, a checkpoint every
50 steps), this replays that estimator ``DRAWS`` times on each run (``replays.sampled.sampled_tau``:
every 200 steps, 32 groups with one example each) and writes, per noisy run, its crossing as a
distribution beside the exact one: median, 5-95%, the share of replays that never crossed, and the
delay over the clean run's tau two ways: over the clean run's exact tau, and replay by replay (the
two runs share an evaluation set and a seed, so replay i draws the same examples on both:
paired). A noisy run whose exact mean has not crossed says "no escape by N steps".

Nothing is trained. The log ``noise_estimator_log.json`` keeps each run's replays, so the table
rebuilds where the run folders are gone (a run here replaces its logged entry). Every checkpoint's
scores are kept under ``<analyses>/paper_noise_f2b/<run>/example_losses/``, so the recipe run again
on a run that trained further scores only its new checkpoints.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .. import paper
from ..checkpoints import Run, RunError
from ..replays.example_losses import ExampleLosses
from ..replays.sampled import sampled_tau
from ..sweeps import RunOptions, status
from .logged import each_run, run_logged, runs_dry, started
from .registry import DryRun, Recipe
from .writer import Built, Table

SWEEP = "paper_noise_f2b"
LOG = "noise_estimator_log.json"
DRAWS = 2000  # replays per run
EVERY = 200  # the original read its estimate every 200 steps on the noise runs
N_SAMPLE = 32  # groups per estimate, one example each
SEED = 0  # one seed for every run: paired replays


def sweep_runs(root: str | Path) -> list[Path]:
    """The started runs of the sweep under ``root``, by (K, p)."""
    found = started(Path(root) / SWEEP)
    task = {p: Run(p).config().task for p in found}
    return sorted(found, key=lambda p: (task[p].K, task[p].label_noise))


def run_entry(
    run: Run, draws: int = DRAWS, every: int = EVERY, progress: bool = False, keep: Path | None = None
) -> dict[str, Any]:
    """One run's part of the log: K, p, status and steps, the tau of its records (settled) and
    on the estimator's grid, and each replay's crossing (None: never crossed). ``keep``: the
    folder of its checkpoints' scores (``ExampleLosses``)."""
    cfg = run.config()
    shared = ExampleLosses(run, progress, keep=keep)
    got = sampled_tau(run, n_sample=N_SAMPLE, draws=draws, every=every, seed=SEED, progress=progress, shared=shared)
    return {
        "run": run.name,
        "K": cfg.task.K,
        "p": cfg.task.label_noise,
        "status": status(run.path),
        "steps": got["last_step_read"],  # what the replays read (a running run has trained on since)
        "tau": got["tau_recorded"],
        "tau_grid": got["tau_exact_grid"],
        "draws": draws,
        "every": every,
        "n_sample": N_SAMPLE,
        "seed": SEED,
        "taus": got["taus"],
        "exact_means": got["exact_means"],  # (step, exact L_seq in nats) at each read
    }


def _late(taus: list[int | None]) -> np.ndarray:
    """Replay crossings as floats, a replay that never crossed as +inf (later than any step)."""
    return np.array([math.inf if t is None else float(t) for t in taus])


def _q(x: np.ndarray, q: float) -> float | None:
    v = float(np.percentile(x, q, method="lower"))
    return v if math.isfinite(v) else None


def delay_stats(x: np.ndarray, reached: int, base, base_reached: int | None, how: str) -> dict[str, float | None]:
    """The delay ``x / base``: the noisy replays' crossings ``x`` (+inf: none by step
    ``reached``) over a clean tau (a number) or over the paired clean replays (an array; +inf:
    none by ``base_reached``). Its 5/50/95% quantiles count a noisy replay that never crossed as
    later than any delay (None where that is the quantile) and leave out the pairs whose clean
    replay never crossed (their delay is unknown); ``p_le_16x``: the share of replays whose delay
    is known to be at most the paper's, ``p_open_16x``: the share the runs' ends leave undecided
    (a replay that never crossed before 16x was reached, or a bound on the wrong side). None
    where there is no base."""
    lim = paper.LABEL_NOISE_DELAY
    cols = [
        f"delay_{how}_q05",
        f"delay_{how}_q50",
        f"delay_{how}_q95",
        f"p_le_{lim:g}x_{how}",
        f"p_open_{lim:g}x_{how}",
    ]
    if base is None:
        return dict.fromkeys(cols)
    base = np.broadcast_to(np.asarray(base, dtype=float), x.shape)
    crossed, base_crossed = np.isfinite(x), np.isfinite(base)
    both = crossed & base_crossed
    d = np.where(both, x / np.where(base_crossed, base, 1.0), np.inf)
    le = both & (d <= lim)
    # a noisy replay that never crossed is over 16x once its run reached 16x its clean replay's
    # crossing; a clean one that never crossed puts a noisy crossing under 16x once x <= 16 x reached
    le |= crossed & ~base_crossed & (x <= lim * (base_reached or np.inf))
    over = (both & (d > lim)) | (~crossed & base_crossed & (reached >= lim * np.where(base_crossed, base, 1.0)))
    known = d[base_crossed]
    out = dict(zip(cols[:3], (_q(known, q) for q in (5, 50, 95)))) if len(known) else dict.fromkeys(cols[:3])
    return out | {cols[3]: float(le.mean()), cols[4]: float((~le & ~over).mean())}


def crossing_rate(taus: list[int | None], steps: int, every: int) -> tuple[float | None, float | None]:
    """(The share of the replays still above the line that cross at each read, pooled over the
    reads from the first crossing to the run's last; the step at which half the replays would have
    crossed if that rate held on: an extrapolation past the run, not a measurement). None where
    no replay crossed."""
    crossed = sorted(t for t in taus if t is not None)
    if not crossed:
        return None, None
    reads = range(crossed[0], steps // every * every + 1, every)
    at_risk = sum(sum(t is None or t >= r for t in taus) for r in reads)
    rate = len(crossed) / at_risk
    half = crossed[0] + every * (math.log(2) / -math.log1p(-rate) - 1) if rate < 1 else float(crossed[0])
    return rate, half


def estimator_rows(entries: dict[str, dict]) -> list[dict[str, Any]]:
    """One row per noisy run (p > 0) whose K has a clean run (p = 0) in ``entries``."""
    clean = {e["K"]: e for e in entries.values() if e["p"] == 0}
    rows = []
    for e in sorted(entries.values(), key=lambda e: (e["K"], e["p"])):
        c = clean.get(e["K"])
        if e["p"] == 0 or c is None:
            continue
        x = _late(e["taus"])
        row: dict[str, Any] = {
            "K": e["K"],
            "p": e["p"],
            "run": e["run"],
            "status": e["status"],
            "steps": e["steps"],
            "tau_exact": e["tau"],
            "no_escape_by": e["steps"] if e["tau"] is None else None,
            "exact_last_over_logK": e["exact_means"][-1][1] / math.log(e["K"]) if e.get("exact_means") else None,
            "replays": len(x),
            "crossing_q05": _q(x, 5),
            "crossing_q50": _q(x, 50),
            "crossing_q95": _q(x, 95),
            "p_no_crossing": float(np.isinf(x).mean()),
            "clean_tau_exact": c["tau"],
            "clean_tau_grid": c["tau_grid"],
        }
        # over the clean run's exact crossing on the estimator's own grid, and replay by replay
        row |= delay_stats(x, e["steps"], float(c["tau_grid"]) if c["tau_grid"] else None, None, "exact")
        paired = (c["draws"], c["seed"], c["every"]) == (e["draws"], e["seed"], e["every"])
        row |= delay_stats(x, e["steps"], _late(c["taus"]) if paired else None, c["steps"], "paired")
        row["rate_per_read"], half = crossing_rate(e["taus"], e["steps"], e["every"])
        row["median_if_rate_held"] = half
        row["its_delay"] = half / c["tau_grid"] if half is not None and c["tau_grid"] else None
        row["exact_delay"] = e["tau"] / c["tau"] if e["tau"] and c["tau"] else None
        row["paper_delay"] = paper.LABEL_NOISE_DELAY if e["p"] == 0.2 else None
        rows.append(row)
    return rows


NOTE = (
    "The original's estimator replayed: every {every} steps, L_seq averaged over {n} groups drawn with "
    "replacement, one example each, {draws} replays per run; a replay's crossing is its first estimate "
    "below 0.5 log K. crossing_q*: the noisy run's replay crossings (steps; a replay that never crossed counts "
    "as later than any step, None where that is the quantile); p_no_crossing: the share that never crossed by "
    "the run's last step. delay_exact_*: replay crossing over the clean run's exact crossing on the same 200-step "
    "grid (clean_tau_grid); delay_paired_*: replay i on the noisy run over replay i on the clean run (the same "
    "draws), the pairs whose clean replay never crossed left out; p_le_16x_*: the share of replays whose delay is "
    "known to be at most the paper's 16x; p_open_16x_*: the share the runs' ends leave undecided (a noisy replay "
    "that never crossed in a run shorter than 16x). rate_per_read: the share of the replays not yet crossed that "
    "cross at a read, pooled from the first crossing to the run's last read; median_if_rate_held: the step by "
    "which half the replays would have crossed at that rate (an extrapolation past the run, not a measurement), "
    "its_delay: that over clean_tau_grid. tau_exact: the first checkpoint with "
    "the full evaluation set's L_seq < 0.5 log K (settled); no_escape_by: the step the run got to without one; "
    "exact_last_over_logK: the full evaluation set's clean L_seq at the last read, over log K. "
    "Regenerate: `mi-plateau sweep docs/sweeps/noise_f2b.toml --jobs 1`, then `mi-plateau reproduce noise_estimator`."
)


def build(entries: dict[str, dict]) -> Built:
    some = next(iter(entries.values()))
    note = NOTE.format(every=some["every"], n=some["n_sample"], draws=some["draws"])
    title = "Figure 2b by the original's estimator: the p = 0.2 crossing as a distribution over replays"
    return Built({"Figure 2b, the estimator": Table("label_noise_estimator", estimator_rows(entries), title, note)})


def dry_run(r: Recipe, o: RunOptions) -> DryRun:
    return runs_dry(sweep_runs(Path(o.root)))


def run(r: Recipe, o: RunOptions) -> dict[str, Any]:
    return run_noise_estimator_recipe(o.root, o.docs, progress=o.progress, static=o.static)


def run_noise_estimator_recipe(
    root: str | Path = "checkpoints",
    docs: str | Path = "docs/reproduction",
    analyses: str | Path = "analyses",
    *,
    draws: int = DRAWS,
    every: int = EVERY,
    progress: bool = True,
    static: bool | None = None,
) -> dict[str, Any]:
    """Replay the estimator on the sweep's runs here (their entries replace the log's), write the
    table and the log; returns the log without the replays."""
    root = Path(root)

    def entry(p: Path) -> dict[str, Any]:
        return run_entry(Run(p), draws, every, progress, Path(analyses) / SWEEP / p.name / "example_losses")

    def build_checked(entries: dict[str, dict]) -> Built:
        if not estimator_rows(entries):
            raise RunError(missing.replace("{log}", str(Path(docs) / LOG)))
        return build(entries)

    missing = (
        f"{root / SWEEP}: needs a clean run (label_noise 0) and a noisy one of the same K, here or in " + "{log}; "
        "train them with `mi-plateau sweep docs/sweeps/noise_f2b.toml`"
    )
    passes = each_run(
        "noise_estimator", sweep_runs(root), entry, f"scoring every {every} steps, {draws} replays", progress
    )
    return run_logged("noise_estimator", docs, passes, build_checked, missing, static)
