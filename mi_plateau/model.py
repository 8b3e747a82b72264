"""The model: a TransformerLens ``TransformerBridge`` built natively from our config.

``TransformerBridge.boot_native`` is the maintained successor of ``HookedTransformer`` for
models trained from scratch (TransformerLens >= 4): same hook names (``blocks.{l}.attn.hook_z``,
``hook_pattern``, ``hook_resid_post``), ``run_with_cache``, ``run_with_hooks``, ``W_Q`` ... ``OV``.
transformer_lens is imported lazily: it costs seconds and the CLI must stay quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

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
