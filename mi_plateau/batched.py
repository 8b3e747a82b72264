"""The batched trainer: M runs whose tensors have the same shapes train in one process as one
stacked model.

Each run (a ``train.Member``) keeps its own TransformerBridge, AdamW, sampler, evaluation set,
learning-rate schedule, clipping, stopping rule and ordinary run folder with its own checkpoints
and exact resume. Only the training forward and backward are batched: at every step the
members' parameters are stacked along a new leading dimension, ``torch.func.vmap`` runs the
plain functional forward (``model.forward``) over the stack and the members' batches, each
member's mean cross-entropy is taken on its own slice, and one backward of their sum gives every
member the gradient of its own loss (the members share no parameter). Each member then clips and
steps on its own. A member that stops drops out; the others go on.

Batches of different sizes (epoch batching keeps each epoch's last partial batch, and members
have different D) are padded to the batch size with a weight of 0 on the padding rows.

Runs are batchable when ``batch_key`` agrees: model shapes, batch size, sequence layout (len_z,
direction) and ``train.impl = "standard"`` without compile. Losses match the single-run trainer
to float rounding (the stacked matmuls sum in another order), not bit for bit; a batched run
resumed in a batch of the same members continues bit-identically.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import torch

from .checkpoints import Run, RunError, RunLock
from .config import RunConfig, layout_for, validate
from .devices import check_precision
from .devices import resolve as resolve_device
from .train import Member, apply_update, batch_loss, open_config


def batch_key(cfg: RunConfig) -> tuple:
    """Runs with equal keys can share a stacked model."""
    m, lay = cfg.model, layout_for(cfg.task)
    return (
        m.n_layers,
        m.n_heads,
        m.d_model,
        m.d_head,
        m.d_mlp,
        m.act_fn,
        m.normalization_type,
        cfg.train.batch_size,
        lay.seq_len,
        tuple(lay.pred_positions),
        cfg.train.impl,
        cfg.train.compile,
        cfg.train.precision,
    )


def check_batchable(cfgs: Sequence[RunConfig]) -> None:
    for c in cfgs:
        if c.train.impl != "standard" or c.train.compile:
            raise RunError(
                f"batched training needs train.impl='standard' without compile (got impl={c.train.impl!r}, "
                f"compile={c.train.compile})"
            )
    keys = {batch_key(c) for c in cfgs}
    if len(keys) > 1:
        raise RunError(
            "these runs cannot be batched: they differ in model shape, batch size or sequence layout "
            "(train them apart, or let the sweep runner group them)"
        )


def stacked_forward(cfg: RunConfig):
    """``f(stacked_params, tokens[M, batch, seq_len - 1]) -> logits [M, batch, n_pred, vocab]``."""
    from torch.func import vmap

    from .devices import in_precision
    from .model.forward import Weights, forward

    m = cfg.model
    pos = layout_for(cfg.task).pred_positions

    def one(params, tokens):
        W = Weights.of(params, m)
        return forward(W, tokens)[:, pos.start : pos.stop]

    return in_precision(vmap(one), cfg.train.precision)


def _pad(batch: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    n = batch.shape[0]
    if n == size:
        return batch, None
    weight = (torch.arange(size, device=batch.device) < n).to(torch.float32)
    return torch.cat([batch, batch[:1].expand(size - n, -1)]), weight


def stacked_step(f, active: Sequence, batch_size: int) -> list[tuple[float, float, float, torch.Tensor]]:
    """One update of every member (anything with ``cfg``, ``model``, ``opt``, ``sampler`` and
    ``step``) through the stacked forward ``f``; returns, per member, its loss, its gradient's
    norm before clipping, its first-token loss (``train.first_token_loss``) and its batch. Does
    not count the step (``Member.after_step`` does)."""
    from .train import first_token_loss

    params = [m.model.state_dict(keep_vars=True) for m in active]
    stacked = {k: torch.stack([p[k] for p in params]) for k in params[0]}
    batches = [m.sampler.sample().to(m.device, non_blocking=True) for m in active]
    padded = [_pad(b, batch_size) for b in batches]
    tokens = torch.stack([t for t, _ in padded])
    logits = f(stacked, tokens[:, :, :-1])
    losses = [batch_loss(m.cfg, logits[i], tokens[i], w) for i, (m, (_, w)) in enumerate(zip(active, padded))]
    for m in active:
        m.opt.zero_grad(set_to_none=True)
    torch.stack(losses).sum().backward()
    norms = [apply_update(m.cfg, m.opt, m.step) for m in active]
    firsts = [first_token_loss(m.cfg, logits[i], tokens[i], w) for i, (m, (_, w)) in enumerate(zip(active, padded))]
    return [(loss.item(), norm, first, b) for loss, norm, first, b in zip(losses, norms, firsts, batches)]


def train_members(members: Sequence[Member], *, progress: bool = True) -> None:
    """Train the members (opened, locked) until each stops."""
    active = [m for m in members if not m.done]
    if not active:
        return
    check_batchable([m.cfg for m in active])
    f = stacked_forward(active[0].cfg)
    B = active[0].cfg.train.batch_size
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=sum(m.cfg.train.max_steps - m.step for m in active),
            desc=f"{len(active)} runs batched",
            unit="run-step",
            dynamic_ncols=True,
            file=sys.stderr,
        )
    try:
        while active:
            for m, (loss, norm, first, batch) in zip(active, stacked_step(f, active, B)):
                m.after_step(loss, norm, first, batch)
            if bar is not None:
                bar.update(len(active))
            active = [m for m in active if not m.done]
            if bar is not None:
                bar.set_postfix(running=len(active))
    finally:
        if bar is not None:
            bar.close()


def train_batched(
    items: Sequence[tuple[RunConfig | None, str | os.PathLike]],
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
    device: str | torch.device | None = "auto",
) -> list[Run]:
    """Train several runs (``(config, out)`` pairs; config None resumes the stored one) in one
    process as one stacked model on ``device`` (``devices.resolve``); each folder is locked,
    opened and resumed as ``train.train`` does, and refused the same way."""
    dev = resolve_device(device)
    runs = [Run(out) for _, out in items]
    if len({r.path.resolve() for r in runs}) < len(runs):
        raise RunError("the same run folder is named twice")
    for (cfg, _), run in zip(items, runs):
        if cfg is not None:
            validate(cfg)
            check_precision(dev, cfg.train.precision)
        if run.path.is_symlink():
            raise RunError(f"{run.path}: is a symbolic link; give the run folder itself")
    if items:
        check_batchable([c for c, _ in items if c is not None])
    with ExitStack() as stack:
        for run in runs:
            stack.enter_context(RunLock(run.path))
        # every folder checked before any is written: a refusal of the last leaves the first untouched
        check_batchable([open_config(cfg, run, resume, argv, dev, write=False) for (cfg, _), run in zip(items, runs)])
        cfgs = [open_config(cfg, run, resume, argv, dev) for (cfg, _), run in zip(items, runs)]
        members = [Member(c, r, dev) for c, r in zip(cfgs, runs)]
        train_members(members, progress=progress)
    return runs


def group_batches(runs: Sequence[tuple[Path, RunConfig]], size: int) -> list[list[tuple[Path, RunConfig]]]:
    """Split runs into batches of at most ``size`` batchable runs (same ``batch_key``), keeping
    their order within a key; runs that cannot be batched (another impl) go alone."""
    by: dict[tuple, list[tuple[Path, RunConfig]]] = {}
    alone = []
    for p, c in runs:
        if c.train.impl != "standard" or c.train.compile:
            alone.append([(p, c)])
        else:
            by.setdefault(batch_key(c), []).append((p, c))
    out = [group[i : i + size] for group in by.values() for i in range(0, len(group), size)]
    return out + alone
