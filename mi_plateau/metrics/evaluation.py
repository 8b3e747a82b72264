"""The evaluation's forward passes and the checkpoint metrics of both families (see the
package's docstring for their definitions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from ..config import Layout
from ..definitions import definition
from ..model.forward import Weights, run_packed, run_suffixes
from ..model.packing import eval_packing
from ..task import EOS, EvalSet
from .guard import EvalGuard


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


ACC_THRESHOLD = 0.8  # Table 6: a group counts at ">= 80%" once this share of its K examples is right
ACC_TOL = 1e-9  # a group's mean k / K may land a rounding step below the fraction it stands for


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


def string_logprob(logits: Float[Tensor, "... L vocab"], next_tokens: Int[Tensor, "... L"]) -> Float[Tensor, ...]:
    """Sum over positions of log softmax(logits)[next token]: a teacher-forced string's log-probability."""
    return logits.log_softmax(-1).gather(-1, next_tokens[..., None]).squeeze(-1).sum(-1)


def _next_tokens(cands: Tensor) -> Tensor:
    """What each candidate's positions A1..A4 predict: A2, A3, A4, EOS."""
    return torch.cat([cands[..., 1:], torch.full_like(cands[..., :1], EOS)], -1)


def sequence_scores(
    W: Weights,
    ev: EvalSet,
    rows: Int[Tensor, n],
    prefix_kv: list[tuple[Tensor, Tensor]],
    fp_logits: Float[Tensor, "n vocab"],
    own_tail_logits: Float[Tensor, "n L vocab"],
) -> Float[Tensor, "n K"]:
    """Scores of every candidate string of each row's group given the row's prompt (B, z_k).

    The prompt is computed once per row (its keys and values ``prefix_kv`` per layer, [n, head,
    fp + 1, d_head], and its logits at fp, which score every candidate's first character); the
    row's own target is the clean input, so ``own_tail_logits`` (the clean logits at A1..A4)
    score candidate k, and only the K - 1 other candidates run, as continuations of the prompt
    (``run_suffixes``).
    """
    K = ev.task.cfg.K
    cands = ev.seq_candidates[rows]  # [n, K, L]
    dev = rows.device
    own = torch.as_tensor(ev.s, device=dev)[rows]
    first = fp_logits.log_softmax(-1).gather(1, cands[..., 0])  # [n, K]
    tail = torch.empty_like(first)
    n = torch.arange(len(rows), device=dev)
    tail[n, own] = string_logprob(own_tail_logits, _next_tokens(cands[n, own]))
    if K > 1:
        j = torch.arange(K, device=dev)
        others = torch.stack([j[j != k] for k in range(K)])[own]  # [n, K-1]
        suf = cands.gather(1, others[..., None].expand(-1, -1, cands.shape[-1]))
        lg = run_suffixes(W, prefix_kv, suf, ev.task.layout.target_start)
        tail.scatter_(1, others, string_logprob(lg, _next_tokens(suf)))
    return first + tail


@torch.no_grad()
def evaluate(
    model, ev: EvalSet, batch: int = 256, seq_groups: int = 0, sequence: bool = True, guard: EvalGuard | None = None
) -> dict[str, Any]:
    """Cheap per-checkpoint metrics on the evaluation set: the means over its examples of what
    ``example_losses`` computes per example (see there). ``seq_groups``: the paper family over
    the first that many groups only (the older ``eval.seq_max_strings`` cap); ``guard``: the
    paper family, exact match and the full target loss over the guard's stages of groups, as far
    as its thresholds need (``EvalGuard``), the first-token losses over every group."""
    W = _weights(model)
    ev = ev.on(W.W_U.device)  # the evaluation runs where the model is
    N, K = len(ev.tokens), ev.task.cfg.K
    if guard is not None and sequence and ev.has_sequence_candidates:
        return _guarded(W, ev, batch, guard)
    mask = np.arange(N) < (min(N, seq_groups * K) if seq_groups else N)
    return _metrics(*_per_example(W, ev, _packing(ev), batch, mask, sequence))


