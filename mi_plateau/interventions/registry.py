"""The registry of interventions: each one written as TransformerLens hook functions (what it
is), with the packed path that the passes run registered beside it as its fast twin.

Two kinds, one dataclass each:

- ``HeadAblation``: a new value for one head's ``blocks.{l}.attn.hook_z``. The ablation pass
  runs one of them (``PassConfig.head_ablation``, ``--ablation``; zero by default) on every head,
  on the clean and the selector-swapped inputs; the per-head scores that read the ablation
  (dL, dLc, dL1, swap_contrib, causal_share: ``passes.head_scores``) are its effects.
- ``ResidPatch``: one residual-stream hook patched at the selector positions from the
  selector-swapped input, layer by layer. The patching pass runs every registered one; each is
  the ``hook`` of its rows (``patch_frac``, ``ld_moved``).

A researcher reads the hook; its docstring is the definition. The fast twin computes the same
numbers on the prefix packs (``model.packing``, ``passes.packed_twins``), and
``tests/integration/test_interventions.py`` runs every registered intervention both ways and
asserts they agree. The CLI's choices, the tables' and the report's legends and the generated
docs/interventions.md read this registry; docs/design.md shows the one file a new one takes.

Nothing here imports torch: the hooks and twins only call methods of the tensors they are given,
so the command line reads the registry without loading it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: importing the registry must not import torch
    from torch import Tensor

FwdHooks = list[tuple[str, Callable]]  # what ``run_with_hooks(tokens, fwd_hooks=...)`` takes


@dataclass(frozen=True)
class HeadAblation:
    """A way of taking one head out of the model: a new value for its ``hook_z`` at every
    position, everything else left as it computes.

    - ``hook(z, hook, *, head, ctx, group)``: the definition, a TransformerLens hook on
      ``blocks.{l}.attn.hook_z`` [batch, pos, head, d_head] that rewrites head ``head``;
      ``group`` [batch] is each row's evaluation group (its index in ``ev.groups``).
    - ``packed(z, *, ctx, positions, group)``: the fast twin, the value the head's ``hook_z``
      takes at the packed nodes: ``z`` [pack, node, head, d_head] is the clean value,
      ``positions`` [pack, node] each node's position, ``group`` [pack] each pack's group (one
      pack per group). ``passes.packed_twins.ablate_layer`` restarts every head's variant
      from it; the value must depend on a node only through its position, group and clean z
      (a node stands for every row that shares its prefix).
    - ``context(z, K)``: what both read from the clean run (``ctx``), computed from ``hook_z``
      of every evaluation row [row, pos, head, d_head] (rows group-major, K per group); None
      where they read nothing.
    - ``legend``: what is done to the head, as the tables and the report print it after "the
      head's" ("hook_z zeroed at every position").
    """

    name: str
    hook: Callable[..., Tensor]
    packed: Callable[..., Tensor]
    legend: str
    context: Callable[[Tensor, int], Tensor] | None = None

    @staticmethod
    def hook_name(layer: int) -> str:
        return f"blocks.{layer}.attn.hook_z"

    def fwd_hooks(self, layer: int, head: int, ctx: Tensor | None = None, group: Tensor | None = None) -> FwdHooks:
        """The hooks that ablate head ``head`` of layer ``layer``, for ``run_with_hooks``."""
        return [(self.hook_name(layer), partial(self.hook, head=head, ctx=ctx, group=group))]


@dataclass(frozen=True)
class ResidPatch:
    """``blocks.{l}.hook_{name}`` patched at the selector positions from the selector-swapped
    input (same B, selector k+s), one layer at a time.

    - ``hook(x, hook, *, src, positions)``: the definition, a TransformerLens hook on that point
      [batch, pos, d_model]; ``src`` is the swapped run's value there, ``positions`` the
      selector positions.
    - ``restart(layer, n_layers)``: the fast twin, the layer whose ``hook_resid_pre`` the patched
      point is: ``passes.packed_twins.patch_layer`` restarts there, with the patched rows as new
      nodes at fp; None where nothing the patch changes reaches fp (its fraction is 0).
    - ``legend``: where the patch acts, as the inspect command and the report print it.
    """

    name: str
    hook: Callable[..., Tensor]
    restart: Callable[[int, int], int | None]
    legend: str

    def hook_name(self, layer: int) -> str:
        return f"blocks.{layer}.hook_{self.name}"

    def fwd_hooks(self, layer: int, src: Tensor, positions: list[int]) -> FwdHooks:
        """The hooks that patch layer ``layer`` from ``src``, for ``run_with_hooks``."""
        return [(self.hook_name(layer), partial(self.hook, src=src, positions=positions))]


Intervention = HeadAblation | ResidPatch
INTERVENTIONS: dict[str, Intervention] = {}  # name -> intervention, in registration order


def register(iv: Intervention) -> Intervention:
    """Add ``iv`` to the registry under its name (refused if the name is taken); returns it."""
    if iv.name in INTERVENTIONS:
        raise ValueError(f"an intervention {iv.name!r} is registered already")
    INTERVENTIONS[iv.name] = iv
    return iv


def head_ablations() -> dict[str, HeadAblation]:
    """The registered head ablations by name: the choices of ``--ablation``."""
    return {k: v for k, v in INTERVENTIONS.items() if isinstance(v, HeadAblation)}


def head_ablation_named(name: str) -> HeadAblation:
    """The head ablation registered as ``name``; a ValueError naming the choices otherwise."""
    found = head_ablations()
    if name not in found:
        raise ValueError(f"head ablation {name!r}: choose one of {', '.join(found)}")
    return found[name]


def resid_patches() -> list[ResidPatch]:
    """The registered residual patches, in order: the patching pass's hooks."""
    return [v for v in INTERVENTIONS.values() if isinstance(v, ResidPatch)]
