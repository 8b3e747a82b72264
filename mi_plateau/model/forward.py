"""A batched functional forward of the bridge's native transformer, for interventions.

The passes need many variants of one forward (every head ablated in turn, selector positions
patched from another example, layer by layer). Running them as separate hooked forwards costs a
forward each; here the variants are stacked along the batch and each variant starts at the first
layer it changes, reusing the clean residual stream below it. The arithmetic is the model's own
(``tests/test_passes.py`` checks it against ``TransformerBridge`` forwards and ``run_with_hooks``
ablations of ``blocks.{l}.attn.hook_z``), read from the same weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


@dataclass
class Weights:
    """The weights of one checkpoint in TransformerLens shapes."""

    W_E: Tensor  # [d_vocab, d_model]
    W_pos: Tensor  # [n_ctx, d_model]
    blocks: list[dict[str, Tensor]]
    ln_f: tuple[Tensor, Tensor]
    W_U: Tensor  # [d_model, d_vocab]
    b_U: Tensor
    n_heads: int
    d_head: int
    eps: float
    act: str

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    @classmethod
    def from_state_dict(
        cls, sd: dict[str, Tensor], n_layers: int, n_heads: int, d_head: int, act_fn: str = "gelu", eps: float = 1e-5
    ) -> Weights:
        blocks = []
        for l in range(n_layers):
            p = f"blocks.{l}."
            blocks.append(
                {
                    "ln1_w": sd[p + "ln1.weight"],
                    "ln1_b": sd[p + "ln1.bias"],
                    # nn.Linear stores [out, in]; split the out dimension into heads
                    "W_Q": einops.rearrange(sd[p + "attn.q.weight"], "(h e) d -> h d e", h=n_heads),
                    "W_K": einops.rearrange(sd[p + "attn.k.weight"], "(h e) d -> h d e", h=n_heads),
                    "W_V": einops.rearrange(sd[p + "attn.v.weight"], "(h e) d -> h d e", h=n_heads),
                    "b_Q": einops.rearrange(sd[p + "attn.q.bias"], "(h e) -> h e", h=n_heads),
                    "b_K": einops.rearrange(sd[p + "attn.k.bias"], "(h e) -> h e", h=n_heads),
                    "b_V": einops.rearrange(sd[p + "attn.v.bias"], "(h e) -> h e", h=n_heads),
                    "W_O": einops.rearrange(sd[p + "attn.o.weight"], "d (h e) -> h e d", h=n_heads),
                    # the same weights as nn.Linear stores them, for fused GEMM + bias over all heads
                    "W_Q_flat": sd[p + "attn.q.weight"],
                    "b_Q_flat": sd[p + "attn.q.bias"],
                    "W_KV_flat": torch.cat([sd[p + "attn.k.weight"], sd[p + "attn.v.weight"]]),
                    "b_KV_flat": torch.cat([sd[p + "attn.k.bias"], sd[p + "attn.v.bias"]]),
                    "W_O_flat": sd[p + "attn.o.weight"],
                    "b_O": sd[p + "attn.o.bias"],
                    "ln2_w": sd[p + "ln2.weight"],
                    "ln2_b": sd[p + "ln2.bias"],
                    "W_in_lin": sd[p + "mlp.in.weight"],
                    "b_in": sd[p + "mlp.in.bias"],
                    "W_out_lin": sd[p + "mlp.out.weight"],
                    "b_out": sd[p + "mlp.out.bias"],
                }
            )
        return cls(
            W_E=sd["embed.weight"],
            W_pos=sd["pos_embed.weight"],
            blocks=blocks,
            ln_f=(sd["ln_final.weight"], sd["ln_final.bias"]),
            W_U=sd["unembed.weight"].T,
            b_U=sd["unembed.bias"],
            n_heads=n_heads,
            d_head=d_head,
            eps=eps,
            act=act_fn,
        )

    @classmethod
    def of(cls, sd: dict[str, Tensor], m) -> Weights:
        """``from_state_dict`` with the sizes, activation and LayerNorm eps read from a model
        config ``m``: our ``ModelConfig`` (no eps field: 1e-5, TransformerLens' default) or the
        bridge's own ``model.cfg``. The one adapter every caller uses."""
        return cls.from_state_dict(
            sd, m.n_layers, m.n_heads, m.d_head, getattr(m, "act_fn", "gelu"), getattr(m, "eps", 1e-5)
        )


_CAUSAL: dict[tuple[int, str], Tensor] = {}


def _causal_blocked(P: int, device: torch.device) -> Tensor:
    """[query, key] True above the diagonal (keys a causal query may not see); cached."""
    key = (P, str(device))
    if key not in _CAUSAL:
        _CAUSAL[key] = torch.ones(P, P, dtype=torch.bool, device=device).triu(1)
    return _CAUSAL[key]


def _ln(x: Tensor, w: Tensor, b: Tensor, eps: float) -> Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def _act(x: Tensor, name: str) -> Tensor:
    if name == "gelu":
        return F.gelu(x)
    if name == "gelu_new":
        return F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu(x)
    return F.silu(x)


def embed(
    W: Weights, tokens: Int[Tensor, "batch pos"], positions: Tensor | None = None
) -> Float[Tensor, "batch pos d_model"]:
    """Token plus positional embedding; ``positions`` ([pos] or [batch, pos]; default 0..pos-1)
    for packed sequences."""
    return W.W_E[tokens] + (W.W_pos[: tokens.shape[1]] if positions is None else W.W_pos[positions])


def block(
    W: Weights,
    l: int,
    x: Float[Tensor, "batch pos d_model"],
    want_pattern: bool = False,
    rows: slice | Tensor | None = None,
    blocked: Tensor | None = None,
    prefix_kv: tuple[Tensor, Tensor] | None = None,
    return_kv: bool = False,
):
    """One transformer block; with ``want_pattern`` also its attention pattern and every head's z
    (interventions on heads restart from them: ``passes.per_checkpoint``). ``rows`` (a slice or
    index tensor of positions) computes queries, attention output and MLP at those positions only
    (keys and values everywhere) and returns those rows: all a final block needs when only some
    positions' logits are read. ``blocked`` [pos, pos] (or [batch, pos, pos]) is True where a query
    may not see a key (default: causal; packed sequences pass their own). ``prefix_kv`` ([1, head,
    s, d_head] keys and values, from ``return_kv`` on a batch-1 run of the first s positions) are
    keys every query sees before its own: a prefix that all rows share is computed once."""
    b = W.blocks[l]
    B, P, _ = x.shape
    H, E = W.n_heads, W.d_head
    h = _ln(x, b["ln1_w"], b["ln1_b"], W.eps)
    kv = F.linear(h, b["W_KV_flat"], b["b_KV_flat"])  # one GEMM for K and V of every head
    k = kv[..., : H * E].view(B, P, H, E).transpose(1, 2)
    v = kv[..., H * E :].view(B, P, H, E).transpose(1, 2)
    own = (k, v)
    if blocked is None:
        blocked = _causal_blocked(P, x.device)
    if prefix_kv is not None:
        k, v = (torch.cat([p.expand(B, -1, -1, -1), t], 2) for p, t in zip(prefix_kv, own))
        blocked = F.pad(blocked, (prefix_kv[0].shape[2], 0), value=False)
    if rows is not None:
        h, x, blocked = h[:, rows], x[:, rows], blocked[..., rows, :]
    Q = h.shape[1]
    q = F.linear(h, b["W_Q_flat"], b["b_Q_flat"]).view(B, Q, H, E).transpose(1, 2)
    mask = blocked if blocked.dim() == 2 else blocked[:, None]  # one mask, or one per sequence
    scores = (q @ k.transpose(-1, -2) / math.sqrt(E)).masked_fill(mask, float("-inf"))
    pattern = scores.softmax(-1, dtype=torch.promote_types(scores.dtype, torch.float32))  # bf16 autocast: in fp32
    z = pattern @ v  # [batch, head, query pos, d_head]
    x = x + F.linear(z.transpose(1, 2).reshape(B, Q, H * E), b["W_O_flat"], b["b_O"])
    x = mlp(W, l, x)
    if want_pattern:
        return (x, pattern, z, own) if return_kv else (x, pattern, z)
    return (x, own) if return_kv else x


def mlp(W: Weights, l: int, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
    """The second half of block l: from the residual mid-point (after attention) to its output."""
    b = W.blocks[l]
    h2 = _ln(x, b["ln2_w"], b["ln2_b"], W.eps)
    return x + F.linear(_act(F.linear(h2, b["W_in_lin"], b["b_in"]), W.act), b["W_out_lin"], b["b_out"])


def unembed(W: Weights, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_vocab"]:
    return _ln(x, W.ln_f[0], W.ln_f[1], W.eps) @ W.W_U + W.b_U


def forward(
    W: Weights, tokens: Int[Tensor, "batch pos"], from_pos: int = 0, shared: int = 0
) -> Float[Tensor, "batch out_pos d_vocab"]:
    """The plain forward, differentiable (the trainer's step runs it on the bridge's own
    parameters): logits at positions ``from_pos..``. With ``from_pos`` > 0 the last block
    computes queries, attention output and MLP at those positions only. With ``shared`` > 0 the
    first ``shared`` positions hold the same tokens in every row (BOS): they are computed once,
    and the other positions read their keys and values (``block``'s ``prefix_kv``)."""
    last = W.n_layers - 1
    if shared and not torch.compiler.is_compiling():  # a compiled caller checks outside (``check_shared``)
        check_shared(tokens, shared, from_pos)
    P = tokens.shape[1]
    x0 = embed(W, tokens[:1, :shared]) if shared else None
    x = embed(W, tokens[:, shared:], torch.arange(shared, P, device=tokens.device) if shared else None)
    for l in range(W.n_layers):
        kv = None
        if shared:
            x0, kv = block(W, l, x0, return_kv=True)
        x = block(W, l, x, rows=slice(from_pos - shared, None) if from_pos and l == last else None, prefix_kv=kv)
    return unembed(W, x)


def check_shared(tokens: Tensor, shared: int, from_pos: int) -> None:
    """``forward``'s condition for computing the first ``shared`` positions once."""
    if from_pos < shared or not bool((tokens[:, :shared] == tokens[:1, :shared]).all()):
        raise ValueError(
            f"forward(shared={shared}): the first {shared} positions must hold the same tokens in "
            f"every row and come before from_pos={from_pos}"
        )


@torch.no_grad()
def run_cached(
    W: Weights,
    tokens: Int[Tensor, "batch pos"],
    positions: Tensor | None = None,
    blocked: Tensor | None = None,
    keep_kv: bool = False,
):
    """Clean forward. Returns logits, the residual stream before every layer and after the last
    (``resid[l]`` is ``blocks.{l}.hook_resid_pre``; ``resid[n_layers]`` the final one), the
    attention patterns [layer][batch, head, query, key] and the z of every head [layer][batch, head, pos, d_head];
    with ``keep_kv`` also every layer's keys and values ([batch, head, pos, d_head] each).
    ``positions`` [pos] or [batch, pos] and ``blocked`` run packed sequences (``packing``)."""
    x = embed(W, tokens, positions)
    resid, patterns, zs, kvs = [x], [], [], []
    for l in range(W.n_layers):
        x, pat, z, kv = block(W, l, x, want_pattern=True, blocked=blocked, return_kv=True)
        resid.append(x)
        patterns.append(pat)
        zs.append(z)
        kvs.append(kv)
    out = (unembed(W, x), resid, patterns, zs)
    return (*out, kvs) if keep_kv else out


@torch.no_grad()
def from_mid(
    W: Weights, l: int, x: Float[Tensor, "batch pos d_model"], rows: Tensor, blocked: Tensor | None = None
) -> Tensor:
    """Continue a forward from layer l's residual mid-point (after its attention, before its
    MLP) = x; logits at the positions ``rows`` only [batch, len(rows), d_vocab]."""
    if l == W.n_layers - 1:
        return unembed(W, mlp(W, l, x[:, rows]))
    x = mlp(W, l, x)
    for j in range(l + 1, W.n_layers):
        x = block(W, j, x, rows=rows if j == W.n_layers - 1 else None, blocked=blocked)
    return unembed(W, x)


@torch.no_grad()
def run_packed(
    W: Weights,
    tokens: Int[Tensor, "batch pos"],
    positions: Tensor,
    blocked: Tensor,
    rows: Tensor | None = None,
    keep_kv: bool = False,
):
    """Logits of packed sequences (``packing``): explicit positions and an explicit attention
    mask, so sequences that share a prefix are read from one forward. With ``rows``, the logits
    of those positions only (the last block computes nothing else). Returns (logits, kv): kv is
    every layer's keys and values at every node ([batch, head, node, d_head] each, for
    ``run_suffixes``) with ``keep_kv``, else None."""
    x = embed(W, tokens, positions)
    kvs = []
    for l in range(W.n_layers):
        x, kv = block(W, l, x, blocked=blocked, rows=rows if l == W.n_layers - 1 else None, return_kv=True)
        kvs.append(kv)
    return (unembed(W, x), kvs) if keep_kv else (unembed(W, x), None)


def suffix_block(
    W: Weights, l: int, x: Float[Tensor, "batch n_suffix suffix_len d_model"], prefix_kv: tuple[Tensor, Tensor]
) -> Float[Tensor, "batch n_suffix suffix_len d_model"]:
    """Block l for continuations of a shared prefix: every continuation attends to the prefix
    (keys and values [batch, head, S, d_head]) and causally to its own earlier positions. The
    prefix part of the attention is one broadcast product, so nothing is masked or repeated."""
    b = W.blocks[l]
    B, C, L, d = x.shape
    H, E = W.n_heads, W.d_head
    h = _ln(x, b["ln1_w"], b["ln1_b"], W.eps)
    q = F.linear(h, b["W_Q_flat"], b["b_Q_flat"]).view(B, C, L, H, E).permute(0, 3, 1, 2, 4)  # [B, H, C, L, E]
    kv = F.linear(h, b["W_KV_flat"], b["b_KV_flat"])
    k = kv[..., : H * E].view(B, C, L, H, E).permute(0, 3, 1, 2, 4)
    v = kv[..., H * E :].view(B, C, L, H, E).permute(0, 3, 1, 2, 4)
    pk, pv = prefix_kv  # [B, H, S, E]
    scale = 1 / math.sqrt(E)
    s_pre = (q.reshape(B, H, C * L, E) @ pk.transpose(-1, -2)).view(B, H, C, L, -1) * scale
    s_own = (q @ k.transpose(-1, -2) * scale).masked_fill(_causal_blocked(L, x.device), float("-inf"))
    S = s_pre.shape[-1]
    p = torch.cat([s_pre, s_own], -1).softmax(-1)
    z = (p[..., :S].reshape(B, H, C * L, S) @ pv).view(B, H, C, L, E) + p[..., S:] @ v
    x = x + F.linear(z.permute(0, 2, 3, 1, 4).reshape(B, C, L, H * E), b["W_O_flat"], b["b_O"])
    return mlp(W, l, x)


@torch.no_grad()
def run_suffixes(
    W: Weights, prefix_kv: list[tuple[Tensor, Tensor]], tokens: Int[Tensor, "batch n_suffix suffix_len"], start: int
) -> Float[Tensor, "batch n_suffix suffix_len d_vocab"]:
    """Logits of many continuations of one prefix per row, each prefix computed once.

    Row b has a prefix of S positions whose keys and values per layer are ``prefix_kv[l]``
    ([batch, head, S, d_head] each, e.g. gathered from ``run_packed(keep_kv=True)``), and
    ``n_suffix`` continuations ``tokens[b, c]`` that occupy positions ``start ..`` after it. Every
    continuation sees the whole prefix and its own earlier tokens, never another continuation:
    the logits equal those of the full sequences prefix + continuation run one by one.
    """
    L = tokens.shape[-1]
    x = W.W_E[tokens] + W.W_pos[start : start + L]
    for l in range(W.n_layers):
        x = suffix_block(W, l, x, prefix_kv[l])
    return unembed(W, x)
