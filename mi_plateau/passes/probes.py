"""The four analysis passes at one checkpoint, batched (SPEC section 5). All losses in nats.

Everything runs on the fixed evaluation set (200 groups x K examples, clean labels). With
``fp`` the position that predicts the first target token A1 (the SEP before A):

- **Head ablation.** For each head, its ``hook_z`` is set to 0 at every position (or, with
  ``mean=True``, to its mean over the evaluation set at that position) and
  ``dLc = Lc(ablated) - Lc(clean)``; ``dL1`` likewise for the full-vocabulary first-token loss.
- **z-dependence.** ``swap_gap = Lc(z replaced) - Lc(clean)``, the replacement of selector k
  being k+s mod K for each shift s in ``shifts`` (default s=1), averaged over shifts. Causal
  variant: for each layer l, the residual stream ``blocks.{l}.hook_resid_pre`` at the selector
  positions is patched from the swapped example (same B, other z) into the clean run, and
  ``patch_frac[l] = (LD_patched - LD_clean) / (LD_swapped - LD_clean)`` where LD is the logit of
  the clean answer's A1 minus that of the swapped selector's A1, averaged over examples before
  the ratio. 1 means everything the selector does at fp flows through the patched positions.
- **Selector-routing score.** (a) ``sel_attn``: attention from fp to the selector positions,
  summed over them and averaged over examples, minus the uniform baseline len_z / (fp + 1)
  (the selector keys' share of the visible positions, 2 of 11 by default). (b) ``swap_contrib``:
  the swap gap minus the swap gap with the head ablated (nats of z-dependence that need the
  head), and ``causal_share = swap_contrib / swap_gap`` (NaN while swap_gap < ``min_gap``).
- **Per-group accuracy.** A group's accuracy is the fraction of its K examples whose target
  tokens (EOS excluded) are all the teacher-forced argmax.

The paper family (``metrics``: sequence candidate loss L_seq, candidate accuracy) runs where
``sequence`` is set (by default with the per-head passes): every example's K candidate strings
are scored from its prompt's keys and values. A selector-swapped or z-shuffled prompt (B, z')
is the clean prompt of another example of the same group, so its scores are that example's
row of the score matrix, read at the true target's index: the paper's swap gap
``swap_gap_seq = L_seq(z replaced) - L_seq`` and z-shuffle gap cost no forward of their own.

- **z-shuffle.** The selectors are deranged across the evaluation set's examples (a fixed
  permutation with no fixed point, seed ``shuffle_seed``): example i is shown example pi(i)'s
  selector, which is its own with probability ~1/K, as in the paper's shuffle.
  ``shuffle_gap = Lc(shuffled) - Lc``; ``shuffle_gap_seq`` likewise for L_seq.
- **Head ablation, the paper's Delta L.** ``dL`` = full-vocabulary mean cross-entropy over all
  target positions (A1..A4 and EOS) with the head ablated, minus clean.
- **Patching at both hooks.** ``hook`` "resid_pre" patches ``blocks.{l}.hook_resid_pre``;
  "resid_post" patches ``blocks.{l}.hook_resid_post`` (= the next layer's resid_pre; after the
  last layer the selector positions feed nothing that reaches fp, so its fraction is 0).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import torch
import torch.nn.functional as F

import numpy as np

from ..metrics import candidate_losses, example_correct, prefix_kv_of, sequence_losses, sequence_scores, target_loss
from ..model import head_names
from ..model.forward import Weights, block, from_mid, run_cached, unembed
from ..model.packing import eval_packing
from ..task import CHAR0, EvalSet


def derangement(n: int, seed: int) -> np.ndarray:
    """A random permutation of range(n) with no fixed point (n >= 2), from ``seed``."""
    rng = np.random.default_rng([seed, 0x5F0F])
    while True:
        p = rng.permutation(n)
        if n < 2 or not (p == np.arange(n)).any():
            return p


def same_group_row(ev: EvalSet, sel: np.ndarray) -> torch.Tensor:
    """Row of the evaluation set with each row's group and selector ``sel`` (rows are group-major)."""
    K = ev.task.cfg.K
    return torch.from_numpy((np.arange(len(ev.g)) // K) * K + sel).to(ev.tokens.device)


@torch.no_grad()
def checkpoint_passes(
    W: Weights,
    ev: EvalSet,
    *,
    step: int = 0,
    shifts: Sequence[int] = (1,),
    mean: bool = False,
    ablation: bool = True,
    sequence: bool | None = None,
    shuffle_seed: int = 0,
    min_gap: float = 0.05,
    chunk: int = 256,
    timings: dict[str, float] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """All passes at one checkpoint; returns tidy rows keyed "checkpoint", "heads", "groups", "patching".
    They run on the device of ``W`` and ``ev`` (``EvalSet.on``); call it inside ``with device:``
    so that the tensors it makes are there too (``analyze_run`` does).

    With ``ablation=False`` only the cheap passes run (clean and swapped forwards: losses,
    accuracy, swap gap, selector attention); the per-head ablation columns are NaN and no
    patching rows are produced. ``sequence`` (default: ``ablation``) adds the paper family. ``timings``, if given, receives the seconds of each part:
    "forward" (the prefix packs of the clean and swapped inputs: losses, accuracy, swap gap,
    selector attention), "ablation" (every head on the clean and the swapped inputs), "patching".
    """
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + now - clock[0]
        clock[0] = now

    task = ev.task
    K = task.cfg.K
    lay = task.layout
    fp = lay.first_pred
    N = len(ev.tokens)
    L, H = W.n_layers, W.n_heads
    has_sel = task.cfg.has_selector
    selpos = list(lay.selector_positions) if has_sel else []
    shifts = [s % K for s in shifts if s % K] if has_sel else []

    # --- the clean and the swapped sequences, each distinct prefix computed once -------------
    # (``packing``: one pack per group; a swapped input is, up to fp, another clean row)
    S = len(shifts)
    P, d, V = lay.seq_len - 1, W.W_E.shape[1], W.W_U.shape[1]
    pk = eval_packing(ev, shifts)
    Wd = pk.width(fp + 1)  # the nodes the swap interventions restart from: every node of depth <= fp
    T = pk.tokens.shape[1]  # ablation restarts from every node (Delta L reads all target positions)
    clean = torch.arange(N)
    logits = torch.empty(pk.n_packs, T, V)
    # per layer: the residual stream before it and every head's z ([pack, node, head, d_head])
    # at every node; kept only when the interventions run
    n_keep = pk.n_packs if ablation else 0
    resid = [torch.empty(n_keep, T, d) for _ in range(L)]
    zc = [torch.empty(n_keep, T, H, W.d_head) for _ in range(L)]
    sel_ex = torch.zeros(N, L, H)  # per clean row: attention from fp to the selector positions
    sequence = ablation if sequence is None else sequence
    scores = torch.empty(N, K) if sequence and ev.has_sequence_candidates else None
    for c, seqs in pk.chunks(chunk):
        lg, rs, pats, zz, kv = run_cached(W, pk.tokens[c], pk.positions[c], pk.blocked_for(c), keep_kv=True)
        logits[c] = lg
        mine = seqs[seqs < N]  # the clean rows in these packs
        if scores is not None:
            scores[mine] = sequence_scores(W, ev, mine, prefix_kv_of(pk, kv, mine, fp, c.start), pk.gather(lg, mine, fp, c.start),
                                           pk.gather(lg, mine, range(fp + 1, P), c.start))
        for l in range(L):
            if selpos:
                at_fp = pk.gather(pats[l].transpose(1, 2), mine, fp, c.start)  # [n, head, key]
                keys = pk.node[mine][:, selpos]
                sel_ex[mine, l] = at_fp.gather(2, keys[:, None].expand(-1, H, -1)).sum(2)
            if ablation:
                resid[l][c] = rs[l]
                zc[l][c] = zz[l].transpose(1, 2)
    clean_logits = logits.new_zeros(N, P, V)  # the metrics read positions fp.. only
    clean_logits[:, fp:] = pk.gather(logits, clean, range(fp, P))
    clean_fp_logits = clean_logits[:, fp]
    sw_fp_logits = [pk.gather(logits, (1 + i) * N + clean, fp) for i in range(S)]
    Lc, mass = candidate_losses(clean_fp_logits, ev.candidates, ev.cand_index)
    L1 = F.cross_entropy(clean_fp_logits, ev.target_first, reduction="none")
    correct = example_correct(clean_logits, ev.tokens, lay)
    full = target_loss(clean_logits, ev.tokens, lay).item()
    # per clean row: the mean cross-entropy over its target positions (Table 9's intervals)
    full_ex = F.cross_entropy(clean_logits[:, fp:P].reshape(-1, V), ev.tokens[:, fp + 1 : P + 1].reshape(-1),
                              reduction="none").view(N, -1).mean(1)
    # mean ablation's fill: every head's z at each position, averaged over the clean rows
    z_mean = [pk.gather(z, clean, range(P)).mean(0) for z in zc] if mean and ablation else None
    sel_ex = sel_ex - (len(selpos) / (fp + 1))
    sel_attn = sel_ex.mean(0)

    acc_group = correct.float().reshape(-1, K).mean(-1)
    Lc_group = Lc.reshape(-1, K).mean(-1)
    nan = float("nan")
    # the paper family: every example's K candidate strings; swapped and shuffled prompts are
    # other rows of the score matrix (same group, other selector), read at the true index
    own = torch.from_numpy(ev.s).to(ev.tokens.device)
    perm = derangement(N, shuffle_seed)
    shuffled_sel = ev.s[perm]
    seq: dict[str, Any] = {"L_seq": nan, "cand_acc": nan, "cand_groups_ge80": nan, "cand_groups_100": nan,
                           "swap_gap_seq": nan, "shuffle_gap_seq": nan}
    cand_group = Lseq_group = gap_seq_group = None
    if scores is not None:
        L_seq, cand_ok = sequence_losses(scores, own)
        cand_group = cand_ok.float().reshape(-1, K).mean(-1)
        Lseq_group = L_seq.reshape(-1, K).mean(-1)
        seq.update({"L_seq": L_seq.mean().item(), "cand_acc": cand_group.mean().item(),
                    "cand_groups_ge80": (cand_group >= 0.8 - 1e-9).float().mean().item(),
                    "cand_groups_100": (cand_group >= 1 - 1e-9).float().mean().item()})
        if has_sel:
            sw = torch.stack([sequence_losses(scores[same_group_row(ev, (ev.s + s_) % K)], own)[0] for s_ in shifts]).mean(0)
            seq["swap_gap_seq"] = (sw.mean() - L_seq.mean()).item() if shifts else nan
            gap_seq_group = (sw - L_seq).reshape(-1, K).mean(-1) if shifts else None
            seq["shuffle_gap_seq"] = (sequence_losses(scores[same_group_row(ev, shuffled_sel)], own)[0].mean() - L_seq.mean()).item()
    ck: dict[str, Any] = {
        "step": step,
        "Lc": Lc.mean().item(),
        "L1": L1.mean().item(),
        "full_loss": full,
        "cand_mass": mass.mean().item(),
        "acc_mean": acc_group.mean().item(),
        "groups_ge80": (acc_group >= 0.8 - 1e-9).float().mean().item(),
        "groups_100": (acc_group >= 1 - 1e-9).float().mean().item(),
        **seq,
    }

    # --- selector swaps --------------------------------------------------------------
    Lc_sw = torch.zeros(N)
    ld_clean = ld_swap = other_first = None
    for si, s in enumerate(shifts):
        Lc_sw += candidate_losses(sw_fp_logits[si], ev.candidates, ev.cand_index)[0] / S
        if si == 0:
            # logit difference: clean answer's A1 minus the swapped selector's A1
            other_first = (torch.from_numpy(task.targets[ev.g, (ev.s + s) % K, 0] + CHAR0).to(ev.tokens.device)
                           if task.cfg.targets_A else ev.target_first)
            ld_clean = _ld(clean_fp_logits, ev.target_first, other_first)
            ld_swap = _ld(sw_fp_logits[0], ev.target_first, other_first)
    gap = (Lc_sw.mean() - Lc.mean()).item() if shifts else float("nan")
    G = len(ev.groups)

    def per_group(v):
        return v.tolist() if v is not None else [nan] * G

    # per group: the metrics and both swap gaps (the bootstrap intervals over groups read these)
    cols = {"acc": acc_group, "Lc": Lc_group, "cand_acc": cand_group, "L_seq": Lseq_group,
            "swap_gap": (Lc_sw - Lc).reshape(-1, K).mean(-1) if shifts else None, "swap_gap_seq": gap_seq_group}
    cols = {k: per_group(v) for k, v in cols.items()}
    groups = [{"step": step, "group": int(g), **{k: float(v[i]) for k, v in cols.items()}} for i, g in enumerate(ev.groups)]
    ck["swap_gap"] = gap
    ck["swap_Lc"] = Lc_sw.mean().item() if shifts else float("nan")
    # the z-shuffle in the first-token family; for B-target directions a shuffled prompt is no
    # clean row (the prompt holds the row's own A), so it is defined for A-target directions
    if has_sel and task.cfg.targets_A:
        Lc_sh = candidate_losses(clean_fp_logits[same_group_row(ev, shuffled_sel)], ev.candidates, ev.cand_index)[0]
        ck["shuffle_gap"] = (Lc_sh.mean() - Lc.mean()).item()
    else:
        ck["shuffle_gap"] = nan

    lap("forward")
    # --- head ablation (clean and swapped inputs), variants stacked on the batch -------
    head_rows: list[dict[str, Any]] = []
    head_group_rows: list[dict[str, Any]] = []
    names = head_names(L, H)
    sel_group = sel_ex.reshape(-1, K, L, H).mean(1)  # [group, layer, head]
    if not ablation:
        head_rows = [
            {"step": step, "head": names[l * H + h], "layer": l, "head_index": h, "sel_attn": sel_attn[l, h].item(),
             "dL": nan, "dLc": nan, "dL1": nan, "swap_contrib": nan, "causal_share": nan}
            for l in range(L) for h in range(H)
        ]
        head_group_rows = [{"step": step, "head": names[l * H + h], "group": int(g), "sel_attn": a,
                            "dL": nan, "dLc": nan, "swap_contrib": nan}
                           for l in range(L) for h in range(H) for g, a in zip(ev.groups, sel_group[:, l, h].tolist())]
    else:
        base = _Base(clean_fp_logits, sw_fp_logits, ev, full, full_ex)
        for l in range(L):
            fill = z_mean[l] if mean else None
            dL, dLc, dL1, dLc_sw, per_ex = _ablate_layer(W, l, ev, pk, resid[l], zc[l], fill, base, chunk)
            # per group (the K rows of a group are consecutive): selector attention, mean Delta L,
            # Delta Lc and the swap gap the head removes
            g_dL, g_dLc, g_sw = (v.reshape(H, -1, K).mean(-1) for v in per_ex)
            g_contrib = (g_dLc - g_sw).tolist() if shifts else [[nan] * G] * H
            for h in range(H):
                head_group_rows += [{"step": step, "head": names[l * H + h], "group": int(g), "sel_attn": a, "dL": b, "dLc": c,
                                     "swap_contrib": w}
                                    for g, a, b, c, w in zip(ev.groups, sel_group[:, l, h].tolist(), g_dL[h].tolist(),
                                                             g_dLc[h].tolist(), g_contrib[h])]
            # gap with head h ablated = (Lc_sw + dLc_sw) - (Lc + dLc): the swap gap it removes
            contrib = dLc - dLc_sw
            for h in range(H):
                c = contrib[h].item() if shifts else float("nan")
                head_rows.append(
                    {
                        "step": step,
                        "head": names[l * H + h],
                        "layer": l,
                        "head_index": h,
                        "sel_attn": sel_attn[l, h].item(),
                        "dL": dL[h].item(),
                        "dLc": dLc[h].item(),
                        "dL1": dL1[h].item(),
                        "swap_contrib": c,
                        "causal_share": c / gap if shifts and gap >= min_gap else float("nan"),
                    }
                )

    lap("ablation")
    # --- causal patching of the selector positions, layer by layer ---------------------
    patch_rows: list[dict[str, Any]] = []
    if ablation and shifts:
        denom = (ld_swap - ld_clean).mean().item()
        pre = []
        for l in range(L):
            moved = _ld(_patch_layer(W, l, ev, pk, resid[l][:, :Wd], chunk), ev.target_first, other_first) - ld_clean
            frac = moved.mean().item() / denom if abs(denom) > 1e-6 else float("nan")
            pre.append((frac, moved.mean().item()))
        # resid_post of layer l is resid_pre of layer l + 1; after the last layer nothing moves
        post = pre[1:] + [(0.0, 0.0)]
        for hook, vals in (("resid_pre", pre), ("resid_post", post)):
            for l, (frac, mv) in enumerate(vals):
                patch_rows.append({"step": step, "hook": hook, "layer": l, "patch_frac": frac, "ld_moved": mv})
        ck["ld_clean"] = ld_clean.mean().item()
        ck["ld_swap"] = ld_swap.mean().item()
    lap("patching")
    return {"checkpoint": [ck], "heads": head_rows, "groups": groups, "patching": patch_rows, "head_groups": head_group_rows}


def _ld(logits: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logits.gather(1, a[:, None]).squeeze(1) - logits.gather(1, b[:, None]).squeeze(1)


class _Base:
    """Per-example losses of the unablated model that every ablation is compared with."""

    def __init__(self, clean_fp_logits, sw_fp_logits, ev, full: float, full_ex: torch.Tensor):
        self.full = full  # mean cross-entropy over the target positions, clean
        self.full_ex = full_ex  # the same per clean row
        self.lc = candidate_losses(clean_fp_logits, ev.candidates, ev.cand_index)[0]
        self.l1 = F.cross_entropy(clean_fp_logits, ev.target_first, reduction="none")
        self.lc_sw = [candidate_losses(lg, ev.candidates, ev.cand_index)[0] for lg in sw_fp_logits]


def _ablate_layer(W, l, ev, pk, x, z, fill, base: _Base, chunk):
    """Mean over examples of (loss with head h of layer l ablated) - (loss unablated), for every
    h: dL (full-vocabulary cross-entropy over all target positions, the paper's), dLc and dL1 on
    the clean input, dLc averaged over the selector shifts on the swapped one.

    Ablating head h changes layer l only by that head's output, so every variant restarts at
    layer l's residual mid-point: ``x`` (= ``hook_resid_pre``) plus the attention output of all
    heads, minus head h's ``z_h W_O[h]`` (plus ``fill_h W_O[h]`` for mean ablation). It runs on
    the packed nodes (``x`` and ``z`` [pack, node, ...]), where a swapped input that is another
    clean row up to fp costs nothing more, and the H variants are stacked on the batch.
    """
    b = W.blocks[l]
    H, E = W.n_heads, W.d_head
    lay = ev.task.layout
    N, fp, P = len(ev.tokens), lay.first_pred, lay.seq_len - 1
    Wd = x.shape[1]
    V = W.W_U.shape[1]
    lg_fp = torch.empty(H, pk.n_seqs, V)  # every sequence's ablated logits at fp
    lg_tail = torch.empty(H, N, P - fp, V)  # the clean rows' at fp..P-1
    for c, seqs in pk.chunks(chunk):  # x H variants
        n = c.stop - c.start
        zz = z[c]  # [n, node, head, d_head]
        mid = x[c] + F.linear(zz.reshape(n, Wd, H * E), b["W_O_flat"], b["b_O"])
        dz = (fill[pk.positions[c, :Wd].clamp(max=P - 1)] if fill is not None else 0.0) - zz
        xb = (mid[None] + torch.einsum("nthe,hed->hntd", dz, b["W_O"])).reshape(H * n, Wd, -1)
        blocked = pk.blocked_for(c, Wd)
        cl = seqs[seqs < N]
        want = torch.cat([pk.node[seqs, fp], pk.node[cl][:, fp:P].reshape(-1)])
        read = torch.unique(want)
        lg = from_mid(W, l, xb, read, blocked if blocked.dim() == 2 else blocked.repeat(H, 1, 1)).view(H, n, len(read), -1)
        lg_fp[:, seqs] = lg[:, pk.pack[seqs] - c.start, torch.searchsorted(read, pk.node[seqs, fp])]
        at = (pk.pack[cl] - c.start)[:, None]
        lg_tail[:, cl] = lg[:, at, torch.searchsorted(read, pk.node[cl][:, fp:P].contiguous())]
    cand, ci = ev.candidates.repeat(H, 1), ev.cand_index.repeat(H)
    lc = candidate_losses(lg_fp[:, :N].reshape(H * N, -1), cand, ci)[0].reshape(H, N)
    l1 = F.cross_entropy(lg_fp[:, :N].reshape(H * N, -1), ev.target_first.repeat(H), reduction="none").reshape(H, N)
    gold = ev.tokens[:, fp + 1 : P + 1]
    ce = F.cross_entropy(lg_tail.reshape(-1, V), gold.repeat(H, 1).reshape(-1), reduction="none").view(H, N, -1)
    full = ce.view(H, -1).mean(1)
    dLc_sw_ex = torch.zeros(H, N)
    for i, base_sw in enumerate(base.lc_sw):
        lc_sw = candidate_losses(lg_fp[:, (1 + i) * N : (2 + i) * N].reshape(H * N, -1), cand, ci)[0].reshape(H, N)
        dLc_sw_ex += (lc_sw - base_sw[None]) / len(base.lc_sw)
    # [H, N] each: Delta L, Delta Lc and Delta Lc on the swapped input, per row
    per_ex = (ce.mean(2) - base.full_ex[None], lc - base.lc[None], dLc_sw_ex)
    return full - base.full, (lc - base.lc[None]).mean(1), (l1 - base.l1[None]).mean(1), dLc_sw_ex.mean(1), per_ex


def _patch_layer(W, l, ev, pk, x, chunk):
    """Logits at fp of every clean row with ``blocks.{l}.hook_resid_pre`` at the selector
    positions patched from its swapped row (the first shift).

    From layer l on, the patched selector positions compute exactly what they compute in the
    swapped input: they see only the prefix the two inputs share, and each other. So a patched
    row is one new node at fp: its own clean residual ``x`` at layer l, attending to the swapped
    row's nodes before fp and to itself. The new nodes are appended to their packs, after the
    nodes up to fp (``x`` [pack, node, d_model]), which recompute what they computed before.
    """
    N, fp, L = len(ev.tokens), ev.task.layout.first_pred, W.n_layers
    Wd = x.shape[1]
    out = torch.empty(N, W.W_U.shape[1])
    for c, seqs in pk.chunks(chunk):
        rows = seqs[seqs < N]
        n, at = c.stop - c.start, pk.pack[rows] - c.start
        first = torch.searchsorted(at, torch.arange(n))  # rows come pack by pack
        slot = torch.arange(len(rows)) - first[at]
        T = Wd + int(slot.max()) + 1
        allowed = torch.zeros(n, T, T, dtype=torch.bool)
        allowed[:, :Wd, :Wd] = ~pk.blocked_for(c, Wd)
        allowed[:, torch.arange(Wd, T), torch.arange(Wd, T)] = True  # new nodes (and padding) see themselves
        allowed[at[:, None], Wd + slot[:, None], pk.node[N + rows, :fp]] = True  # and the swapped prefix
        h = x.new_zeros(n, T, x.shape[2])
        h[:, :Wd] = x[c]
        h[at, Wd + slot] = pk.gather(x, rows, fp)
        for j in range(l, L):
            h = block(W, j, h, blocked=~allowed, rows=torch.arange(Wd, T) if j == L - 1 else None)
        out[rows] = unembed(W, h[at, slot])
    return out
