"""Training-step candidates: the trainer's steps (``train.impl`` standard, fast, bridge) and
``PlainTransformer`` variants."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from ..config import RunConfig, layout_for
from ..task import BatchSampler, make_task
from .reference import PlainTransformer


# --- training-step candidates -------------------------------------------------------


def _stepper(cfg: RunConfig, forward: Callable[[Tensor], Tensor], params, opt: torch.optim.Optimizer, loss_rows_only: bool):
    """One training step exactly as ``train._train_loop`` takes it; ``loss_rows_only`` means
    ``forward`` already returns the logits of the loss positions only."""
    from ..train import lr_at

    task = make_task(cfg.task)
    pos = task.layout.pred_positions
    sampler = BatchSampler(task, cfg.train.batch_size, cfg.train.batch_seed)
    state = {"step": 0, "losses": []}

    def step() -> float:
        tokens = sampler.sample()
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, state["step"])
        logits = forward(tokens[:, :-1])
        lg = logits if loss_rows_only else logits[:, pos.start : pos.stop]
        loss = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tokens[:, pos.start + 1 : pos.stop + 1].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.train.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, cfg.train.grad_clip)
        opt.step()
        state["step"] += 1
        state["losses"].append(loss.item())
        return state["losses"][-1]

    step.losses = state["losses"]  # type: ignore[attr-defined]
    return step


def make_candidate(cfg: RunConfig, name: str) -> Callable[[], float]:
    """One training-step candidate with its own model (the same initial weights for every
    candidate) and its own sampler (the same batches). Names:

    - ``toolkit``: the trainer's default step, ``model.training_forward`` with
      ``train.impl = "standard"`` on the bridge's parameters, ``make_optimizer``.
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

    from ..model import build_model, training_forward
    from ..train import make_optimizer

    bridge = build_model(cfg)
    bridge.train()
    base, *opts = name.split("+")
    kinds = {"toolkit": "standard", "bridge": "bridge", "fast": "fast"}
    if base in kinds and set(opts) <= {"compile"}:
        c = replace(cfg, train=replace(cfg.train, impl=kinds[base], compile="compile" in opts))
        return _stepper(c, training_forward(c, bridge), list(bridge.parameters()), make_optimizer(c, bridge), True)
    if base != "plain" or not set(opts) <= {"sdpa", "last", "fused", "compile"}:
        raise ValueError(f"unknown candidate {name!r}")
    o = set(opts)
    plain = PlainTransformer.from_bridge(bridge, cfg, share=False, sdpa="sdpa" in o)
    params = list(plain.parameters())
    tr = cfg.train
    opt = torch.optim.AdamW(params, lr=tr.lr, betas=(tr.beta1, tr.beta2), eps=tr.eps, weight_decay=tr.weight_decay,
                            fused=True if "fused" in o else None)
    start = layout_for(cfg.task).pred_positions.start if "last" in o else 0
    fwd = (lambda t: plain(t, start))
    return _stepper(cfg, torch.compile(fwd) if "compile" in o else fwd, params, opt, "last" in o)
