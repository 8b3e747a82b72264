"""The model stage: how a run's transformer is built and how it runs.

- ``bridge``: the TransformerLens ``TransformerBridge`` built from a config (init, b_U), head
  names, and the trainer's forward.
- ``forward``: the same arithmetic as a plain functional forward on the bridge's weights
  (training, evaluation and every intervention run it).
- ``packing``: prefix packs, sequences that share prefixes run with each prefix computed once.

transformer_lens is imported lazily (inside ``bridge``'s functions): it costs seconds.
"""

from .bridge import build_model, gpt2_init, head_names, parse_head, training_forward
from .forward import Weights

__all__ = ["build_model", "gpt2_init", "head_names", "parse_head", "training_forward", "Weights"]
