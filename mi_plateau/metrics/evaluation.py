"""The evaluation's forward passes and the checkpoint metrics of both families (package docstring)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from ..config import Layout
from ..definitions import definition
from ..devices import autocast
from ..model.forward import Weights
from ..summaries import ACC_THRESHOLD, ACC_TOL, estimate
from ..task import EvalSet
from .live import Live
from .packed import CHUNK, packed_forward, string_logprob


def candidate_losses(
    first_logits: Float[Tensor, "batch vocab"],
    candidates: Int[Tensor, "batch n_cand"],
    cand_index: Int[Tensor, batch],
) -> tuple[Float[Tensor, batch], Float[Tensor, batch]]:
    """Per-example (Lc, candidate mass). Lc = -log softmax(logits[candidates])[true]."""
    cand_logits = first_logits.gather(1, candidates)
    Lc = -cand_logits.log_softmax(-1).gather(1, cand_index[:, None]).squeeze(1)
    mass = (cand_logits.logsumexp(-1) - first_logits.logsumexp(-1)).exp()
    return Lc, mass


def first_token_rows(fp_logits: Float[Tensor, "batch vocab"], ev: EvalSet) -> tuple[Tensor, Tensor, Tensor]:
    """Per row of ``ev``: (Lc, candidate mass, L1) from its logits at the position that predicts A1."""
    Lc, mass = candidate_losses(fp_logits, ev.candidates, ev.cand_index)
    return Lc, mass, F.cross_entropy(fp_logits, ev.target_first, reduction="none")


def target_loss(logits: Float[Tensor, "batch pos vocab"], tokens: Int[Tensor, "batch pos"], layout: Layout) -> Tensor:
    """Mean next-token cross-entropy over the target tokens and EOS (what training minimises)."""
    pos = layout.pred_positions
    lg = logits[:, pos.start : pos.stop]
    tg = tokens[:, pos.start + 1 : pos.stop + 1]
    return F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tg.reshape(-1))


def example_correct(
    logits: Float[Tensor, "batch pos vocab"], tokens: Int[Tensor, "batch pos"], layout: Layout
) -> Tensor:
    """True where every target token (EOS excluded) is the teacher-forced argmax."""
    start = layout.first_pred
    pred = logits[:, start : start + layout.target_len].argmax(-1)
    gold = tokens[:, start + 1 : start + 1 + layout.target_len]
    return (pred == gold).all(-1)


def group_means(x: Tensor, K: int) -> Tensor:
    """Per group: the mean of ``x`` [..., row] over its K rows (EvalSet rows are group-major)."""
    return x.reshape(*x.shape[:-1], -1, K).mean(-1)


def group_accuracy(correct: Tensor, K: int) -> np.ndarray:
    """Per-group accuracy from group-major per-example correctness (EvalSet row order)."""
    return group_means(correct.float(), K).cpu().numpy()


def accuracy_shares(acc):
    """Over the last axis of per-group accuracies (a tensor or an array): the mean, the share of
    groups at >= ``ACC_THRESHOLD`` and the share at 1. Each keeps its input's kind: float32 shares
    from a tensor (the passes), float64 from an array (``evaluate``, the bootstrap)."""
    share = (lambda m: m.float().mean(-1)) if isinstance(acc, Tensor) else (lambda m: m.mean(-1))
    return acc.mean(-1), share(acc >= ACC_THRESHOLD - ACC_TOL), share(acc >= 1 - ACC_TOL)


def accuracy_stats(acc, family: str) -> dict[str, float]:
    """``accuracy_shares`` of per-group accuracies [group], named as the family's columns
    (``definitions``: acc_mean, ge80, eq100); NaN where ``acc`` is None."""
    d = definition(family)
    vals = accuracy_shares(acc) if acc is not None else [float("nan")] * 3
    return {k: float(v) for k, v in zip((d.acc_mean, d.ge80, d.eq100), vals)}


def sequence_losses(scores: Float[Tensor, "batch K"], index: Int[Tensor, batch]) -> tuple[Float[Tensor, batch], Tensor]:
    """Per-example (L_seq, candidate-correct) from the K candidate scores (log-probabilities of
    whole target strings): ``L_seq = -log softmax(scores)[index]``, correct = argmax is index."""
    L_seq = -scores.log_softmax(-1).gather(1, index[:, None]).squeeze(1)
    return L_seq, scores.argmax(-1) == index


def evaluate(
    model, ev: EvalSet, batch: int = CHUNK, live: Live | None = None, sequence: bool = True, precision: str = "fp32"
) -> dict[str, Any]:
    """``evaluate_in`` under ``precision``: "fp32" (the default), or "bf16" autocast (matmuls in
    bf16, reductions and losses as autocast keeps them in fp32; a bf16 run's live checkpoints)."""
    with torch.no_grad(), autocast(next(iter(model.parameters())).device, precision):
        return evaluate_in(model, ev, batch, live, sequence)


def evaluate_in(
    model, ev: EvalSet, batch: int = CHUNK, live: Live | None = None, sequence: bool = True
) -> dict[str, Any]:
    """Per-checkpoint metrics on the evaluation set: the means over its examples of what
    ``example_losses`` computes per example (see there). ``live`` (``live_subset``): the
    first-token losses over every group; exact match and the full target loss over the live
    groups; L_seq and candidate accuracy over their live rows, L_seq recorded as an estimate of
    the full-set mean with its standard error (``L_seq_se``; ``settle`` makes the
    crossings exact afterwards); with ``sequence=False`` too, L_seq is left out (NaN, ``L_seq_se``
    None: unknown). Without ``live`` every group is scored and ``L_seq_se`` is 0."""
    W, ev = _on_model(model, ev)
    K = ev.task.cfg.K
    if live is not None and ev.has_sequence_candidates:
        r, sub = _live_rows(W, ev, live, batch, sequence)
        metrics = _metrics(r, K)
        se = None
        if sequence:
            L_seq, correct = _sequence(r, sub, live.rows)  # m rows of each group, group-major
            metrics["L_seq"], se = estimate(
                group_means(L_seq, live.m).double().cpu().numpy(), ev.n_groups, rows_sampled=live.m < K
            )
            d = definition("paper")
            metrics[d.acc_mean] = correct.float().mean().item()
            if live.m == K:  # whole groups: their shares at >= 80% and 100% too
                metrics.update(accuracy_stats(group_accuracy(correct, K), "paper"))
        metrics.update({"L_seq_se": se, "groups_scored": len(sub.groups), "rows_scored": int(live.rows.sum())})
        return metrics
    r = _per_example(W, ev, batch, sequence=sequence)
    metrics = _metrics(r, K, _sequence(r, ev) if r.scores is not None else None)
    metrics.update({"L_seq_se": 0.0 if sequence else None, "groups_scored": ev.n_groups})
    return metrics


@torch.no_grad()
def group_scores(model, ev: EvalSet, groups: np.ndarray, batch: int = CHUNK) -> dict[str, np.ndarray]:
    """Per group of ``groups`` (in ``ev.groups``' order): the mean L_seq over its K rows and its
    candidate accuracy (the paper family; every candidate string of every row scored). What the
    settlement adds, stage by stage, where a live estimate cannot decide a crossing."""
    W, ev = _on_model(model, ev)
    K = ev.task.cfg.K
    sub = ev.subset(groups)
    L_seq, correct = _sequence(_per_example(W, sub, batch), sub)
    return {
        "groups": np.asarray(sub.groups),
        "L_seq": group_means(L_seq, K).double().cpu().numpy(),
        "acc": group_means(correct.float(), K).double().cpu().numpy(),
    }


@torch.no_grad()
def first_token_losses(model, ev: EvalSet, batch: int = CHUNK) -> dict[str, float]:
    """The means of the first-token losses over every row (Lc, L1, the candidate mass, the swap
    gap), from the positions up to the one that predicts A1 only (a live checkpoint's)."""
    W, ev = _on_model(model, ev)
    Lc, L1, mass, swap = _first_token(W, ev, batch)
    gap = swap.mean().item() - Lc.mean().item() if swap is not None else float("nan")
    return {"Lc": Lc.mean().item(), "L1": L1.mean().item(), "cand_mass": mass.mean().item(), "swap_gap": gap}


def _live_rows(W: Weights, ev: EvalSet, live: Live, batch: int, sequence: bool) -> tuple[_Rows, EvalSet]:
    """One packed forward for a live checkpoint: the first-token losses of every row, and over
    the live groups' rows (``sub``, their order) the tails (exact match, the target loss) and,
    with ``sequence``, the candidate scores of the live rows (NaN on the others)."""
    sub = ev.subset(live.groups)
    in_live = np.isin(ev.g, live.groups)
    score = np.zeros(len(in_live), dtype=bool)
    score[in_live] = live.rows
    r = _per_example(W, ev, batch, score, sequence, tails=in_live)
    scores = r.scores[torch.as_tensor(in_live, device=r.scores.device)] if r.scores is not None else None
    return r._replace(scores=scores), sub


def _first_token(W: Weights, ev: EvalSet, batch: int):
    """Per row (Lc, L1, candidate mass, swapped Lc or None) from the packs' nodes up to the
    position that predicts A1 only (``packed_forward`` without the tail)."""
    run = packed_forward(W, ev, _shifts(ev), chunk=batch, tail=False)
    Lc, mass, L1 = first_token_rows(run.clean_fp, ev)
    swap = candidate_losses(run.swapped_fp[0], ev.candidates, ev.cand_index)[0] if run.shifts else None
    return Lc, L1, mass, swap


def _shifts(ev: EvalSet) -> tuple[int, ...]:
    """The evaluation's one selector replacement, k -> k+1 mod K (none without a selector)."""
    return (1,) if ev.task.cfg.has_selector else ()


def _on_model(model, ev: EvalSet) -> tuple[Weights, EvalSet]:
    """The model's weights for the functional forward, and the evaluation set where they are
    (the evaluation runs where the model is)."""
    W = Weights.of(model.state_dict(), model.cfg)
    return W, ev.on(W.W_U.device)


class _Rows(NamedTuple):
    """Per example of an evaluation set (its row order), what the metrics are means of."""

    Lc: Tensor
    L1: Tensor
    mass: Tensor  # the candidates' share of the probability at fp
    full: float  # the mean target loss (``target_loss``) over every row with a tail
    correct: Tensor  # first-token family: every target token the argmax (``example_correct``)
    swap: Tensor | None  # Lc with the selector k -> k+1 mod K; None without a selector
    scores: Tensor | None  # [row, K] candidate scores (NaN where unscored); None: no paper family


def _sequence(r: _Rows, ev: EvalSet, rows: np.ndarray | None = None) -> tuple[Tensor, Tensor]:
    """Per row of ``ev`` (where the mask ``rows`` is true; default every row): its (L_seq,
    candidate-correct) from ``r.scores`` against its own selector (``sequence_losses``)."""
    scores, own = r.scores, torch.as_tensor(ev.s, device=r.scores.device)
    if rows is not None:
        picked = torch.as_tensor(rows, device=scores.device)
        scores, own = scores[picked], own[picked]
    return sequence_losses(scores, own)


@torch.no_grad()
def example_losses(model, ev: EvalSet, batch: int = CHUNK) -> dict[str, np.ndarray]:
    """Per example of the evaluation set (its row order: group-major, selector k at row
    ``K * group + k``): ``L_seq`` (every candidate string scored; NaN where the paper family is
    undefined), ``Lc`` and ``swap_gap`` (Lc with the selector k -> k+1 mod K, minus Lc; NaN
    without a selector). ``evaluate`` reports their means."""
    W, ev = _on_model(model, ev)
    r = _per_example(W, ev, batch)
    Lc, swap = r.Lc, r.swap
    seq = _sequence(r, ev)[0] if r.scores is not None else None
    return {
        "L_seq": seq.cpu().numpy() if seq is not None else np.full(len(Lc), np.nan),
        "Lc": Lc.cpu().numpy(),
        "swap_gap": (swap - Lc).cpu().numpy() if swap is not None else np.full(len(Lc), np.nan),
    }


def _per_example(
    W: Weights,
    ev: EvalSet,
    batch: int,
    score: np.ndarray | None = None,
    sequence: bool = True,
    tails: np.ndarray | None = None,
) -> _Rows:
    """The rows behind ``evaluate``, ``group_scores`` and ``example_losses``, from one
    ``packed_forward`` over the clean rows and their swaps (k -> k+1 mod K). The numbers equal
    ``evaluate_reference`` (plain bridge forwards) to float precision.

    The paper family scores the K candidate strings of the rows where ``score`` (a mask over the
    rows; default every row) is true; the other rows' scores stay NaN. ``sequence=False`` leaves
    the paper family out (None). ``tails`` (a mask over the rows; default every row): the rows
    whose tails run, which the target loss and exact match (``full``, ``correct``) are over."""
    lay = ev.task.layout
    run = packed_forward(W, ev, _shifts(ev), chunk=batch, tails=tails, sequence=sequence, score=score)
    Lc, mass, L1 = first_token_rows(run.clean_fp, ev)
    tokens = ev.tokens if tails is None else ev.tokens[torch.as_tensor(tails, device=ev.tokens.device)]
    full = target_loss(run.clean, tokens, lay).item()
    swap = candidate_losses(run.swapped_fp[0], ev.candidates, ev.cand_index)[0] if run.shifts else None
    return _Rows(Lc, L1, mass, full, example_correct(run.clean, tokens, lay), swap, run.scores)


def _metrics(r: _Rows, K: int, seq: tuple[Tensor, Tensor] | None = None) -> dict[str, Any]:
    """The checkpoint's means. ``seq``: (per-row L_seq, candidate-correct) of the scored rows
    (whole groups, group-major; None where the paper family is left out or undefined)."""
    Lc, swap = r.Lc, r.swap
    paper = {
        "L_seq": seq[0].mean().item() if seq is not None else float("nan"),
        **accuracy_stats(group_accuracy(seq[1], K) if seq is not None else None, "paper"),
    }
    swap_gap = (swap.mean().item() - Lc.mean().item()) if swap is not None else float("nan")
    return {
        **paper,
        "Lc": Lc.mean().item(),
        "L1": r.L1.mean().item(),
        "full_loss": r.full,
        "cand_mass": r.mass.mean().item(),
        "swap_gap": swap_gap,
        **accuracy_stats(group_accuracy(r.correct, K), "first_token"),
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
    seq = None
    if ev.has_sequence_candidates:
        seq = sequence_losses(sequence_scores_reference(model, ev, batch), torch.from_numpy(ev.s))
    rows = _Rows(
        torch.cat(Lc),
        torch.cat(L1),
        torch.cat(mass),
        sum(f.item() for f in full) / len(ev.tokens),
        torch.cat(correct),
        torch.cat(swap) if has_swap else None,
        None,
    )
    out = _metrics(rows, K, seq)
    out.update({"L_seq_se": 0.0, "groups_scored": ev.n_groups})
    return out


@torch.no_grad()
def sequence_scores_reference(model, ev: EvalSet, batch: int = 256, prompt_sel=None) -> Tensor:
    """The candidate scores the plain way: for every candidate j, the full sequence (prompt of
    the row, target A^j) through the bridge, summing log p over the target tokens and EOS.
    ``prompt_sel`` (default: each row's own selector) picks the selector shown in the prompt."""
    lay, K = ev.task.layout, ev.task.cfg.K
    pos = lay.pred_positions
    sel = ev.s if prompt_sel is None else np.asarray(prompt_sel)
    out = torch.empty(len(ev.tokens), K)
    for j in range(K):
        toks = ev.task.tokens(ev.g, sel, target_sel=np.full(len(ev.g), j))
        for i in range(0, len(toks), batch):
            t = toks[i : i + batch]
            out[i : i + batch, j] = string_logprob(
                model(t)[:, pos.start : pos.stop], t[:, pos.start + 1 : pos.stop + 1]
            )
    return out
