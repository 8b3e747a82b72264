"""The benchmark sections: training step, analysis passes, checkpoint overhead, end to end
(described in the ``mi_plateau.bench`` docstring)."""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..checkpoints import FORMAT_VERSION, Run, write_checkpoint
from ..config import RunConfig, layout_for
from ..devices import precision_reason, resolve_precision
from ..metrics import evaluate, evaluate_reference
from ..model import Weights, build_model
from ..passes.analyze import analyze_run
from ..passes.per_checkpoint import checkpoint_passes
from ..task import make_eval_set, make_sampler, make_task
from ..train import make_optimizer, optimizer_tensors
from .candidates import make_candidate
from .reference import PlainTransformer, loop_passes, max_diff
from .timing import alternate, timed, train_step_flops

E2E_RUN = Path("checkpoints/paper_K10_nb1000_s0")


# --- 1. training step ---------------------------------------------------------------


def bench_train(cfg: RunConfig, which: list[str], *, reps: int, inner: int, check_steps: int) -> dict[str, Any]:
    """ms per step of each candidate, alternated. First every candidate takes ``check_steps``
    steps from the same initial weights on the same batches (warm-up and compilation, and the
    loss curves compared with the toolkit's); the timed steps follow."""
    cands = {k: make_candidate(cfg, k) for k in ("toolkit", *[w for w in which if w != "toolkit"])}
    first: dict[str, float] = {}
    for k, fn in cands.items():
        first[k] = timed(fn)
        for _ in range(check_steps - 1):
            fn()
    curves = {k: list(fn.losses) for k, fn in cands.items()}  # type: ignore[attr-defined]
    times = alternate(cands, reps, inner)
    flops = train_step_flops(cfg)
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    rows = {
        k: {
            "ms_per_step": ms[k],
            "ms_mean": 1e3 * statistics.fmean(v),
            "n_steps": len(v),
            "gflops": flops / ms[k] / 1e6,
            "vs_toolkit": ms[k] / ms["toolkit"],
            "vs_plain": ms[k] / ms["plain"] if "plain" in ms else float("nan"),
            "first_step_s": first[k],
            "max_abs_loss_diff": max(abs(a - b) for a, b in zip(curves[k], curves["toolkit"])),
        }
        for k, v in times.items()
    }
    cpu = torch.device("cpu")
    return {
        "precision": resolve_precision(cfg.train.precision, cpu),
        "precision_reason": precision_reason(cpu) if cfg.train.precision == "auto" else "set in the config",
        "flops_per_step": flops,
        "tokens_per_step": cfg.train.batch_size * (layout_for(cfg.task).seq_len - 1),
        "check_steps": check_steps,
        "candidates": rows,
    }


MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm")  # the GEMM kernels


def step_anatomy(cfg: RunConfig, which: list[str], steps: int = 10) -> dict[str, dict[str, float]]:
    """Per candidate, the ms per step its matrix multiplications take (torch.profiler's self CPU
    time of ``MATMULS``) and the ms everything else takes: what bf16 can speed up (the matmuls)
    and what it leaves (the rest). Profiled after two warm-up steps, over ``steps`` steps."""
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name in which:
        step = make_candidate(cfg, name)
        for _ in range(2):
            step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                step()
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events) / 1e3 / steps
        mm = sum(e.self_cpu_time_total for e in events if e.key in MATMULS) / 1e3 / steps
        out[name] = {"matmul_ms": mm, "other_ms": total - mm}
    return out


def bench_threads(cfg: RunConfig, *, reps: int, inner: int) -> dict[str, Any]:
    """The toolkit's step at 1 intra-op thread and at one per core, alternated: on a machine
    where other jobs hold cores, more threads than free cores can be far slower (OpenMP
    threads wait at every op for a partner that is not scheduled)."""
    step, default = make_candidate(cfg, "toolkit"), torch.get_num_threads()
    counts = sorted({1, os.cpu_count() or 1})
    for _ in range(2):
        step()

    def at(n: int) -> Callable[[], float]:
        def run() -> float:
            torch.set_num_threads(n)
            try:
                return step()
            finally:
                torch.set_num_threads(default)

        return run

    times = alternate({n: at(n) for n in counts}, reps, inner)
    return {str(n): 1e3 * statistics.median(v) for n, v in times.items()}


# --- 2. analysis passes -------------------------------------------------------------


