"""Controls of the paper's Table 12 that need a model other than the transformer: the two-layer
linear network (``linear``; ``mi-plateau linear-control --out FILE`` regenerates its artifact).
The other control, selector groups (``task.selector_groups``), is a task setting trained by the
ordinary pipeline.

Names load lazily: importing the package loads neither torch nor pandas.
"""

from __future__ import annotations

_LAZY = {
    name: "linear"
    for name in (
        "COLUMNS",
        "ESCAPE_FRACTION",
        "PAPER_CLAIM",
        "PAPER_KS",
        "Embeddings",
        "LinearConfig",
        "candidate_losses",
        "control_record",
        "least_squares_limit",
        "linear_control",
        "make_embeddings",
        "mse_and_grads",
        "oracle_candidate_loss",
        "record",
        "table12_row",
        "train_linear",
        "verdict",
    )
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'mi_plateau.control' has no attribute {name!r}")