def _guarded(W: Weights, ev: EvalSet, batch: int, guard: EvalGuard) -> dict[str, Any]:
    """``evaluate`` with a guard. Every row's first-token losses (Lc, L1, the candidate mass, the
    swap gap) come from the packs' nodes up to the position that predicts A1 (``_first_token``);
    the paper family, and what reads the whole target (exact match, the full target loss), run
    on the guard's stages of groups, each stage's new groups as an evaluation set of their own
    (``EvalSet.subset``, cached), until the guard is decided. With ``EvalGuard.row_mask`` L_seq
    scores only those rows of a stage's groups, and a stage that reaches every group runs the
    whole set and scores the rows not scored yet, so every row is scored once and the last
    stage's numbers are the plain full scoring's."""
    K, N_groups, N = ev.task.cfg.K, ev.n_groups, len(ev.tokens)
    m = guard.rows_per_group or K
    if not guard.first_token:
        Lc, L1, mass, swap = _first_token(W, ev, _packing(ev), batch)
    correct, full, rows, first = [], 0.0, 0, []
    done, se, lc, gap = 0, float("inf"), None, None
    dev = W.W_U.device
    scores = torch.full((N, K), float("nan"), device=dev)  # candidate scores, in the set's rows
    scored = np.zeros(N, dtype=bool)
    means = lambda x, k=K: group_means(x, k).double().cpu().numpy()
    for n in guard.stages():
        if n == N_groups and (n - done == N_groups or m < K):  # the set itself: every group's pack
            new, idx, score = ev, np.arange(N), ~scored
            correct, full, rows, first = [], 0.0, 0, []
        else:
            new = ev.subset(guard.order[done:n])
            idx = np.flatnonzero(np.isin(ev.g, new.groups))
            score = np.ones(len(idx), dtype=bool) if m == K else guard.row_mask[idx]
        out = _per_example(W, new, _packing(new), batch, score, True)
        full += out[3] * len(new.tokens)
        rows += len(new.tokens)
        correct.append(out[4])
        first.append((out[0], out[1], out[2], out[5]))
        picked = torch.as_tensor(score, device=dev)
        scores[torch.as_tensor(idx[score], device=dev)] = out[-1][picked]
        scored[idx[score]] = True
        done = n
        per_group = K if scored.all() else m  # rows scored in each scored group
        seq = sequence_losses(scores[torch.as_tensor(scored, device=dev)], torch.as_tensor(ev.s[scored], device=dev))
        est, se = guard.estimate(means(seq[0], per_group), N_groups, rows_sampled=per_group < K)
        if guard.first_token:
            Lc, L1, mass = (torch.cat([f[i] for f in first]) for i in range(3))
            swap = torch.cat([f[3] for f in first]) if first[0][3] is not None else None
            lc = guard.estimate(means(Lc), N_groups)
            gap = guard.estimate(means(swap - Lc), N_groups) if swap is not None else None
        if done >= N_groups or not (guard.undecided(est, se) or guard.undecided_first_token(lc, gap)):
            break
    metrics = _metrics(Lc, L1, mass, full / rows, torch.cat(correct), swap, K, seq, seq_rows=per_group)
    metrics.update({"groups_scored": done, "L_seq_se": se, "L_seq_rows": int(scored.sum())})
    if guard.first_token:
        metrics.update({"Lc_se": lc[1], "swap_gap_se": gap[1] if gap is not None else None})
    return metrics


@torch.no_grad()
def first_token_losses(model, ev: EvalSet, batch: int = 256) -> dict[str, float]:
    """The means of the first-token losses over every row (Lc, L1, the candidate mass, the
    swap gap), from the positions up to the one that predicts A1 only: what a guarded checkpoint
    computes on every group."""
    W = _weights(model)
    ev = ev.on(W.W_U.device)
    Lc, L1, mass, swap = _first_token(W, ev, _packing(ev), batch)
    gap = swap.mean().item() - Lc.mean().item() if swap is not None else float("nan")
    return {"Lc": Lc.mean().item(), "L1": L1.mean().item(), "cand_mass": mass.mean().item(), "swap_gap": gap}


