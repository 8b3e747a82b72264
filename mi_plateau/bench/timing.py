"""Timing helpers of the bench: ABBA alternation, the fp32 matmul peak, nominal step FLOPs,
and a description of the machine."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from typing import Any

import torch

from ..config import RunConfig, layout_for
from ..task import D_VOCAB


def alternate(cands: dict[str, Callable[[], Any]], reps: int, inner: int) -> dict[str, list[float]]:
    """Seconds of each call of each candidate, run in ABBA order: rep r runs every candidate
    ``inner`` times, in the listed order for even r and reversed for odd r."""
    times: dict[str, list[float]] = {k: [] for k in cands}
    names = list(cands)
    for r in range(reps):
        for k in names if r % 2 == 0 else names[::-1]:
            for _ in range(inner):
                t = time.perf_counter()
                cands[k]()
                times[k].append(time.perf_counter() - t)
    return times


def matmul_peak_gflops(n: int = 2048, reps: int = 5) -> float:
    """Best fp32 ``torch.mm`` rate of an n x n product, GFLOP/s (2 n^3 FLOPs each)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(timed(lambda: torch.mm(a, b)) for _ in range(reps))
    return 2 * n**3 / best / 1e9


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def train_step_flops(cfg: RunConfig) -> float:
    """Nominal FLOPs of one training step (formula in the ``mi_plateau.bench`` docstring)."""
    m, B = cfg.model, cfg.train.batch_size
    P = layout_for(cfg.task).seq_len - 1
    hd = m.n_heads * m.d_head
    n_mm = m.n_layers * (4 * m.d_model * hd + 2 * m.d_model * m.d_mlp) + m.d_model * D_VOCAB
    return 6 * n_mm * B * P + 3 * m.n_layers * B * 4 * P * P * hd


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
