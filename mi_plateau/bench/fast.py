"""Training-step candidates (the trainer's steps ``standard``, ``fast`` and ``bridge``, and
``PlainTransformer`` variants) and ``evaluate_packed``, evaluation through the plain module."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from ..config import RunConfig, layout_for
from ..task import BatchSampler, make_task
from .reference import PlainTransformer


@torch.no_grad()
def evaluate_packed(plain: PlainTransformer, ev, batch: int = 4096) -> dict[str, Any]:
    """``metrics.evaluate``'s numbers from less work (an opt-in idea, measured by the bench).

    One forward per batch on a packed sequence: the clean positions 0..seq_len-2 (EOS predicts
    nothing) followed by the selector-swapped positions zs..fp only; a swapped position attends
    to the clean keys before zs (the same tokens, so, causally, the same keys and values) and to
    the swapped positions up to itself. The last block computes only the rows that are read."""
    from ..metrics import candidate_losses, example_correct, group_accuracy, target_loss
    from ..passes.forward import packed_swap_layout

    if not ev.task.cfg.has_selector:
        raise ValueError(f"evaluate_packed: direction {ev.task.cfg.direction!r} has no selector to swap")
    lay, K = ev.task.layout, ev.task.cfg.K
    P, fp, zs = lay.seq_len - 1, lay.first_pred, lay.selector_positions.start
    n_sw = fp + 1 - zs
    positions, mask = packed_swap_layout(lay.seq_len, fp, zs)
    rows = torch.tensor([*range(fp, P), P + n_sw - 1])  # clean target positions, swapped fp
    swapped = ev.swapped_tokens(1)[:, zs : fp + 1]
    out: dict[str, list] = {k: [] for k in ("Lc", "mass", "L1", "full", "correct", "swap")}
    for i in range(0, len(ev.tokens), batch):
        sl = slice(i, i + batch)
        toks = ev.tokens[sl]
        lg = plain.run(torch.cat([toks[:, :P], swapped[sl]], 1), positions, mask, rows)
        logits = lg.new_zeros(len(toks), P, lg.shape[-1])  # metrics read positions fp.. only
        logits[:, fp:] = lg[:, :-1]
        lc, mass = candidate_losses(lg[:, 0], ev.candidates[sl], ev.cand_index[sl])
        out["Lc"].append(lc)
        out["mass"].append(mass)
        out["L1"].append(F.cross_entropy(lg[:, 0], ev.target_first[sl], reduction="none"))
        out["full"].append(target_loss(logits, toks, lay) * len(toks))
        out["correct"].append(example_correct(logits, toks, lay))
        out["swap"].append(candidate_losses(lg[:, -1], ev.candidates[sl], ev.cand_index[sl])[0])
    c = {k: torch.cat(v) if k != "full" else torch.stack(v) for k, v in out.items()}
    acc = group_accuracy(c["correct"], K)
    return {"Lc": c["Lc"].mean().item(), "L1": c["L1"].mean().item(), "full_loss": c["full"].sum().item() / len(ev.tokens),
            "cand_mass": c["mass"].mean().item(), "swap_gap": c["swap"].mean().item() - c["Lc"].mean().item(),
            "acc_mean": float(acc.mean()), "groups_ge80": float((acc >= 0.8 - 1e-9).mean()),
            "groups_100": float((acc >= 1.0 - 1e-9).mean())}


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
