"""Running a sweep: every point is an ordinary run folder under ``checkpoints/<sweep>/``.

Rerunning a sweep skips finished runs and resumes partial ones exactly (``train.train`` with
``resume=True``); a point whose config differs from its run folder's is refused, with the
difference, before any work starts. Backends:

- ``local`` (default): a pool of ``jobs`` subprocesses (default: one per core), one thread each,
  each running ``mi-plateau train --config - --out RUN --resume`` (or, with ``batch_runs`` M > 1,
  ``mi-plateau train-batch`` on up to M runs of the same shapes: ``batched``); a process that is
  killed is resubmitted (its runs resume from their last checkpoints) up to ``retries`` times.
- ``ray``: Ray core tasks (``num_cpus=1``, ``max_retries=retries``) that call the same train
  function, on the cluster at ``address`` or on a local Ray instance with ``jobs`` CPUs. The run
  folders must be on a filesystem every worker sees.

A run that fails is recorded in the table with its error; the others go on, and ``mi-plateau
sweep`` then exits 1 naming the failed runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, atomic_write_json, read_json, refuse_inside_run
from ..config import RunConfig, config_diff, extends
from ..tabular import write_table
from .spec import ORDERS, Sweep

BACKENDS = ("local", "ray")


def select(sweep: Sweep, only: Sequence[str]) -> list[str]:
    """The points named in ``only``, checked: an unknown name or an empty list is refused in one line."""
    names = [p.name for p in sweep.points]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise RunError(f"{sweep.name}: no point named {unknown[0]!r}; the points are {', '.join(names)}")
    if not only:
        raise RunError(f"{sweep.name}: the list of points to train is empty")
    return list(dict.fromkeys(only))


def status(path: Path) -> str:
    """finished / running (a partial run) / not started, from the run folder's manifest."""
    try:
        m = read_json(Path(path) / "manifest.json")
    except RunError:
        return "not started"
    return m.get("status", "?") if isinstance(m, dict) else "?"


def plan(sweep: Sweep, root: str | Path = "checkpoints") -> list[tuple[Path, RunConfig]]:
    """The run folders of the sweep's points; refuses (before any work) a point whose run folder
    holds a different config, naming the settings that differ. A sweep file that only raises
    ``max_steps`` (``config.extends``) continues its runs, as ``train --resume`` does."""
    folder = sweep.folder(root)
    out, bad = [], []
    for p in sweep.points:
        path = folder / p.name
        if (path / "config.json").exists():
            stored = Run(path).config()
            if stored.to_dict() != p.cfg.to_dict() and not extends(stored, p.cfg):
                bad.append(f"{p.name}: {config_diff(stored.to_dict(), p.cfg.to_dict())}")
        out.append((path, p.cfg))
    if bad:
        raise RunError(
            f"{folder}: points whose config changed since their runs started (move the runs away or restore "
            f"the sweep file): {' | '.join(bad)}"
        )
    return out


def _raised_cap(path: Path, cfg: RunConfig) -> bool:
    """A finished run whose point now only has a larger ``max_steps``: the trainer continues it
    if the old cap stopped it (one its own rule stopped it leaves as it is)."""
    try:
        return extends(Run(path).config(), cfg)
    except RunError:
        return False


def _units(
    runs: Sequence[tuple[Path, RunConfig]], batch_runs: int, order: str = "longest_first"
) -> list[list[tuple[Path, RunConfig]]]:
    """The unfinished runs as units of work: single runs, or with ``batch_runs`` > 1 batches of up
    to that many batchable runs (``batched.group_batches``) trained in one process as one stacked
    model. ``order`` "longest_first" starts the largest D = K n_b first (tau grows with D, so the
    last to start is a short one: the shortest sweep); "listed" keeps the given order (a recipe
    listed by value gets its most wanted runs first when it cannot finish in one go)."""
    todo = [(Path(p), c) for p, c in runs if status(p) != "finished" or _raised_cap(Path(p), c)]
    if order == "longest_first":
        todo.sort(key=lambda r: -r[1].task.K * r[1].task.n_b)  # stable: ties keep the listed order
    elif order != "listed":
        raise RunError(f"order={order!r}: must be one of {', '.join(ORDERS)}")
    if batch_runs < 1:
        raise RunError(f"batch_runs={batch_runs}: must be at least 1")
    if batch_runs == 1:
        return [[r] for r in todo]
    from ..batched import group_batches

    return group_batches(todo, batch_runs)