def bench_passes(cfg: RunConfig, *, reps: int, weights: dict | None = None) -> dict[str, Any]:
    model = build_model(cfg)
    if weights is not None:
        model.load_state_dict(weights, strict=False)
    W = Weights.of(model.state_dict(), cfg.model)
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    cands = {
        "toolkit_all": lambda: checkpoint_passes(W, ev, ablation=True),
        "loop_all": lambda: loop_passes(model, ev, ablation=True),
        "toolkit_cheap": lambda: checkpoint_passes(W, ev, ablation=False),
        "loop_cheap": lambda: loop_passes(model, ev, ablation=False),
    }
    agree = {
        "all": max_diff(checkpoint_passes(W, ev, ablation=True), loop_passes(model, ev, ablation=True)),
        "cheap": max_diff(checkpoint_passes(W, ev, ablation=False), loop_passes(model, ev, ablation=False)),
    }
    s = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
    parts: dict[str, list[float]] = {}
    for _ in range(reps):  # each pass on its own: the parts of one checkpoint_passes call
        t: dict[str, float] = {}
        checkpoint_passes(W, ev, ablation=True, timings=t)
        for k, v in t.items():
            parts.setdefault(k, []).append(v)
    return {
        "n_sequences": len(ev.tokens),
        "parts_s": {k: statistics.median(v) for k, v in parts.items()},
        "weights": "trained checkpoint" if weights is not None else "initialisation",
        "rows": {
            kind: {
                "toolkit_s": s[f"toolkit_{kind}"],
                "loop_s": s[f"loop_{kind}"],
                "speedup": s[f"loop_{kind}"] / s[f"toolkit_{kind}"],
                "max_abs_diff": agree[kind],
            }
            for kind in ("all", "cheap")
        },
    }


# --- 3. checkpoint overhead ---------------------------------------------------------


def bench_overhead(cfg: RunConfig, *, reps: int, n_records: int = 100) -> dict[str, Any]:
    """Seconds of ``evaluate`` (the packed functional forward; ``evaluate_reference``, two
    plain forwards through PlainTransformer, for comparison) and of writing one checkpoint the way
    ``train.loop._train_loop`` does (weights, record, resume state, a manifest of ``n_records`` checkpoints; atomic
    writes with fsync) into a temp dir."""
    model = build_model(cfg)
    opt = make_optimizer(cfg, model)
    task = make_task(cfg.task)
    sampler = make_sampler(task, cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed)
    model(sampler.sample()).sum().backward()
    opt.step()  # the optimizer now holds its moments, as at every checkpoint but step 0
    model.eval()
    plain = PlainTransformer.from_bridge(model, cfg, share=True).eval()
    ev = make_eval_set(task, cfg.eval)
    metrics = evaluate(model, ev)
    other = evaluate_reference(plain, ev)
    diff = {"plain": max(abs(v - other[k]) for k, v in metrics.items() if not math.isnan(v))}
    record = {"step": 50, "examples_seen": 6400, "lr": 1e-3, "train_loss": 1.0, "metrics": metrics}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        manifest = {
            "format_version": FORMAT_VERSION,
            "status": "running",
            "resume": None,
            "checkpoints": [
                {
                    "step": 50 * i,
                    "weights": f"ckpt/step_{50 * i:06d}.safetensors",
                    "sha256": "0" * 64,
                    "record_file": f"ckpt/step_{50 * i:06d}.json",
                    "record": record,
                }
                for i in range(n_records)
            ],
        }
        n = [0]

        def save() -> None:  # the trainer's checkpoint writer
            n[0] += 1
            write_checkpoint(
                root,
                manifest,
                {**record, "step": 50 * n_records + n[0]},
                0.0,
                model.state_dict(),
                {**optimizer_tensors(opt), **sampler.state()},
            )
            manifest["checkpoints"].pop()  # keep the manifest at n_records + 1 entries

        cands = {
            "evaluate": lambda: evaluate(model, ev),
            "evaluate_first_token": lambda: evaluate(model, ev, sequence=False),
            "evaluate_plain": lambda: evaluate_reference(plain, ev),
            "save": save,
        }
        t = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
    return {
        "evaluate_s": t["evaluate"],
        "evaluate_first_token_s": t["evaluate_first_token"],
        "evaluate_plain_s": t["evaluate_plain"],
        "save_s": t["save"],
        "evaluate_plain_max_abs_diff": diff["plain"],
        "n_sequences": len(ev.tokens),
        "manifest_records": n_records,
    }


# --- 4. end to end ------------------------------------------------------------------


def bench_end_to_end(path: Path = E2E_RUN, *, allow_running: bool = False) -> dict[str, Any]:
    """Training wall time from a finished run's records, and ``analyze_run`` over it, timed.
    ``allow_running`` takes a run still training as it stands (its checkpoints so far)."""
    run = Run(path)
    if not run.exists():
        return {"skipped": f"{path} does not exist"}
    status = run.manifest().get("status")
    if status != "finished" and not allow_running:
        return {"skipped": f"{path} is not finished (status {status!r})"}
    walls = [json.loads(f.read_text()).get("wall_s", 0.0) for f in sorted((run.path / "ckpt").glob("step_*.json"))]
    # wall_s restarts from 0 when a run is resumed: add up the segments
    train_s = sum(a for a, b in zip(walls, walls[1:] + [0.0]) if b < a)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        tables = analyze_run(run, d, progress=False)
        analyze_s = time.perf_counter() - t
    cfg = run.config()
    return {
        "run": str(path),
        "status": status,
        "last_step": run.records()[-1]["step"],
        "n_checkpoints": len(tables["checkpoint"]),
        "n_heavy": len(tables["patching"]) // cfg.model.n_layers,
        "train_wall_s": train_s,
        "resumed_segments": 1 + sum(b < a for a, b in zip(walls, walls[1:])),
        "analyze_s": analyze_s,
    }
