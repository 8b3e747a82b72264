"""The ``local`` sweep backend: a pool of ``mi-plateau train`` (or ``train-batch``) subprocesses,
``RunOptions.threads`` threads each (default 1); a process that is killed is resubmitted (its
runs resume from their last checkpoints) up to ``retries`` times."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..checkpoints import RunError
from ..config import RunConfig, RunOptions
from ..config.options import FLAGS
from .progress import Progress
from .schedule import status, work_units

Unit = list[tuple[Path, RunConfig]]  # the runs one process trains: one run, or a batch of them


def train_local(
    runs: Sequence[tuple[Path, RunConfig]],
    options: RunOptions = RunOptions(),
    *,
    retries: int = 1,
    logs: Path | None = None,
    order: str = "longest_first",
    on_done: Callable[[], None] | None = None,
) -> dict[str, str]:
    """Train the unfinished runs ``options.jobs`` processes at a time (default: as many as the
    cores hold at ``options.threads`` threads each, ``RunOptions.processes``; threads default
    1), each process one run or (``options.batch_runs`` > 1) one batch of runs, on
    ``options.device``; returns {run folder: error} for the runs that failed. Each process's
    standard error goes to ``logs/<first run>.log`` (default: beside the run folders)."""
    jobs, batch_runs, device = options.processes(), options.batch_runs, options.device
    if jobs < 1:
        raise RunError(f"jobs={jobs}: must be at least 1")
    todo = [(u, 0) for u in work_units(runs, batch_runs, order)]
    threads = str(options.threads or 1)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    running: list[tuple[subprocess.Popen, Unit, int]] = []
    errors: dict[str, str] = {}
    tally = Progress(sum(len(u) for u, _ in todo), options.progress, on_done)
    while todo or running:
        while todo and len(running) < jobs:
            unit, tries = todo.pop(0)
            running.append((_start(unit, env, _log_path(unit, logs), device), unit, tries))
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
                errors.update(_failures(unit, p.returncode, _log_path(unit, logs)))
            tally.done(len(unit))
    tally.close()
    return errors


def _log_path(unit: Unit, logs: Path | None) -> Path:
    """Where the process of ``unit`` writes its standard error: ``<logs>/<first run>.log``."""
    path = unit[0][0]
    return (logs or path.parent / "logs") / f"{path.name}.log"


def _command(unit: Unit, device: str) -> tuple[list[str], str]:
    """The command line that trains ``unit`` (``train`` for one run, ``train-batch`` for more) and
    what it reads on standard input (the run's config, or the list of {out, config})."""
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
            FLAGS["device"],
            device,
        ]
        return cmd, unit[0][1].to_json()
    cmd = [sys.executable, "-m", "mi_plateau", "train-batch", "-", "--resume", "--quiet", FLAGS["device"], device]
    return cmd, json.dumps([{"out": str(p), "config": c.to_dict()} for p, c in unit])


def _start(unit: Unit, env: dict[str, str], log_path: Path, device: str) -> subprocess.Popen:
    """Start the process that trains ``unit``, its standard error appended to ``log_path``."""
    cmd, payload = _command(unit, device)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as log:  # the child keeps its own descriptor
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
    return p


def _failures(unit: Unit, returncode: int, log_path: Path) -> dict[str, str]:
    """{run folder: error} for the runs of a unit whose process exited non-zero and that are not
    finished: the exit code and the last line of the process's log."""
    lines = log_path.read_text(errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    return {
        str(path): f"exit {returncode}: {last}" if last else f"exit {returncode}"
        for path, _ in unit
        if status(path) != "finished"
    }


def _die_with_parent() -> None:
    """In a pool worker, before exec: on Linux, ask for SIGKILL when the sweep process dies, so
    that a killed sweep leaves no worker holding a run's lock (its runs resume on the rerun)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: a killed sweep's workers finish their runs on their own
