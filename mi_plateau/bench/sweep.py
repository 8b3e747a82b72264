"""``mi-plateau bench --only sweep``: per-run training throughput of the batched trainer against
single-run training, in one bench run.

Every configuration trains the same paper-preset runs (seeds 0, 1, ...) for a fixed number of
steps without checkpoints (the step is ``train.train_step`` for single runs and
``train.batched.stacked_step`` for batches, the code the trainers run); the figure of merit is run-steps
per second: steps x runs / wall time. Configurations:

- single run, 1 thread; single run, one thread per core (intra-op parallelism);
- one single-run process per core, 1 thread each, side by side (the sweep pool's default);
- batched M = 1, 2, 4, 8, 16 in one process, 1 thread;
- one batched process per core, M / cores runs each, 1 thread each (the sweep pool with
  ``--batch-runs``), for M = 8.

Processes are fresh interpreters (``python -m mi_plateau.bench.sweep`` is not a command: the
bench starts ``sys.executable -c`` on ``measure``) so that thread settings do not leak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

from ..config import preset, with_overrides
from ..devices import resolve
from ..model import build_model, training_forward
from ..task import make_sampler, make_task
from ..train import make_optimizer, train_step
from ..train.batched import stacked_forward, stacked_step
from ..train.stack import Stack

MS = (1, 2, 4, 8, 16)


def measure(
    M: int, steps: int, threads: int, batched: bool, preset_name: str = "paper", offset: int = 0, device: str = "cpu"
) -> float:
    """Train M runs for ``steps`` steps on ``device`` (batched: as one stacked model; else one after
    another per step) and return the seconds of the timed steps (after two warm-up steps)."""
    import torch

    torch.set_num_threads(threads)

    dev = resolve(device)
    members = []
    for i in range(M):
        cfg = with_overrides(preset(preset_name), {"seed": offset + i})
        model = build_model(cfg).to(dev)
        model.train()
        sampler = make_sampler(make_task(cfg.task), cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed)
        members.append(
            SimpleNamespace(
                cfg=cfg,
                model=model,
                opt=make_optimizer(cfg, model),
                sampler=sampler,
                step=0,
                device=dev,
                forward=training_forward(cfg, model),
            )
        )
    B = members[0].cfg.train.batch_size
    f = stacked_forward(members[0].cfg) if batched else None
    stack = Stack(members) if batched else None

    def one_step():
        if batched:
            stacked_step(f, stack, B)
        else:
            for m in members:
                train_step(m.cfg, m.forward, m.opt, m.sampler.sample().to(dev), m.step)
        for m in members:
            m.step += 1

    for _ in range(2):
        one_step()
    t = time.perf_counter()
    for _ in range(steps):
        one_step()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return time.perf_counter() - t


def _processes(
    n: int, M: int, steps: int, batched: bool, preset_name: str, threads: int = 1, device: str = "cpu"
) -> float:
    """Seconds of ``n`` fresh processes side by side, each timing M runs for ``steps`` steps with
    ``threads`` threads: the slowest process's timed span."""
    code = (
        "import sys, json; from mi_plateau.bench.sweep import measure; "
        "print(json.dumps(measure(*json.loads(sys.argv[1]))))"
    )
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, json.dumps([M, steps, threads, batched, preset_name, i * M, device])],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(n)
    ]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("a bench process failed (its traceback is above)")
    return max(json.loads(o.strip().splitlines()[-1]) for o in outs)


def bench_sweep(
    quick: bool, preset_name: str = "paper", ms: tuple[int, ...] = MS, device: str = "cpu"
) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    run_steps = 24 if quick else 64  # run-steps timed per configuration
    rows = []

    def add(label: str, runs: int, procs: int, threads: int, seconds: float, steps: int) -> None:
        rows.append(
            {
                "configuration": label,
                "runs": runs,
                "processes": procs,
                "threads_each": threads,
                "run_steps_per_s": runs * steps / seconds,
            }
        )

    s = max(4, run_steps)
    add("single run, 1 thread", 1, 1, 1, _processes(1, 1, s, False, preset_name, device=device), s)
    if cores > 1:
        add(
            f"single run, {cores} threads",
            1,
            1,
            cores,
            _processes(1, 1, s, False, preset_name, cores, device=device),
            s,
        )
        add(
            f"{cores} single-run processes, 1 thread each",
            cores,
            cores,
            1,
            _processes(cores, 1, s, False, preset_name, device=device),
            s,
        )
    for M in ms:
        steps = max(3, run_steps // M)
        add(
            f"batched M={M}, 1 process, 1 thread",
            M,
            1,
            1,
            _processes(1, M, steps, True, preset_name, device=device),
            steps,
        )
    if cores > 1 and 8 in ms:
        M = 8
        steps = max(3, run_steps // (M // cores))
        add(
            f"batched M={M} as {cores} processes x {M // cores} runs, 1 thread each",
            M,
            cores,
            1,
            _processes(cores, M // cores, steps, True, preset_name, device=device),
            steps,
        )
    single = rows[0]["run_steps_per_s"]
    best_single = max(
        r["run_steps_per_s"] for r in rows if r["configuration"].startswith(("single", f"{cores} single"))
    )
    for r in rows:
        r["vs_single_1_thread"] = r["run_steps_per_s"] / single
        r["vs_best_single_config"] = r["run_steps_per_s"] / best_single
    return {"preset": preset_name, "device": device, "cores": cores, "run_steps": run_steps, "rows": rows}


def sweep_lines(res: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"**Sweep throughput** (preset {res['preset']}, {res['cores']} cores, ~{res['run_steps']} run-steps timed "
        "per configuration, no checkpoints)",
        "",
        "| configuration | runs | processes | threads each | run-steps/s | vs single run, 1 thread "
        "| vs best single-run configuration |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['configuration']} | {r['runs']} | {r['processes']} | {r['threads_each']} "
            f"| {r['run_steps_per_s']:.2f} "
            f"| {r['vs_single_1_thread']:.2f} | {r['vs_best_single_config']:.2f} |"
        )
    return lines