def _first_token(W: Weights, ev: EvalSet, pk, batch: int):
    """Per row (Lc, L1, candidate mass, swapped Lc or None): only the packs' nodes up to the
    position that predicts A1 run (``Packing.width``; they come first in every pack), and a
    swapped row's logits there are a node of its pack like a clean row's."""
    N, fp = len(ev.tokens), ev.task.layout.first_pred
    w = pk.width(fp + 1)
    at_fp = torch.empty(pk.n_seqs, W.W_U.shape[1], device=W.W_U.device)
    for c, seqs in pk.chunks(batch):
        read, where = pk.rows(seqs, fp)
        lg, _ = run_packed(W, pk.tokens[c, :w], pk.positions[c, :w], pk.blocked_for(c, w), read)
        at_fp[seqs] = lg[pk.pack[seqs] - c.start, where]
    Lc, mass = candidate_losses(at_fp[:N], ev.candidates, ev.cand_index)
    L1 = F.cross_entropy(at_fp[:N], ev.target_first, reduction="none")
    swap = candidate_losses(at_fp[N:], ev.candidates, ev.cand_index)[0] if pk.n_seqs > N else None
    return Lc, L1, mass, swap


def _packing(ev: EvalSet):
    return eval_packing(ev, (1,) if ev.task.cfg.has_selector else ())


def _weights(model) -> Weights:
    m = model.cfg
    return Weights.from_state_dict(
        model.state_dict(), m.n_layers, m.n_heads, m.d_head, getattr(m, "act_fn", "gelu"), getattr(m, "eps", 1e-5)
    )


@torch.no_grad()
def example_losses(model, ev: EvalSet, batch: int = 256) -> dict[str, np.ndarray]:
    """Per example of the evaluation set (its row order: group-major, selector k at row
    ``K * group + k``): ``L_seq`` (every candidate string scored; NaN where the paper family is
    undefined), ``Lc`` and ``swap_gap`` (Lc with the selector k -> k+1 mod K, minus Lc; NaN
    without a selector). ``evaluate`` reports their means."""
    W = _weights(model)
    ev = ev.on(W.W_U.device)
    out = _per_example(W, ev, _packing(ev), batch, np.ones(len(ev.tokens), dtype=bool), True)
    Lc, swap, scores = out[0], out[5], out[-1]
    seq = sequence_losses(scores, torch.as_tensor(ev.s, device=scores.device))[0] if scores is not None else None
    return {
        "L_seq": seq.cpu().numpy() if seq is not None else np.full(len(Lc), np.nan),
        "Lc": Lc.cpu().numpy(),
        "swap_gap": (swap - Lc).cpu().numpy() if swap is not None else np.full(len(Lc), np.nan),
    }


def _chunk_forward(W: Weights, ev: EvalSet, pk, c: slice, seqs: Tensor, keep_kv: bool):
    """One chunk of packs through the packed forward: the logits at the nodes that are read
    (each clean row's fp..P-1, each swapped row's fp), and the keys and values if asked."""
    lay, N = ev.task.layout, len(ev.tokens)
    P, fp = lay.seq_len - 1, lay.first_pred
    clean, swapped = seqs[seqs < N], seqs[seqs >= N]
    want = pk.node[clean][:, fp:P].contiguous()  # each clean row's nodes at fp..P-1
    read = torch.unique(torch.cat([want.reshape(-1), pk.node[swapped, fp]]))
    lg, kv = run_packed(W, pk.tokens[c], pk.positions[c], pk.blocked_for(c), read, keep_kv=keep_kv)
    clean_lg = lg[(pk.pack[clean] - c.start)[:, None], torch.searchsorted(read, want)]
    swap_lg = lg[pk.pack[swapped] - c.start, torch.searchsorted(read, pk.node[swapped, fp])]
    return clean, swapped, clean_lg, swap_lg, kv


