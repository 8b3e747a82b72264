"""Running a sweep: every point is an ordinary run folder under ``checkpoints/<sweep>/``.

Rerunning a sweep skips finished runs and resumes partial ones exactly (``train.train`` with
``resume=True``); a point whose config differs from its run folder's is refused, with the
difference, before any work starts (``schedule.plan``). Backends:

- ``local`` (default, ``pool``): a pool of ``jobs`` subprocesses (default: one per core), one
  thread each, each running ``mi-plateau train --config - --out RUN --resume`` (or, with
  ``batch_runs`` M > 1, ``mi-plateau train-batch`` on up to M runs of the same shapes:
  ``train.batched``); a process that is killed is resubmitted (its runs resume from their last
  checkpoints) up to ``retries`` times.
- ``ray`` (``ray_tasks``): Ray core tasks (``num_cpus=1``, ``max_retries=retries``) that call the
  same train function, on the cluster at ``address`` or on a local Ray instance with ``jobs``
  CPUs. The run folders must be on a filesystem every worker sees.

A run that fails is recorded in the table (``table``) with its error; the others go on, and
``mi-plateau sweep`` then exits 1 naming the failed runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..checkpoints import RunError, RunLock, atomic_write_json, manifest_digest, read_json, refuse_inside_run
from ..config import RunConfig, RunOptions
from ..outputs import write_table
from .pool import train_local
from .ray_tasks import train_ray
from .schedule import plan, select, status, waves
from .spec import Sweep, sweep_in_precision
from .table import sweep_table

__all__ = ["BACKENDS", "GPU_BATCH_RUNS", "auto_batch_runs", "run_sweep"]

BACKENDS = ("local", "ray")


def run_sweep(
    sweep: Sweep,
    options: RunOptions = RunOptions(),
    *,
    retries: int = 1,
    on_done: Callable[[], None] | None = None,
):
    """Train every point of the sweep (skipping finished runs, resuming partial ones) and return
    its table (``sweep_table``; ``table.attrs["failed"]``: {run name: error} of the runs this call
    trained that failed or were left unfinished). Writes the resolved sweep to ``<root>/<sweep>/sweep.json``.
    Reads of ``options``: ``root``; ``precision`` (the sweep in that precision, ``sweep_in_precision``);
    ``only`` (train just the points of these names; the table still has a row per point);
    ``backend``, ``address``, ``jobs``, ``batch_runs`` ("auto": ``auto_batch_runs``), ``device``
    (where each process trains, ``devices.resolve``) and ``progress``, which go to the backend.
    ``on_done``: called after each run (or batch) ends, e.g. to record what it made."""
    if options.batch_runs == "auto":
        options = replace(options, batch_runs=auto_batch_runs(options.device))
    if options.backend not in BACKENDS:
        raise RunError(f"backend {options.backend!r}: choose one of {', '.join(BACKENDS)}")
    sweep = sweep_in_precision(sweep, options.precision)
    # an empty list: nothing left to train; the points left out are not checked either (a smaller
    # --max-steps than a finished run's own cap concerns that run only where it is selected)
    only = options.only
    keep = None if only is None else set(select(sweep, only)) if only else set()
    runs = plan(sweep, options.root, keep)
    folder = sweep.folder(options.root)
    # the writers' rule: the sweep folder is a real folder of its own, not inside a run folder
    refuse_inside_run(folder, "sweep")
    if folder.is_symlink():
        raise RunError(f"{folder}: is a symbolic link; a sweep writes only into its own folder")
    folder.mkdir(parents=True, exist_ok=True)
    # one sweep process per sweep folder: a second one says so in one line instead of failing its points
    with RunLock(folder, what="sweep folder"):
        doc = sweep.to_dict()
        doc["digest"] = manifest_digest(doc)  # sealed like a run's manifest: the table refuses an edited one
        atomic_write_json(folder / "sweep.json", doc)
        t0 = time.perf_counter()
        errors: dict[str, str] = {}
        train = train_ray if options.backend == "ray" else train_local
        for wave in waves(runs):
            errors |= train(wave, options, retries=retries, order=sweep.order, on_done=on_done)
        failed = _record_failures(folder, runs, errors)
        table = sweep_table(folder)
        write_table(
            folder / "table",
            table,
            title=f"Sweep {sweep.name}: one row per run",
            note="tau in steps (tau_examples: examples seen); plateau in nats; paper = L_seq, first_token = Lc.",
        )
    table.attrs["wall_s"] = time.perf_counter() - t0
    table.attrs["failed"] = failed  # {run name: error} of this call's runs; the CLI exits non-zero on any
    return table


def _record_failures(folder: Path, runs: Sequence[tuple[Path, RunConfig]], errors: dict[str, str]) -> dict[str, str]:
    """{run name: error} of the runs this call trained that failed (``errors``: the backends' {run
    folder: error}) or were left unfinished, also merged into ``<folder>/errors.json``, where the
    errors of the points not trained this time stay as they were."""
    trained = {Path(p).name for p, _ in runs}
    failed = {Path(k).name: v for k, v in errors.items()}
    for p, _ in runs:  # whatever the backend said, a run left unfinished failed (a Ray task lost past its retries)
        if Path(p).name not in failed and status(p) != "finished":
            failed[Path(p).name] = f"did not finish (status {status(p)})"
    try:
        old = read_json(folder / "errors.json")
    except RunError:
        old = {}
    errs = {k: v for k, v in (old if isinstance(old, dict) else {}).items() if k not in trained}
    errs.update(failed)
    atomic_write_json(folder / "errors.json", errs)
    return failed


GPU_BATCH_RUNS = 256  # runs per batched process on a GPU under --batch-runs auto


def auto_batch_runs(device: str = "auto") -> int:
    """``--batch-runs auto``: on a GPU, up to ``GPU_BATCH_RUNS`` runs of the same shapes per process
    (one stacked model fills the device far better than one small run); on a CPU, one run per
    process (two CPU cores gain nothing from batching: docs/performance.md)."""
    from ..devices import resolve  # here, not at the top: torch (sweeps import without it)

    return GPU_BATCH_RUNS if resolve(device).type == "cuda" else 1
