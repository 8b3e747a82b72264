"""A short timed probe of a run's own configuration on a device: seconds per training step and
per evaluation (live, or of the whole evaluation set), from its initial weights. The dry run
prices runs from it (``reproduce.price_probe``); a new run on a CUDA device reads it to choose
its live subset (``live_groups_for``)."""

from __future__ import annotations

import time

import torch

from ..config import EvalConfig, RunConfig
from ..metrics import evaluate, live_subset
from ..model import build_model, training_forward
from ..task import make_eval_set, make_sampler, make_task
from .step import make_optimizer, train_step

PROBE_STEPS = 6  # timed training steps, after one untimed (allocation, first-call costs)
FULL_SHARE = 0.05  # on a GPU, every group is scored live where a full scoring costs at most this share


def timed_probe(cfg: RunConfig, dev: torch.device, steps: int = PROBE_STEPS, full: bool = False) -> dict[str, float]:
    """``{"s_step", "s_eval"}``: seconds per training step (the mean of ``steps`` after one
    untimed) and of one live evaluation (``eval.live_groups``) of ``cfg``'s run on ``dev``; with
    ``full`` also ``s_full``, one scoring of every group (what ``eval.live_groups = 0`` costs)."""
    task = make_task(cfg.task)
    model = build_model(cfg)
    if dev.type != "cpu":  # (TransformerBridge.to prints a line even for a no-op move)
        model = model.to(dev)
    opt = make_optimizer(cfg, model)
    forward = training_forward(cfg, model)
    sampler = make_sampler(task, cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed)
    batches = [sampler.sample().to(dev) for _ in range(steps + 1)]
    train_step(cfg, forward, opt, batches[0], 0)
    _sync(dev)
    t0 = time.perf_counter()
    for i, b in enumerate(batches[1:]):
        train_step(cfg, forward, opt, b, i + 1)
    _sync(dev)
    out = {"s_step": (time.perf_counter() - t0) / steps}
    ev = make_eval_set(task, cfg.eval).on(dev)
    live = live_subset(cfg.eval.live_groups, ev.groups, cfg.task.K, cfg.eval.eval_seed)
    for key, subset in (("s_eval", live), ("s_full", None))[: 1 + full]:
        t0 = time.perf_counter()
        evaluate(model, ev, live=subset, precision=cfg.train.precision)
        _sync(dev)
        out[key] = time.perf_counter() - t0
    return out


def full_scoring_share(cfg: RunConfig, dev: torch.device) -> float:
    """One full scoring's seconds over those of the ``train.ckpt_every`` steps between two
    checkpoints (the densest spacing outside a transition), measured on ``dev``."""
    t = timed_probe(cfg, dev, full=True)
    return t["s_full"] / (cfg.train.ckpt_every * t["s_step"])


def live_groups_for(cfg: RunConfig, dev: torch.device, share=full_scoring_share) -> int:
    """A new run's ``eval.live_groups``: as given, except the default on a CUDA device, which
    becomes 0 (every group scored live, each crossing exact as it is trained) where ``share``
    measures a full scoring at most ``FULL_SHARE`` of the steps between checkpoints. A CPU never
    probes: there a full scoring costs a large share of a run (docs/design.md, evaluation)."""
    if dev.type != "cuda" or cfg.eval.live_groups != EvalConfig.live_groups:
        return cfg.eval.live_groups
    return 0 if share(cfg, dev) <= FULL_SHARE else cfg.eval.live_groups


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
