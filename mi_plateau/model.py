"""The model: a TransformerLens ``TransformerBridge`` built natively from our config.

``TransformerBridge.boot_native`` is the maintained successor of ``HookedTransformer`` for
models trained from scratch (TransformerLens >= 4): same hook names (``blocks.{l}.attn.hook_z``,
``hook_pattern``, ``hook_resid_post``), ``run_with_cache``, ``run_with_hooks``, ``W_Q`` ... ``OV``.
transformer_lens is imported lazily: it costs seconds and the CLI must stay quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch
from torch import Tensor

from .config import RunConfig, layout_for
from .task import D_VOCAB

if TYPE_CHECKING:  # pragma: no cover
    from transformer_lens.model_bridge import TransformerBridge


def bridge_config(cfg: RunConfig):
    from transformer_lens.config import TransformerBridgeConfig

    m = cfg.model
    return TransformerBridgeConfig(
        d_model=m.d_model,
        d_head=m.d_head,
        n_layers=m.n_layers,
        n_heads=m.n_heads,
        d_mlp=m.d_mlp,
        n_ctx=layout_for(cfg.task).seq_len,
        d_vocab=D_VOCAB,
        d_vocab_out=D_VOCAB,
        act_fn=m.act_fn,
        normalization_type=m.normalization_type,
        positional_embedding_type="standard",
        seed=m.init_seed,
        dtype=torch.float32,
    )


def build_model(cfg: RunConfig) -> "TransformerBridge":
    """A freshly initialised model; the same ``model.init_seed`` gives the same weights.

    Returned in eval mode (boot_native returns train mode; the trainer switches it).
    """
    from transformer_lens import TransformerBridge  # noqa: F401  (attaches boot_native)
    import transformer_lens.model_bridge.sources  # noqa: F401

    model = TransformerBridge.boot_native(bridge_config(cfg))
    model.eval()
    return model


def training_forward(cfg: RunConfig, model: "TransformerBridge") -> Callable[[Tensor], Tensor]:
    """The trainer's forward: input tokens [batch, seq_len - 1] (the EOS input predicts nothing)
    -> logits at the loss positions [batch, n_pred, d_vocab], on the bridge's own parameters.

    ``cfg.train.impl`` picks the arithmetic; every kind trains the same Parameter objects, so
    the optimizer state, the checkpoints and every analysis are the same for all of them:

    - ``standard`` (default): the plain forward of ``passes.forward`` over every position.
    - ``fast``: the same, but the last block computes queries, attention output, MLP and the
      unembedding at the loss positions only (keys and values still everywhere), and the BOS
      position, the same in every row, is computed once per batch; the trainer also takes
      AdamW's fused kernel. Same function, fewer FLOPs; rounding differs from
      ``standard`` at the 1e-7 level, so the two are different runs.
    - ``bridge``: TransformerLens' own module (``original_model``). Runs written before this
      option existed trained this way, and resume this way.

    ``cfg.train.compile`` puts the forward under ``torch.compile``.
    """
    from .passes.forward import Weights, check_shared, forward

    pos = layout_for(cfg.task).pred_positions
    kind = cfg.train.impl
    if kind == "bridge":
        net = getattr(model, "original_model", model)
        run = lambda tokens: net(tokens)[:, pos.start : pos.stop]  # noqa: E731
        return torch.compile(run) if cfg.train.compile else run
    m = cfg.model
    params = model.state_dict(keep_vars=True)  # the Parameter objects the optimizer steps
    start = pos.start if kind == "fast" else 0
    shared = 1 if kind == "fast" else 0  # BOS: the same in every row

    def run(tokens: Tensor) -> Tensor:
        # rebuilt every step: the fused K/V weight is a concatenation of the current parameters
        W = Weights.from_state_dict(params, m.n_layers, m.n_heads, m.d_head, m.act_fn)
        return forward(W, tokens, start, shared)[:, pos.start - start : pos.stop - start]

    if not cfg.train.compile:
        return run
    compiled = torch.compile(run)

    def checked(tokens: Tensor) -> Tensor:
        check_shared(tokens, shared, start)  # data-dependent: outside the compiled graph
        return compiled(tokens)

    return checked


def head_names(n_layers: int, n_heads: int) -> list[str]:
    """Heads in TransformerLens order, written L{layer}H{head}."""
    return [f"L{l}H{h}" for l in range(n_layers) for h in range(n_heads)]


def parse_head(name: str, n_layers: int, n_heads: int) -> tuple[int, int]:
    """'L0H3' -> (0, 3), with a clear error for names outside the model."""
    import re

    m = re.fullmatch(r"L(\d+)H(\d+)", name.strip())
    if not m:
        raise ValueError(f"head {name!r}: expected the form L<layer>H<head>, e.g. L0H3")
    layer, head = int(m.group(1)), int(m.group(2))
    if layer >= n_layers or head >= n_heads:
        raise ValueError(f"head {name!r}: this model has layers 0..{n_layers - 1} and heads 0..{n_heads - 1}")
    return layer, head
