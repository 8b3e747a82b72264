"""Interventions on the model, each defined as TransformerLens hook functions (the readable
definition, as in TransformerLens's ``patching`` module) with the packed path the passes run
registered beside it as its fast twin (``registry``).

One module per intervention: ``zero`` and ``mean`` (head ablations: ``hook_z`` of one head
replaced), ``patching`` (``hook_resid_pre`` and ``hook_resid_post`` patched at the selector
positions from the swapped input). Importing the package registers them all; a new one is a
new module here and its name in the import below (docs/design.md).
"""

from . import mean, patching, zero  # noqa: F401  (each registers itself)
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
