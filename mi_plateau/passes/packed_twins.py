"""The interventions' fast twins: each registered intervention (``mi_plateau.interventions``,
where the TransformerLens hooks define it) run on the packed forward's activations
(``metrics.PackedRun``), restarting where it acts. Head ablation (``ablate_layer``: every head of
a layer under one ``HeadAblation``, its effects a ``HeadEffects``) and the causal patching of the
selector positions (``patch_layer``, where every ``ResidPatch`` restarts). Definitions in
``per_checkpoint``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from ..interventions import HeadAblation
from ..metrics import PackedRun, candidate_losses, first_token_rows, target_loss
from ..model.forward import Weights, block, from_mid, unembed
from ..model.packing import Packing
from ..task import EvalSet

NAN = float("nan")


def logit_diff(logits: Float[Tensor, "N vocab"], a: Int[Tensor, N], b: Int[Tensor, N]) -> Float[Tensor, N]:
    """Per row: the logit of token ``a`` minus that of token ``b``."""
    return logits.gather(1, a[:, None]).squeeze(1) - logits.gather(1, b[:, None]).squeeze(1)


@dataclass(frozen=True)
class Baseline:
    """Per-example losses of the unablated model that every ablation is compared with."""

    full: float  # mean cross-entropy over the target positions (A1..A4 and EOS), clean
    full_ex: Float[Tensor, N]  # the same per clean row
    lc: Float[Tensor, N]  # Lc, clean
    l1: Float[Tensor, N]  # L1, clean
    lc_sw: tuple[Float[Tensor, N], ...]  # Lc on the swapped input, per shift

    @classmethod
    def of(cls, ev: EvalSet, run: PackedRun) -> Baseline:
        lay = ev.task.layout
        fp, P, N = lay.first_pred, lay.seq_len - 1, len(ev.tokens)
        V = run.clean.shape[-1]
        full_ex = (
            F.cross_entropy(
                run.clean[:, fp:P].reshape(-1, V), ev.tokens[:, fp + 1 : P + 1].reshape(-1), reduction="none"
            )
            .view(N, -1)
            .mean(1)
        )
        Lc, _, L1 = first_token_rows(run.clean_fp, ev)
        return cls(
            target_loss(run.clean, ev.tokens, lay).item(),
            full_ex,
            Lc,
            L1,
            tuple(candidate_losses(lg, ev.candidates, ev.cand_index)[0] for lg in run.swapped_fp),
        )


@dataclass(frozen=True)
class HeadEffects:
    """What ablating each head does, in nats: per head [layer, head] and per head and group
    [layer, head, group] (the mean over the group's K rows). ``swap_contrib`` is the swap gap
    the head's ablation removes, dLc - dLc(swapped input); NaN without a selector swap."""

    dL: Float[Tensor, "layer head"]
    dLc: Float[Tensor, "layer head"]
    dL1: Float[Tensor, "layer head"]
    swap_contrib: Float[Tensor, "layer head"]
    group_dL: Float[Tensor, "layer head group"]
    group_dLc: Float[Tensor, "layer head group"]
    group_swap_contrib: Float[Tensor, "layer head group"]

    @classmethod
    def nan(cls, L: int, H: int, G: int, device: torch.device) -> HeadEffects:
        """Every effect NaN: the checkpoints where the ablations do not run."""
        shape = lambda f: (L, H, G) if f.name.startswith("group_") else (L, H)  # noqa: E731
        return cls(*(torch.full(shape(f), NAN, device=device) for f in fields(cls)))


def ablate_layer(
    W: Weights,
    l: int,
    ev: EvalSet,
    pk: Packing,
    x: Tensor,
    z: Tensor,
    iv: HeadAblation,
    ctx: Tensor | None,
    base: Baseline,
    chunk: int,
):
    """Mean over examples of (loss with head h of layer l ablated) - (loss unablated), for every
    h: dL (full-vocabulary cross-entropy over all target positions, the paper's), dLc and dL1 on
    the clean input, dLc averaged over the selector shifts on the swapped one ([head] each);
    then the per-row deltas behind dL, dLc and the swapped dLc ([head, N] each).

    Ablating head h changes layer l only by that head's output, so every variant restarts at
    layer l's residual mid-point: ``x`` (= ``hook_resid_pre``) plus the attention output of all
    heads, plus ``(z'_h - z_h) W_O[h]``, z'_h the value ``iv.packed`` gives head h's ``hook_z``
    at the nodes (``ctx``: ``iv.context`` of the clean run's; 0 for zero ablation). It runs on
    the packed nodes (``x`` and ``z`` [pack, node, ...]), where a swapped input that is another
    clean row up to fp costs nothing more, and the H variants are stacked on the batch.
    """
    b = W.blocks[l]
    H, E = W.n_heads, W.d_head
    lay = ev.task.layout
    N, fp, P = len(ev.tokens), lay.first_pred, lay.seq_len - 1
    Wd = x.shape[1]
    V = W.W_U.shape[1]
    dev = W.W_U.device
    lg_fp = torch.empty(H, pk.n_seqs, V, device=dev)  # every sequence's ablated logits at fp
    lg_tail = torch.empty(H, N, P - fp, V, device=dev)  # the clean rows' at fp..P-1
    for c, seqs in pk.chunks(chunk):  # x H variants
        n = c.stop - c.start
        zz = z[c]  # [n, node, head, d_head]
        mid = x[c] + F.linear(zz.reshape(n, Wd, H * E), b["W_O_flat"], b["b_O"])
        group = torch.arange(c.start, c.stop, device=dev)  # one pack per group
        dz = iv.packed(zz, ctx=ctx, positions=pk.positions[c, :Wd], group=group) - zz
        xb = (mid[None] + torch.einsum("nthe,hed->hntd", dz, b["W_O"])).reshape(H * n, Wd, -1)
        blocked = pk.blocked_for(c, Wd)
        cl = seqs[seqs < N]
        want = torch.cat([pk.node[seqs, fp], pk.node[cl][:, fp:P].reshape(-1)])
        read = torch.unique(want)
        lg = from_mid(W, l, xb, read, blocked if blocked.dim() == 2 else blocked.repeat(H, 1, 1)).view(
            H, n, len(read), -1
        )
        lg_fp[:, seqs] = lg[:, pk.pack[seqs] - c.start, torch.searchsorted(read, pk.node[seqs, fp])]
        at = (pk.pack[cl] - c.start)[:, None]
        lg_tail[:, cl] = lg[:, at, torch.searchsorted(read, pk.node[cl][:, fp:P].contiguous())]
    cand, ci = ev.candidates.repeat(H, 1), ev.cand_index.repeat(H)
    lc = candidate_losses(lg_fp[:, :N].reshape(H * N, -1), cand, ci)[0].reshape(H, N)
    l1 = F.cross_entropy(lg_fp[:, :N].reshape(H * N, -1), ev.target_first.repeat(H), reduction="none").reshape(H, N)
    gold = ev.tokens[:, fp + 1 : P + 1]
    ce = F.cross_entropy(lg_tail.reshape(-1, V), gold.repeat(H, 1).reshape(-1), reduction="none").view(H, N, -1)
    full = ce.view(H, -1).mean(1)
    dLc_sw_ex = torch.zeros(H, N, device=dev)
    for i, base_sw in enumerate(base.lc_sw):
        lc_sw = candidate_losses(lg_fp[:, (1 + i) * N : (2 + i) * N].reshape(H * N, -1), cand, ci)[0].reshape(H, N)
        dLc_sw_ex += (lc_sw - base_sw[None]) / len(base.lc_sw)
    # [H, N] each: Delta L, Delta Lc and Delta Lc on the swapped input, per row
    per_ex = (ce.mean(2) - base.full_ex[None], lc - base.lc[None], dLc_sw_ex)
    return full - base.full, (lc - base.lc[None]).mean(1), (l1 - base.l1[None]).mean(1), dLc_sw_ex.mean(1), per_ex


def patch_layer(W: Weights, l: int, ev: EvalSet, pk: Packing, x: Tensor, chunk: int) -> Float[Tensor, "N vocab"]:
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
    dev = W.W_U.device
    out = torch.empty(N, W.W_U.shape[1], device=dev)
    for c, seqs in pk.chunks(chunk):
        rows = seqs[seqs < N]
        n, at = c.stop - c.start, pk.pack[rows] - c.start
        first = torch.searchsorted(at, torch.arange(n, device=dev))  # rows come pack by pack
        slot = torch.arange(len(rows), device=dev) - first[at]
        T = Wd + int(slot.max()) + 1
        allowed = torch.zeros(n, T, T, dtype=torch.bool, device=dev)
        new = torch.arange(Wd, T, device=dev)
        allowed[:, :Wd, :Wd] = ~pk.blocked_for(c, Wd)
        allowed[:, new, new] = True  # new nodes (and padding) see themselves
        allowed[at[:, None], Wd + slot[:, None], pk.node[N + rows, :fp]] = True  # and the swapped prefix
        h = x.new_zeros(n, T, x.shape[2])
        h[:, :Wd] = x[c]
        h[at, Wd + slot] = pk.gather(x, rows, fp)
        for j in range(l, L):
            h = block(W, j, h, blocked=~allowed, rows=new if j == L - 1 else None)
        out[rows] = unembed(W, h[at, slot])
    return out
