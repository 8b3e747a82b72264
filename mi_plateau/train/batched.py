"""The batched trainer: M runs whose tensors have the same shapes train in one process as one
stacked model.

Each run (a ``train.Member``) keeps its own sampler, evaluation set, learning-rate schedule,
clipping, stopping rule and ordinary run folder with its own checkpoints and exact resume. The
training state is one ``train.stack.Stack``: every trainable tensor of the members stacked into
one leaf ``[M, ...]`` with AdamW's moments beside it, so ``torch.func.vmap`` runs the plain
functional forward (``model.forward``) over the stack and the members' batches, each member's
mean cross-entropy is taken on its own slice, one backward of their sum gives every member the
gradient of its own loss (the members share no parameter), and one fused update clips and steps
every member with its own learning rate and clipping norm. Nothing inside the step is read back
to the host: losses, gradient norms and first-token losses accumulate in device buffers, read
when a member's checkpoint is due; only then does the member's own module and AdamW receive its
slice (``Stack.sync``), which its checkpoint and resume files record in the single-run format. A
member that stops drops out of the stack; the others go on.

Batches of different sizes (epoch batching keeps each epoch's last partial batch, and members
have different D) are padded to the batch size with a weight of 0 on the padding rows.

Runs are batchable when ``batch_key`` agrees: model shapes, batch size, sequence layout (len_z,
direction) and ``train.impl = "standard"`` without compile. Losses match the single-run trainer
to float rounding (the stacked matmuls sum in another order, the bias corrections are tensors),
not bit for bit; a batched run resumed in a batch of the same members continues bit-identically.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..checkpoints import Run, RunError, RunLock
from ..config import RunConfig, RunOptions, layout_for, validate
from ..config.options import with_old_keywords
from ..devices import check_precision, in_precision, use_threads
from ..devices import resolve as resolve_device
from ..model.forward import Weights, forward
from .folder import open_config
from .member import Member
from .stack import Stack
from .step import batch_loss
from .tracking import require_tracker


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


# the biases a single run's autocast hands to addmm in the low precision with their matmul; under
# vmap a linear layer's bias is added apart, so the stacked forward casts them itself
LINEAR_BIASES = tuple(f".{n}.bias" for n in ("attn.q", "attn.k", "attn.v", "attn.o", "mlp.in", "mlp.out"))


def stacked_forward(cfg: RunConfig):
    """``f(stacked_params, tokens[M, batch, seq_len - 1]) -> logits [M, batch, n_pred, vocab]``.
    Under bf16 the linear layers' biases join their matmuls in bf16, as in a single run (the
    logits equal a single run's; without the cast, a stacked step ran 1.1x slower on a CPU)."""
    from torch.func import vmap

    m = cfg.model
    pos = layout_for(cfg.task).pred_positions

    def one(params, tokens):
        kind = tokens.device.type
        if torch.is_autocast_enabled(kind):
            low = torch.get_autocast_dtype(kind)
            params = {k: v.to(low) if k.endswith(LINEAR_BIASES) else v for k, v in params.items()}
        W = Weights.of(params, m)
        return forward(W, tokens)[:, pos.start : pos.stop]

    return in_precision(vmap(one), cfg.train.precision)