def train_local(
    runs: Sequence[tuple[Path, RunConfig]],
    jobs: int | None = None,
    *,
    retries: int = 1,
    progress: bool = True,
    logs: Path | None = None,
    batch_runs: int = 1,
    order: str = "longest_first",
    on_done: Callable[[], None] | None = None,
    device: str = "auto",
) -> dict[str, str]:
    """Train the unfinished runs ``jobs`` processes at a time, one thread each (``jobs`` default:
    the cores), each process one run or (``batch_runs`` > 1) one batch of runs; returns {run
    folder: error} for the runs that failed. Each process's standard error goes to
    ``logs/<first run>.log`` (default: beside the run folders)."""
    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise RunError(f"jobs={jobs}: must be at least 1")
    todo = [(u, 0) for u in _units(runs, batch_runs, order)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    running: list[tuple[subprocess.Popen, list, int]] = []
    errors: dict[str, str] = {}
    bar = _bar(sum(len(u) for u, _ in todo), progress)

    def log_of(unit) -> Path:
        path = unit[0][0]
        return (logs or path.parent / "logs") / f"{path.name}.log"

    def start(unit, tries: int) -> None:
        if len(unit) == 1:
            cmd = [
                sys.executable,
                "-m",
                "mi_plateau",
                "train",
                "--config",
                "-",
                "--out",
                str(unit[0][0]),
                "--resume",
                "--quiet",
                "--device",
                device,
            ]
            payload = unit[0][1].to_json()
        else:
            cmd = [sys.executable, "-m", "mi_plateau", "train-batch", "-", "--resume", "--quiet", "--device", device]
            payload = json.dumps([{"out": str(p), "config": c.to_dict()} for p, c in unit])
        log_of(unit).parent.mkdir(parents=True, exist_ok=True)
        with open(log_of(unit), "a") as log:  # the child keeps its own descriptor
            p = subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
                preexec_fn=_die_with_parent,
            )
        p.stdin.write(payload)
        p.stdin.close()
        running.append((p, unit, tries))

    while todo or running:
        while todo and len(running) < jobs:
            start(*todo.pop(0))
        time.sleep(0.2)
        for item in list(running):
            p, unit, tries = item
            if p.poll() is None:
                continue
            running.remove(item)
            killed = p.returncode < 0 or p.returncode == 137  # a signal (kill -9), or the crash hook's exit
            if killed and tries < retries:  # resume it from its last checkpoint(s)
                todo.append((unit, tries + 1))
                continue
            if p.returncode != 0:
                lines = log_of(unit).read_text(errors="replace").strip().splitlines()
                last = lines[-1] if lines else ""
                for path, _ in unit:
                    if status(path) != "finished":
                        errors[str(path)] = f"exit {p.returncode}: {last}" if last else f"exit {p.returncode}"
            if bar is not None:
                bar.update(len(unit))
            if on_done is not None:
                on_done()
    if bar is not None:
        bar.close()
    return errors


