"""Interventions on the model, each defined as TransformerLens hook functions (the readable
definition, as in TransformerLens's ``patching`` module) with the packed path the passes run
registered beside it as its fast twin (``registry``: the two kinds, head ablations of ``hook_z``
and residual patches at the selector positions).

One module per intervention, each registering itself when imported; importing the package
imports every module of this folder (in file-name order, the registry's order). A new one is a
new module here and its test (docs/design.md, "Adding an intervention"); docs/interventions.md
lists them.
"""

import importlib
import pkgutil

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

for _module in pkgutil.iter_modules(__path__):  # each registers itself
    if _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")