def _pad(batch: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    n = batch.shape[0]
    if n == size:
        return batch, None
    weight = (torch.arange(size, device=batch.device) < n).to(torch.float32)
    return torch.cat([batch, batch[:1].expand(size - n, -1)]), weight


def first_token_losses(
    cfg: RunConfig, logits: torch.Tensor, tokens: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """Per member, its batch's mean whole-vocabulary cross-entropy of the first target token
    (``train.first_token_loss``, as a device tensor ``[M]``; padding rows weigh 0)."""
    first = layout_for(cfg.task).pred_positions.start + 1
    with torch.no_grad():
        m, b, v = logits.shape[0], logits.shape[1], logits.shape[-1]
        ce = F.cross_entropy(
            logits[:, :, 0].float().reshape(m * b, v), tokens[:, :, first].reshape(-1), reduction="none"
        )
        return (ce.view(m, b) * weights).sum(1) / weights.sum(1)


def stacked_step(f, stack: Stack, batch_size: int) -> list[torch.Tensor]:
    """One update of every member of ``stack`` through the stacked forward ``f``: each member's
    batch (drawn by its own sampler: the single run's batches), its weighted loss, one backward
    of their sum (the members share no parameter), one fused clipped AdamW step
    (``Stack.update``); the losses, norms and first-token losses go into the stack's device
    buffers. No value is read back to the host. Returns the members' batches (host tensors)."""
    members = stack.members
    dev = members[0].device
    batches = [m.sampler.sample() for m in members]
    padded = [_pad(b, batch_size) for b in batches]
    tokens = torch.stack([t for t, _ in padded]).to(dev, non_blocking=True)
    weights = torch.stack([w if w is not None else torch.ones(batch_size) for _, w in padded]).to(
        dev, non_blocking=True
    )
    lr = stack.lrs()
    logits = f(stack.weights(), tokens[:, :, :-1])
    losses = torch.stack([batch_loss(m.cfg, logits[i], tokens[i], weights[i]) for i, m in enumerate(members)])
    losses.sum().backward()
    norm, clipped = stack.update(lr)
    stack.stats.add(losses, first_token_losses(members[0].cfg, logits, tokens, weights), norm, clipped)
    return batches


def train_members(members: Sequence[Member], *, progress: bool = True) -> None:
    """Train the members (opened, locked) until each stops, as one ``Stack``: a member whose
    checkpoint is due gets its slice of the stack and its means over the steps since its last
    one (``Member.take_checkpoint``); a member that stops drops out of the stack."""
    active = [m for m in members if not m.done]
    if not active:
        return
    check_batchable([m.cfg for m in active])
    f = stacked_forward(active[0].cfg)
    B = active[0].cfg.train.batch_size
    stack = Stack(active)
    since = [0] * len(active)
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
        while stack.members:
            batches = stacked_step(f, stack, B)
            for i, (m, batch) in enumerate(zip(stack.members, batches)):
                since[i] += 1
                if m.count(batch):
                    stack.sync(i)
                    loss, norms, first = stack.stats.take(i, since[i], m.cfg.train.grad_clip)
                    m.take_checkpoint(loss, norms, first)
                    since[i] = 0
            if bar is not None:
                bar.update(len(stack.members))
            keep = [i for i, m in enumerate(stack.members) if not m.done]
            if len(keep) < len(stack.members):
                since = [since[i] for i in keep]
                stack.keep(keep)
                if bar is not None:
                    bar.set_postfix(running=len(keep))
    finally:
        if bar is not None:
            bar.close()


def train_batched(
    items: Sequence[tuple[RunConfig | None, str | os.PathLike]],
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
    options: RunOptions | None = None,
    **old: Any,
) -> list[Run]:
    """Train several runs (``(config, out)`` pairs; config None resumes the stored one) in one
    process as one stacked model on ``options.device`` (``devices.resolve``) with
    ``options.threads``; each folder is locked, opened and resumed as ``train.train`` does, and
    refused the same way (``device=``: deprecated, as there)."""
    options = with_old_keywords(options, old, "train_batched")
    use_threads(options.threads)
    dev = resolve_device(options.device)
    runs = [Run(out) for _, out in items]
    if len({r.path.resolve() for r in runs}) < len(runs):
        raise RunError("the same run folder is named twice")
    for (cfg, _), run in zip(items, runs):
        if cfg is not None:
            validate(cfg)
            check_precision(dev, cfg.train.precision)
            require_tracker(cfg)
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
        members = []
        for c, r in zip(cfgs, runs):
            members.append(Member(c, r, dev))
            stack.callback(members[-1].close)  # each run's tracker logs into its own folder
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