def _die_with_parent() -> None:
    """In a pool worker, before exec: on Linux, ask for SIGKILL when the sweep process dies, so
    that a killed sweep leaves no worker holding a run's lock (its runs resume on the rerun)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: a killed sweep's workers finish their runs on their own


def _ray_train(items: list[tuple[dict, str]], device: str = "auto") -> list[str]:
    """A Ray task: the same resumable train function (one run) or the batched trainer, one thread."""
    import torch

    torch.set_num_threads(1)
    pairs = [(RunConfig.from_dict(c), out) for c, out in items]
    if len(pairs) == 1:
        from ..train import train

        train(pairs[0][0], pairs[0][1], resume=True, progress=False, device=device)
    else:
        from ..batched import train_batched

        train_batched(pairs, resume=True, progress=False, device=device)
    return [out for _, out in items]


def train_ray(
    runs: Sequence[tuple[Path, RunConfig]],
    jobs: int | None = None,
    *,
    address: str | None = None,
    retries: int = 1,
    progress: bool = True,
    batch_runs: int = 1,
    order: str = "longest_first",
    on_done: Callable[[], None] | None = None,
    device: str = "auto",
) -> dict[str, str]:
    """Train the unfinished runs as Ray tasks (one per run, or per batch with ``batch_runs`` > 1);
    returns {run folder: error} for the failures."""
    try:
        import ray
    except ImportError:
        raise RunError("the ray backend needs Ray: pip install 'mi-plateau[ray]'") from None
    units = _units(runs, batch_runs, order)
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=retries)(_ray_train)
        refs = {task.remote([(c.to_dict(), str(p.resolve())) for p, c in u], device): u for u in units}
        errors: dict[str, str] = {}
        bar = _bar(sum(len(u) for u in units), progress)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(done[0])
            except Exception as e:  # the task's own error, or a worker lost more often than max_retries
                msg = " ".join(str(getattr(e, "cause", None) or e).split())[-300:]
                errors.update({str(p): msg for p, _ in refs[done[0]] if status(p) != "finished"})
            if bar is not None:
                bar.update(len(refs[done[0]]))
            if on_done is not None:
                on_done()
        if bar is not None:
            bar.close()
        return errors
    finally:
        if started:
            ray.shutdown()


def waves(runs: Sequence[tuple[Path, RunConfig]]) -> list[list[tuple[Path, RunConfig]]]:
    """The runs in the order their starts allow: first those that start from their own init, then
    those that start from another run's weights (``train.init_from``), which has finished by
    then if it is in the sweep. Empty waves are left out."""
    own = [r for r in runs if not r[1].train.init_from]
    borrowed = [r for r in runs if r[1].train.init_from]
    return [w for w in (own, borrowed) if w]


def run_sweep(
    sweep: Sweep,
    *,
    root: str | Path = "checkpoints",
    jobs: int | None = None,
    backend: str = "local",
    address: str | None = None,
    retries: int = 1,
    progress: bool = True,
    batch_runs: int = 1,
    only: Sequence[str] | None = None,
    on_done: Callable[[], None] | None = None,
    device: str = "auto",
):
    """Train every point of the sweep (skipping finished runs, resuming partial ones) and return
    its table (``sweep_table``; ``table.attrs["failed"]``: {run name: error} of the runs this call
    trained that failed or were left unfinished). Writes the resolved sweep to ``<root>/<sweep>/sweep.json``.
    ``only``: train just the points of these names (the table still has a row per point);
    ``on_done``: called after each run (or batch) ends, e.g. to record what it made; ``device``:
    where each process trains (``devices.resolve``); ``batch_runs`` "auto": ``auto_batch_runs``."""
    batch_runs = auto_batch_runs(device) if batch_runs == "auto" else batch_runs
    if backend not in BACKENDS:
        raise RunError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    runs = plan(sweep, root)
    if only is not None:
        keep = set(select(sweep, only)) if only else set()  # an empty list: nothing left to train
        runs = [r for r, p in zip(runs, sweep.points) if p.name in keep]
    folder = sweep.folder(root)
    # the writers' rule: the sweep folder is a real folder of its own, not inside a run folder
    refuse_inside_run(folder, "sweep")
    if folder.is_symlink():
        raise RunError(f"{folder}: is a symbolic link; a sweep writes only into its own folder")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / "sweep.json", sweep.to_dict())
    t0 = time.perf_counter()
    errors: dict[str, str] = {}
    common = dict(
        retries=retries,
        progress=progress,
        batch_runs=batch_runs,
        order=sweep.order,
        on_done=on_done,
        device=str(device),
    )
    for wave in waves(runs):
        if backend == "ray":
            errors |= train_ray(wave, jobs, address=address, **common)
        else:
            errors |= train_local(wave, jobs, **common)
    trained = {Path(p).name for p, _ in runs}
    failed = {Path(k).name: v for k, v in errors.items()}
    for p, _ in runs:  # whatever the backend said, a run left unfinished failed (a Ray task lost past its retries)
        if Path(p).name not in failed and status(p) != "finished":
            failed[Path(p).name] = f"did not finish (status {status(p)})"
    try:  # the errors of the points not trained this time stay as they were
        old = read_json(folder / "errors.json")
    except RunError:
        old = {}
    errs = {k: v for k, v in (old if isinstance(old, dict) else {}).items() if k not in trained}
    errs.update(failed)
    atomic_write_json(folder / "errors.json", errs)
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


GPU_BATCH_RUNS = 256  # runs per batched process on a GPU under --batch-runs auto


def auto_batch_runs(device: str = "auto") -> int:
    """``--batch-runs auto``: on a GPU, up to ``GPU_BATCH_RUNS`` runs of the same shapes per process
    (one stacked model fills the device far better than one small run); on a CPU, one run per
    process (two CPU cores gain nothing from batching: docs/performance.md)."""
    from ..devices import resolve

    return GPU_BATCH_RUNS if resolve(device).type == "cuda" else 1


def sweep_table(folder: str | Path):
    """One row per run of the sweep in ``folder`` (its ``sweep.json``): the swept settings, both
    families' tau (steps and examples), plateau heights, converged, steps, training wall time,
    status and error. A pandas DataFrame."""
    from ..frames import frame

    folder = Path(folder)
    try:
        spec = read_json(folder / "sweep.json")
        if not isinstance(spec, dict) or not isinstance(spec.get("points"), list):
            raise RunError(f"{folder / 'sweep.json'}: not a resolved sweep")
    except RunError as e:
        raise RunError(f"{folder}: not a sweep folder ({e})") from None
    try:
        errors = read_json(folder / "errors.json")
    except RunError:
        errors = {}
    errors = errors if isinstance(errors, dict) else {}
    rows = []
    for p in spec["points"]:
        row: dict[str, Any] = {"run": p["name"], **p["settings"], **run_row(folder / p["name"])}
        row["error"] = row.get("error") or errors.get(p["name"])
        rows.append(row)
    return frame(rows)


def run_row(path: Path) -> dict[str, Any]:
    """A run folder's line in a sweep table: status, both families' tau (steps and examples),
    plateau heights, converged, steps and training wall time (only the status, for a run that
    has not started; ``error`` where the folder cannot be read)."""
    row: dict[str, Any] = {"status": status(path)}
    if row["status"] in ("finished", "running"):
        try:
            run = Run(path)
            s = run.summary()
            for fam, v in s["definitions"].items():
                row[f"tau_{fam}"] = v["tau"]
                row[f"tau_width_{fam}"] = v["tau_width"]
                row[f"tau_examples_{fam}"] = v["tau_examples"]
                row[f"plateau_{fam}"] = v["plateau_Lc"]
                row[f"plateau_ratio_{fam}"] = v["plateau_ratio"]
            row.update(
                {
                    "converged": s["converged"],
                    "steps": s["last_step"],
                    "wall_s": train_wall(run),
                    "dissipation_Q": s.get("dissipation_Q"),
                }
            )
        except RunError as e:
            row["error"] = str(e)
    return row


def train_wall(run: Run) -> float | None:
    """The run's training wall time in seconds (across resumes), from its last checkpoint record."""
    try:
        last = run.manifest()["checkpoints"][-1]
        return float(read_json(run.inside(last["record_file"])).get("wall_s"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RunError):
        return None


def _bar(total: int, progress: bool):
    if not progress or not total:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="runs", unit="run", file=sys.stderr, dynamic_ncols=True)
