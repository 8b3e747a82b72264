"""The model: a TransformerLens ``TransformerBridge`` built natively from our config.

``TransformerBridge.boot_native`` is the maintained successor of ``HookedTransformer`` for
models trained from scratch (TransformerLens >= 4): same hook names (``blocks.{l}.attn.hook_z``,
``hook_pattern``, ``hook_resid_post``), ``run_with_cache``, ``run_with_hooks``, ``W_Q`` ... ``OV``.
transformer_lens is imported lazily: it costs seconds and the CLI must stay quick.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from ..config import RunConfig, layout_for
from ..devices import compiled_or_eager, in_precision
from ..task import ALPHABET, BOS, CHAR0, D_VOCAB, EOS, PAD, SEP
from .forward import Weights, check_shared, forward

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


def build_model(cfg: RunConfig) -> TransformerBridge:
    """A freshly initialised model; the same ``model.init_seed`` gives the same weights.

    Returned in eval mode (boot_native returns train mode; the trainer switches it).
    """
    import transformer_lens.model_bridge.sources  # noqa: F401
    from transformer_lens import TransformerBridge  # noqa: F401  (attaches boot_native)

    model = TransformerBridge.boot_native(bridge_config(cfg))
    if cfg.model.train_b_U:
        _trainable_b_U(model)
    if cfg.model.init == "gpt2":
        gpt2_init(model, cfg.model.d_model, cfg.model.init_seed)
    model.tokenizer = task_tokenizer()
    model.cfg.tokenizer_prepends_bos = False  # to_tokens prepends <BOS> itself (default_prepend_bos)
    model.eval()
    return model


_TOKENIZER = []


def task_tokenizer():
    """A Hugging Face tokenizer for the task's vocabulary, so that TransformerLens'
    ``to_tokens``, ``to_str_tokens`` and ``to_string`` work on the model: one token per
    character a-z0-9, the specials ``<PAD>``, ``<BOS>``, ``<EOS>`` and ``|`` (SEP), as
    ``task.render`` writes them. ``model.to_tokens("v7a1j3|5l|tus7<EOS>")`` prepends ``<BOS>``."""
    if not _TOKENIZER:
        from tokenizers import Regex, Tokenizer, decoders
        from tokenizers.models import WordLevel
        from tokenizers.pre_tokenizers import Split
        from transformers import PreTrainedTokenizerFast

        vocab = {"<PAD>": PAD, "<BOS>": BOS, "<EOS>": EOS, "|": SEP, **{c: CHAR0 + i for i, c in enumerate(ALPHABET)}}
        tk = Tokenizer(WordLevel(vocab, unk_token="<PAD>"))
        tk.pre_tokenizer = Split(Regex(r"<BOS>|<EOS>|<PAD>|\||."), behavior="isolated")
        tk.decoder = decoders.Fuse()
        _TOKENIZER.append(
            PreTrainedTokenizerFast(
                tokenizer_object=tk, bos_token="<BOS>", eos_token="<EOS>", pad_token="<PAD>", unk_token="<PAD>"
            )
        )
    return _TOKENIZER[0]


def _trainable_b_U(model) -> None:
    """Give the bridge a trainable unembedding bias.

    TL4's native model has an unembedding ``nn.Linear`` without bias; the bridge registers a
    fixed zero buffer in its place so that ``b_U`` / ``unembed.bias`` exist. The supported way
    to train it is to put a Parameter where the buffer is: the bridge's state dict, hooks and
    ``b_U`` read the same attribute, so checkpoints keep the key ``unembed.bias``.
    """
    head = model.original_model.head
    head = getattr(head, "_original_component", head)
    zeros = head.bias.detach().clone() if head.bias is not None else torch.zeros(head.out_features)
    del head.bias
    head.bias = torch.nn.Parameter(zeros)


@torch.no_grad()
def gpt2_init(model, d_model: int, seed: int) -> None:
    """HookedTransformer's GPT-2 init (the original code's): every weight matrix (embeddings,
    W_Q, W_K, W_V, W_O, W_in, W_out, W_U) N(0, (0.8 / sqrt(d_model))^2), every bias 0, LayerNorm
    weights 1. Drawn in the order of the bridge's state dict from a generator seeded with
    ``seed``, so it does not depend on the global RNG."""
    gen = torch.Generator().manual_seed(int(seed))
    std = 0.8 / d_model**0.5
    for name, p in model.state_dict(keep_vars=True).items():
        if not isinstance(p, torch.nn.Parameter):
            continue
        if name.split(".")[-2] in ("ln1", "ln2", "ln_final"):
            p.fill_(1.0 if name.endswith("weight") else 0.0)  # LayerNorm
        elif name.endswith("bias"):
            p.zero_()
        else:
            p.copy_(torch.randn(p.shape, generator=gen) * std)


def training_forward(cfg: RunConfig, model: TransformerBridge) -> Callable[[Tensor], Tensor]:
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

    ``cfg.train.compile`` puts the forward under ``torch.compile`` (``devices.compiled_or_eager``:
    eager, with one line, where it cannot compile).
    """

    pos = layout_for(cfg.task).pred_positions
    kind = cfg.train.impl
    if kind == "bridge":
        net = getattr(model, "original_model", model)
        run = lambda tokens: net(tokens)[:, pos.start : pos.stop]  # noqa: E731
        return in_precision(compiled_or_eager(run) if cfg.train.compile else run, cfg.train.precision)
    m = cfg.model
    params = model.state_dict(keep_vars=True)  # the Parameter objects the optimizer steps
    start = pos.start if kind == "fast" else 0
    shared = 1 if kind == "fast" else 0  # BOS: the same in every row

    def run(tokens: Tensor) -> Tensor:
        # rebuilt every step: the fused K/V weight is a concatenation of the current parameters
        W = Weights.of(params, m)
        return forward(W, tokens, start, shared)[:, pos.start - start : pos.stop - start]

    if not cfg.train.compile:
        return in_precision(run, cfg.train.precision)
    compiled = compiled_or_eager(run)

    def checked(tokens: Tensor) -> Tensor:
        check_shared(tokens, shared, start)  # data-dependent: outside the compiled graph
        return compiled(tokens)

    return in_precision(checked, cfg.train.precision)


def head_names(n_layers: int, n_heads: int) -> list[str]:
    """Heads in TransformerLens order, written L{layer}H{head}."""
    return [f"L{l}H{h}" for l in range(n_layers) for h in range(n_heads)]


def parse_head(name: str, n_layers: int, n_heads: int) -> tuple[int, int]:
    """'L0H3' -> (0, 3), with a clear error for names outside the model."""
    m = re.fullmatch(r"L(\d+)H(\d+)", name.strip())
    if not m:
        raise ValueError(f"head {name!r}: expected the form L<layer>H<head>, e.g. L0H3")
    layer, head = int(m.group(1)), int(m.group(2))
    if layer >= n_layers or head >= n_heads:
        raise ValueError(f"head {name!r}: this model has layers 0..{n_layers - 1} and heads 0..{n_heads - 1}")
    return layer, head
