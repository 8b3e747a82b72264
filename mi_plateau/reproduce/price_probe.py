"""What a run costs on this machine, from a short timed probe of its own configuration: seconds
per training step (its model, batch size, precision, step kind) and per live evaluation (its
K, evaluation set and live subset), cached per shape in ``<root>/probe_cache.json`` so that a
recipe's dry run probes each shape once. A run's price: its steps x the step's seconds plus its
evaluations x the evaluation's (``run_seconds``); the settlement at the end is not priced."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..checkpoints import atomic_write_json

CACHE = "probe_cache.json"
TRANSITION_TAUS = 1.0  # the denser checkpoint spacing holds for about one tau around tau


def shape_key(cfg, device: str) -> str:
    """What the probe's two numbers depend on, as one string: the model, the batch, the step's
    kind and precision, the task's sequence and K, the evaluation set and live subset, and this
    machine (CPU model, threads, device)."""
    m, t, e, tk = cfg.model, cfg.train, cfg.eval, cfg.task
    parts = {
        "model": [m.n_layers, m.n_heads, m.d_model, m.d_head, m.d_mlp, m.act_fn],
        "train": [t.batch_size, t.impl, t.compile, t.precision],
        "task": [tk.K, tk.len_z, tk.direction, min(e.n_groups, tk.n_b)],
        "live": e.live_groups,
        "machine": [platform.processor() or platform.machine(), os.environ.get("OMP_NUM_THREADS"), device],
    }
    return json.dumps(parts, sort_keys=True)


def probe(cfg, device: str = "cpu") -> dict[str, float]:
    """``train.timing.timed_probe`` of ``cfg``'s run on ``device``, one thread: ``{"s_step":
    ..., "s_eval": ...}``; a precision the device cannot run is refused in one line."""
    import torch

    # here, not at the top: torch (cost's dry run imports this module)
    from ..devices import check_precision
    from ..train.timing import timed_probe

    dev = torch.device(device)
    check_precision(dev, cfg.train.precision)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a run trains: one thread each
    try:
        return timed_probe(cfg, dev)
    finally:
        torch.set_num_threads(threads)


def prober(root: str | Path, device: str = "cpu") -> Callable[[Any], dict[str, float]]:
    """``price(cfg)``: the probe's numbers for ``cfg``'s shape, from ``<root>/probe_cache.json``
    where it holds them, else probed now and added to it."""
    path = Path(root) / CACHE

    def price(cfg) -> dict[str, float]:
        cache = json.loads(path.read_text()) if path.exists() else {}
        key = shape_key(cfg, device)
        if key not in cache:
            cache[key] = probe(cfg, device)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, cache)
        return cache[key]

    return price


def evaluations(cfg, steps: float) -> float:
    """The evaluations a run of ``steps`` steps makes: one every ``ckpt_every`` steps, and one
    every ``ckpt_every_transition`` for about ``TRANSITION_TAUS`` tau around its tau (taken as
    steps / tau_margin, the tau stop's)."""
    t = cfg.train
    tau = steps / t.tau_margin
    extra = max(0.0, TRANSITION_TAUS * tau * (1 / t.ckpt_every_transition - 1 / t.ckpt_every))
    return steps / t.ckpt_every + extra


def run_seconds(cfg, price: dict[str, float], steps: float) -> float:
    """The seconds ``steps`` steps of ``cfg``'s run should take here: training and live
    evaluation at the probe's ``price``."""
    return steps * price["s_step"] + evaluations(cfg, steps) * price["s_eval"]
