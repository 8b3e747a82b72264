"""The training step and its parts: the learning-rate schedule, AdamW, the loss over the target
positions, the clipped update, and the optimizer state as flat tensors for the resume files.
The single-run trainer and the bench step with ``train_step``; the batched trainer uses its
parts (``batch_loss``, ``apply_update``)."""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from ..checkpoints import RunError
from ..config import RunConfig, layout_for


def lr_at(cfg: RunConfig, step: int) -> float:
    """Learning rate for the update that takes the model from `step` to `step + 1`."""
    tr = cfg.train
    if tr.warmup_steps and step < tr.warmup_steps:
        return tr.lr * (step + 1) / tr.warmup_steps
    if tr.schedule == "cosine":
        span = max(1, tr.max_steps - tr.warmup_steps)
        return tr.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - tr.warmup_steps) / span)))
    return tr.lr


def make_optimizer(cfg: RunConfig, model: torch.nn.Module) -> torch.optim.AdamW:
    """AdamW; ``train.impl = "fast"`` takes the fused kernel (the same update and state, rounded
    differently)."""
    tr = cfg.train
    return torch.optim.AdamW(
        model.parameters(),
        lr=tr.lr,
        betas=(tr.beta1, tr.beta2),
        eps=tr.eps,
        weight_decay=tr.weight_decay,
        fused=True if tr.impl == "fast" else None,
    )


def train_step(
    cfg: RunConfig, forward, opt: torch.optim.Optimizer, tokens: torch.Tensor, step: int
) -> tuple[float, float, float]:
    """One update: the mean next-token cross-entropy over the target positions (A1..A4, EOS) of
    the batch ``tokens``, backward, optional clipping, AdamW at ``lr_at(step)``; returns the
    loss, the gradient's norm before clipping and the batch's first-token loss
    (``first_token_loss``). ``forward`` maps the inputs [batch, seq_len - 1] (the EOS input
    predicts nothing) to the logits of the loss positions (``model.training_forward``). The trainer and the bench
    both step with this function; the batched trainer uses its parts (``batch_loss``,
    ``apply_update``)."""
    logits = forward(tokens[:, :-1])
    loss = batch_loss(cfg, logits, tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = apply_update(cfg, opt, step)
    return loss.item(), norm, first_token_loss(cfg, logits, tokens)


def first_token_loss(
    cfg: RunConfig, logits: torch.Tensor, tokens: torch.Tensor, weight: torch.Tensor | None = None
) -> float:
    """The batch's mean cross-entropy (whole vocabulary) of its first target token, read from
    the step's loss-position ``logits`` (the first of them predicts A1) without a gradient:
    Table 11's original z-gap subtracts its mean over the steps between two checkpoints.
    ``weight`` as in ``batch_loss``."""
    first = layout_for(cfg.task).pred_positions.start + 1
    with torch.no_grad():
        ce = F.cross_entropy(logits[:, 0].float(), tokens[:, first], reduction="none")
        return float(ce.mean() if weight is None else (ce * weight).sum() / weight.sum())


def batch_loss(
    cfg: RunConfig, logits: torch.Tensor, tokens: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean cross-entropy of the loss-position ``logits`` [batch, n_pred, vocab] against the next
    tokens of ``tokens`` [batch, seq_len]; ``weight`` [batch] (0 or 1) leaves padded rows out."""
    pos = layout_for(cfg.task).pred_positions
    target = tokens[:, pos.start + 1 : pos.stop + 1]
    if weight is None:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none").view(target.shape)
    return (ce * weight[:, None]).sum() / (weight.sum() * target.shape[1])


def apply_update(cfg: RunConfig, opt: torch.optim.Optimizer, step: int) -> float:
    """Clip (if ``grad_clip``) and take AdamW's step at ``lr_at(step)`` from the gradients in
    place; returns the gradient's global L2 norm before clipping (read only: without clipping
    the update is the same as if it were not computed)."""
    for g in opt.param_groups:
        g["lr"] = lr_at(cfg, step)
    params = [p for g in opt.param_groups for p in g["params"]]
    if cfg.train.grad_clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, cfg.train.grad_clip)
    else:
        norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    opt.step()
    return float(norm)


def optimizer_tensors(opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """AdamW's state as flat tensors ``opt.<param index>.<step|exp_avg|exp_avg_sq>`` (resume files)."""
    out = {}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            out[f"opt.{i}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    return out


def load_optimizer(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], path: Path | None = None) -> None:
    sd = opt.state_dict()
    params = [p for g in opt.param_groups for p in g["params"]]
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, v in tensors.items():
        if key.startswith("opt."):
            _, i, k = key.split(".", 2)
            ok = i.isdigit() and int(i) < len(params) and k in ("step", "exp_avg", "exp_avg_sq")
            if ok:
                want = () if k == "step" else tuple(params[int(i)].shape)
                ok = tuple(v.shape) == want and (k == "step" or v.is_floating_point())
            if not ok:
                raise RunError(f"{path}: optimizer state {key!r} does not match this model")
            state.setdefault(int(i), {})[k] = v
    for i, st in state.items():
        if set(st) != {"step", "exp_avg", "exp_avg_sq"}:
            raise RunError(f"{path}: optimizer state for parameter {i} is incomplete")
    sd["state"] = state
    opt.load_state_dict(sd)
