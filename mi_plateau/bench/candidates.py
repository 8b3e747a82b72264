"""The benchmarks' training-step candidates: the trainer's own steps (``train.impl`` standard,
fast, bridge) and ``PlainTransformer`` variants, each wrapped as one callable step."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..config import RunConfig, layout_for
from ..model import build_model, training_forward
from ..task import make_sampler, make_task
from ..train import make_optimizer, train_step
from .reference import PlainTransformer

# --- training-step candidates -------------------------------------------------------


def _stepper(cfg: RunConfig, forward: Callable[[Tensor], Tensor], opt: torch.optim.Optimizer):
    """A candidate's step: the trainer's own ``train.train_step`` on the trainer's sampler;
    ``forward`` returns the logits of the loss positions."""
    task = make_task(cfg.task)
    sampler = make_sampler(task, cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed)
    state = {"step": 0, "losses": []}

    def step() -> float:
        state["losses"].append(train_step(cfg, forward, opt, sampler.sample(), state["step"])[0])
        state["step"] += 1
        return state["losses"][-1]

    step.losses = state["losses"]  # type: ignore[attr-defined]
    return step


def make_candidate(cfg: RunConfig, name: str) -> Callable[[], float]:
    """One training-step candidate with its own model (the same initial weights for every
    candidate) and its own sampler (the same batches). Names:

    - ``toolkit``: the trainer's default step, ``model.training_forward`` with
      ``train.impl = "standard"`` on the bridge's parameters, ``make_optimizer``, in the
      config's precision (the default ``auto``: bf16 where the machine has bf16 units);
      ``+fp32`` forces fp32 (``toolkit+fp32``: what auto would be without bf16 units).
    - ``bridge``: the same with ``train.impl = "bridge"`` (TransformerLens' own module; how
      runs written before the option existed trained).
    - ``fast``: the trainer's opt-in ``train.impl = "fast"`` (last block at the loss positions
      only, fused AdamW); ``+compile`` adds ``train.compile = true`` (toolkit+compile too).
    - ``plain``: the reference, PlainTransformer with an independent copy of the weights and
      the same AdamW. Options joined with "+": ``sdpa`` (F.scaled_dot_product_attention),
      ``last`` (last block and unembedding at the loss positions only), ``fused`` (AdamW
      ``fused=True``), ``compile`` (the forward under ``torch.compile``).
    """
    from dataclasses import replace

    bridge = build_model(cfg)
    bridge.train()
    base, *opts = name.split("+")
    kinds = {"toolkit": "standard", "bridge": "bridge", "fast": "fast"}
    if base in kinds and set(opts) <= {"compile", "fp32"}:
        precision = "fp32" if "fp32" in opts else cfg.train.precision
        c = replace(cfg, train=replace(cfg.train, impl=kinds[base], compile="compile" in opts, precision=precision))
        return _stepper(c, training_forward(c, bridge), make_optimizer(c, bridge))
    if base != "plain" or not set(opts) <= {"sdpa", "last", "fused", "compile"}:
        raise ValueError(f"unknown candidate {name!r}")
    o = set(opts)
    plain = PlainTransformer.from_bridge(bridge, cfg, share=False, sdpa="sdpa" in o)
    params = list(plain.parameters())
    tr = cfg.train
    opt = torch.optim.AdamW(
        params,
        lr=tr.lr,
        betas=(tr.beta1, tr.beta2),
        eps=tr.eps,
        weight_decay=tr.weight_decay,
        fused=True if "fused" in o else None,
    )
    pos = layout_for(cfg.task).pred_positions
    start = pos.start if "last" in o else 0
    fwd = lambda t: plain(t, start)[:, pos.start - start : pos.stop - start]
    return _stepper(cfg, torch.compile(fwd) if "compile" in o else fwd, opt)
