"""Causal patching of the selector positions: the residual stream at the selector positions
taken from the selector-swapped input (same B, selector k+s), before a layer (``resid_pre``)
or after it (``resid_post``). What moves is read as the fraction of the logit difference
between the clean and the swapped input that the patch moves (``passes.per_checkpoint``)."""

from .registry import ResidPatch, register


def patch_positions(x, hook, *, src, positions):
    """``x`` at ``positions`` (the selector positions) replaced by ``src`` there, the swapped
    run's activation at the same hook point; every other position keeps its clean value."""
    x[:, positions] = src[:, positions]
    return x


def this_layer(layer: int, n_layers: int) -> int:
    """``hook_resid_pre`` of layer l is itself."""
    return layer


def next_layer(layer: int, n_layers: int) -> int | None:
    """``hook_resid_post`` of layer l is ``hook_resid_pre`` of layer l + 1; after the last layer
    the selector positions feed nothing that reaches fp."""
    return layer + 1 if layer + 1 < n_layers else None


RESID_PRE = register(
    ResidPatch(
        "resid_pre",
        patch_positions,
        this_layer,
        legend="blocks.{l}.hook_resid_pre at the selector positions taken from the swapped input",
    )
)
RESID_POST = register(
    ResidPatch(
        "resid_post",
        patch_positions,
        next_layer,
        legend="blocks.{l}.hook_resid_post at the selector positions taken from the swapped input",
    )
)
