"""Measurements on the fixed evaluation set, and the run-level summaries (SPEC section 4).

All losses are in nats.

- Candidate loss ``Lc``: cross-entropy of the first target token with the softmax restricted
  to the K candidate first characters of the example's group. A z-blind model that spreads its
  mass evenly over the candidates has Lc = log K exactly. The canonical loss of the toolkit.
- First-token loss ``L1``: the same cross-entropy over the whole vocabulary.
- Full target loss: mean next-token cross-entropy over the target tokens and EOS.
- Candidate mass: probability (full softmax) on the group's K candidates; near 1 once P(A1|B)
  is learned, whether or not z is used.
- z-swap gap: Lc with each example's selector replaced by another selector of the set, minus
  clean Lc. Cheap per-checkpoint version: one replacement, selector k -> k+1 mod K.
- Per-group accuracy: fraction of a group's K examples whose target tokens are all predicted
  correctly by teacher-forced argmax.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from .config import Layout
from .task import EvalSet


def candidate_losses(
    first_logits: Float[Tensor, "batch vocab"],
    candidates: Int[Tensor, "batch n_cand"],
    cand_index: Int[Tensor, "batch"],
) -> tuple[Float[Tensor, "batch"], Float[Tensor, "batch"]]:
    """Per-example (Lc, candidate mass). Lc = -log softmax(logits[candidates])[true]."""
    cand_logits = first_logits.gather(1, candidates)
    Lc = -cand_logits.log_softmax(-1).gather(1, cand_index[:, None]).squeeze(1)
    mass = (cand_logits.logsumexp(-1) - first_logits.logsumexp(-1)).exp()
    return Lc, mass


def target_loss(logits: Float[Tensor, "batch pos vocab"], tokens: Int[Tensor, "batch pos"], layout: Layout) -> Tensor:
    """Mean next-token cross-entropy over the target tokens and EOS (what training minimises)."""
    pos = layout.pred_positions
    lg = logits[:, pos.start : pos.stop]
    tg = tokens[:, pos.start + 1 : pos.stop + 1]
    return F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1))


def example_correct(logits: Float[Tensor, "batch pos vocab"], tokens: Int[Tensor, "batch pos"], layout: Layout) -> Tensor:
    """True where every target token (EOS excluded) is the teacher-forced argmax."""
    start = layout.first_pred
    pred = logits[:, start : start + layout.target_len].argmax(-1)
    gold = tokens[:, start + 1 : start + 1 + layout.target_len]
    return (pred == gold).all(-1)


def group_accuracy(correct: Tensor, K: int) -> np.ndarray:
    """Per-group accuracy from group-major per-example correctness (EvalSet row order)."""
    return correct.float().reshape(-1, K).mean(-1).cpu().numpy()


@torch.no_grad()
def evaluate(model, ev: EvalSet, batch: int = 256) -> dict[str, Any]:
    """Cheap per-checkpoint metrics on the evaluation set (means over its examples).

    The clean rows and the selector-swapped ones run as prefix packs (``passes.packing``): one
    packed sequence per group in which every distinct prefix is computed once (the K examples
    share BOS, B and SEP; a swapped input is, up to the position that predicts A1, another
    example's clean input), and the last block computes only the positions that are read. The
    numbers equal ``evaluate_reference`` (two plain bridge forwards) to float precision.
    """
    from .passes.forward import Weights, run_packed
    from .passes.packing import eval_packing

    lay = ev.task.layout
    K, N = ev.task.cfg.K, len(ev.tokens)
    P, fp = lay.seq_len - 1, lay.first_pred
    sel = ev.task.cfg.has_selector
    pk = eval_packing(ev, (1,) if sel else ())
    m = model.cfg
    W = Weights.from_state_dict(model.state_dict(), m.n_layers, m.n_heads, m.d_head, getattr(m, "act_fn", "gelu"), getattr(m, "eps", 1e-5))
    logits = torch.zeros(N, P, W.W_U.shape[1])  # the metrics read positions fp.. only
    swap_fp = torch.empty(N, W.W_U.shape[1]) if sel else None
    for c, seqs in pk.chunks(batch):
        clean, swapped = seqs[seqs < N], seqs[seqs >= N]
        want = pk.node[clean][:, fp:P].contiguous()  # each clean row's nodes at fp..P-1
        read = torch.unique(torch.cat([want.reshape(-1), pk.node[swapped, fp]]))
        lg = run_packed(W, pk.tokens[c], pk.positions[c], pk.blocked_for(c), read)
        logits[clean, fp:] = lg[(pk.pack[clean] - c.start)[:, None], torch.searchsorted(read, want)]
        if sel:
            swap_fp[swapped - N] = lg[pk.pack[swapped] - c.start, torch.searchsorted(read, pk.node[swapped, fp])]
    Lc, mass = candidate_losses(logits[:, fp], ev.candidates, ev.cand_index)
    L1 = F.cross_entropy(logits[:, fp], ev.target_first, reduction="none")
    full = target_loss(logits, ev.tokens, lay).item()
    swap = candidate_losses(swap_fp, ev.candidates, ev.cand_index)[0] if sel else None
    return _metrics(Lc, L1, mass, full, example_correct(logits, ev.tokens, lay), swap, K)


def _metrics(Lc, L1, mass, full, correct, swap, K) -> dict[str, Any]:
    acc = group_accuracy(correct, K)
    return {
        "Lc": Lc.mean().item(),
        "L1": L1.mean().item(),
        "full_loss": full,
        "cand_mass": mass.mean().item(),
        "swap_gap": (swap.mean().item() - Lc.mean().item()) if swap is not None else float("nan"),
        "acc_mean": float(acc.mean()),
        "groups_ge80": float((acc >= 0.8 - 1e-9).mean()),
        "groups_100": float((acc >= 1.0 - 1e-9).mean()),
    }


@torch.no_grad()
def evaluate_reference(model, ev: EvalSet, batch: int = 256) -> dict[str, Any]:
    """``evaluate`` the plain way: the bridge on the clean and on the swapped input."""
    layout = ev.task.layout
    K = ev.task.cfg.K
    fp = layout.first_pred
    Lc, L1, mass, full, correct, swap = [], [], [], [], [], []
    has_swap = ev.task.cfg.has_selector
    swapped = ev.swapped_tokens(1) if has_swap else None
    for i in range(0, len(ev.tokens), batch):
        sl = slice(i, i + batch)
        toks = ev.tokens[sl]
        logits = model(toks)
        lc, m = candidate_losses(logits[:, fp], ev.candidates[sl], ev.cand_index[sl])
        Lc.append(lc)
        mass.append(m)
        L1.append(F.cross_entropy(logits[:, fp], ev.target_first[sl], reduction="none"))
        full.append(target_loss(logits, toks, layout) * len(toks))
        correct.append(example_correct(logits, toks, layout))
        if has_swap:
            # causal model: the first target prediction needs only the prefix up to fp
            sw_logits = model(swapped[sl, : fp + 1])[:, fp]
            swap.append(candidate_losses(sw_logits, ev.candidates[sl], ev.cand_index[sl])[0])
    return _metrics(torch.cat(Lc), torch.cat(L1), torch.cat(mass), sum(f.item() for f in full) / len(ev.tokens),
                    torch.cat(correct), torch.cat(swap) if has_swap else None, K)


# Run-level summaries live in the torch-free module ``summaries`` (light commands stay quick);
# re-exported here for convenience.
from .summaries import nan_to_none, plateau_height, summarize, tau  # noqa: E402,F401
