"""Interventions on the model, each defined as TransformerLens hook functions (the readable
definition, as in TransformerLens's ``patching`` module) with the packed path the passes run
registered beside it as its fast twin (``registry``: the two kinds, head ablations of ``hook_z``
and residual patches at the selector positions).

One module per intervention, each registering itself when imported; importing the package
imports them all (the line below). A new one is a new module here and its name in that line
(docs/design.md, "Adding an intervention"); docs/interventions.md lists them.
"""

from . import group_mean, mean, patching, zero  # noqa: F401  (each registers itself)
from .registry import (
    INTERVENTIONS,
    FwdHooks,
    HeadAblation,
    Intervention,
    ResidPatch,
    head_ablation_named,
    head_ablations,
    register,
    resid_patches,
)

__all__ = [
    "INTERVENTIONS",
    "FwdHooks",
    "HeadAblation",
    "Intervention",
    "ResidPatch",
    "head_ablation_named",
    "head_ablations",
    "register",
    "resid_patches",
]