def _per_example(W: Weights, ev: EvalSet, pk, batch: int, score: np.ndarray, sequence: bool):
    """The forward passes behind ``evaluate`` and ``example_losses``.

    The clean rows and the selector-swapped ones run as prefix packs (``model.packing``): one
    packed sequence per group in which every distinct prefix is computed once (the K examples
    share BOS, B and SEP; a swapped input is, up to the position that predicts A1, another
    example's clean input), and the last block computes only the positions that are read. The
    numbers equal ``evaluate_reference`` (plain bridge forwards) to float precision.

    The paper family scores the K candidate strings of the rows where ``score`` (a mask over
    the rows) is true: each prompt is read from the packs' keys and values, and only the other
    candidates' four positions are computed (``sequence_scores``); the other rows' scores stay
    unset. ``sequence=False`` leaves the paper family out (None), for timing the first-token
    family alone.
    """
    lay = ev.task.layout
    K, N = ev.task.cfg.K, len(ev.tokens)
    P, fp = lay.seq_len - 1, lay.first_pred
    sel = ev.task.cfg.has_selector
    dev = W.W_U.device
    logits = torch.zeros(N, P, W.W_U.shape[1], device=dev)  # the metrics read positions fp.. only
    swap_fp = torch.empty(N, W.W_U.shape[1], device=dev) if sel else None
    scores = torch.full((N, K), float("nan"), device=dev) if sequence and ev.has_sequence_candidates else None
    wanted = torch.as_tensor(score, device=dev)
    for c, seqs in pk.chunks(batch):
        clean, swapped, clean_lg, swap_lg, kv = _chunk_forward(W, ev, pk, c, seqs, keep_kv=scores is not None)
        logits[clean, fp:] = clean_lg
        if sel:
            swap_fp[swapped - N] = swap_lg
        rows = clean[wanted[clean]]
        if scores is not None and len(rows):
            scores[rows] = sequence_scores(
                W, ev, rows, prefix_kv_of(pk, kv, rows, fp, c.start), logits[rows, fp], logits[rows, fp + 1 :]
            )
    Lc, mass = candidate_losses(logits[:, fp], ev.candidates, ev.cand_index)
    L1 = F.cross_entropy(logits[:, fp], ev.target_first, reduction="none")
    full = target_loss(logits, ev.tokens, lay).item()
    swap = candidate_losses(swap_fp, ev.candidates, ev.cand_index)[0] if sel else None
    return Lc, L1, mass, full, example_correct(logits, ev.tokens, lay), swap, K, scores


def prefix_kv_of(
    pk, kv: list[tuple[Tensor, Tensor]], rows: Tensor, fp: int, first_pack: int
) -> list[tuple[Tensor, Tensor]]:
    """Each row's keys and values at its positions 0..fp, per layer, from a packed run's
    ``kv`` ([packs, head, node, d_head] each; packs counted from ``first_pack``)."""
    p = (pk.pack[rows] - first_pack)[:, None]
    nodes = pk.node[rows, : fp + 1]
    return [tuple(t.transpose(1, 2)[p, nodes].transpose(1, 2) for t in layer) for layer in kv]


def _metrics(Lc, L1, mass, full, correct, swap, K, seq=None, seq_rows: int | None = None) -> dict[str, Any]:
    """The checkpoint's means. ``seq``: (per-row L_seq, candidate-correct) of the scored rows
    (``seq_rows`` of each group, default all K, group-major), or, straight from ``_per_example``,
    its score matrix with NaN rows for the groups left unscored (the first n groups scored: the
    older cap). Where fewer than K rows of a group are scored the paper family's group shares
    (>= 80%, 100%) are not estimated (NaN): a share of a few rows is not the group's."""
    if isinstance(seq, Tensor):  # a score matrix: the scored rows are a prefix of whole groups
        rows = ~seq.isnan().any(1)
        own = torch.arange(len(rows), device=seq.device) % K
        seq = sequence_losses(seq[rows], own[rows]) if rows.any() else None
    whole = seq is not None and (seq_rows or K) == K  # every row of each scored group
    paper = {
        "L_seq": seq[0].mean().item() if seq is not None else float("nan"),
        **accuracy_stats(group_accuracy(seq[1], K) if whole else None, "paper"),
    }
    if seq is not None and not whole:
        paper[definition("paper").acc_mean] = seq[1].float().mean().item()
    swap_gap = (swap.mean().item() - Lc.mean().item()) if swap is not None else float("nan")
    return {
        **paper,
        "Lc": Lc.mean().item(),
        "L1": L1.mean().item(),
        "full_loss": full,
        "cand_mass": mass.mean().item(),
        "swap_gap": swap_gap,
        **accuracy_stats(group_accuracy(correct, K), "first_token"),
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
    return _metrics(
        torch.cat(Lc),
        torch.cat(L1),
        torch.cat(mass),
        sum(f.item() for f in full) / len(ev.tokens),
        torch.cat(correct),
        torch.cat(swap) if has_swap else None,
        K,
        seq,
    )


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
