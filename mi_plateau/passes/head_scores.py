"""The per-head scores, one declaration each: the registry that the heads table, the circuit
figures, the report and the pass cache's key read.

A score is a function of what the passes already have at one checkpoint (``HeadInputs``: the
evaluation set, the packed forward, the ablation effects, the swap gap) that returns one number
per head, [layer, head]; ``per_group`` (optional) gives its value per head and evaluation group,
[layer, head, group], for the bootstrap intervals over groups. Declared with ``@head_score``
(the column is the function's name), a score becomes

- a column of the "heads" rows (``per_checkpoint.head_rows``), and of "head_groups" with ``per_group``;
- a column of ``mi-plateau inspect``'s table (every score) and of ``ablate``'s (those that read
  the ablation), its ``legend`` a line under the table;
- with a ``Panel``: a column of the circuit figures (``figures.circuit``) and a line of the
  report's legend above them;
- part of the pass cache's key (``cache_version``): a checkpoint cached before the score existed
  is recomputed, never read without it.

``ablation`` says whether the score reads the per-head ablations (``HeadInputs.fx``): such a
score is NaN at the checkpoints where they do not run, and a cached checkpoint that had them
serves the cheap passes with it blanked (``analyze``). docs/design.md shows the diff of a new
score.

Nothing here imports torch (the tensors arrive with ``HeadInputs``): the figures and the report
read the registry without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: importing the registry must not import torch
    from jaxtyping import Float
    from torch import Tensor

    from ..metrics import PackedRun
    from ..task import EvalSet
    from .packed_twins import HeadEffects

# The passes' own revision, in the pass cache's key beside the registered scores: change it when
# what a pass computes changes under the same names (a formula, a baseline), which the names
# cannot show. A key of the former hand-numbered versions (4 and before) never matches.
CODE_VERSION = "5"
NAN = float("nan")


@dataclass(frozen=True)
class HeadInputs:
    """What the per-head scores read at one checkpoint: the evaluation set, the packed forward
    (``run.sel_attn``: each clean row's attention from fp to the selectors minus uniform), the
    ablation effects (all NaN where the ablations did not run), the checkpoint's swap gap and
    the smallest gap a share is taken of (``min_gap``, nats)."""

    ev: EvalSet
    run: PackedRun
    fx: HeadEffects
    swap_gap: float
    min_gap: float


@dataclass(frozen=True)
class Panel:
    """How the circuit figures draw a score: subplot ``title``, plotly colour ``scale``,
    ``diverging`` (the colour range symmetric about 0, else from min(0, lowest)), and the
    ``legend`` line the report prints above the figures."""

    title: str
    scale: str
    diverging: bool
    legend: str


@dataclass(frozen=True)
class HeadScore:
    """One registered score (see the module docstring). ``legend``: its definition in one line,
    as the command line prints it under a table ("name = legend")."""

    name: str
    compute: Callable[[HeadInputs], Float[Tensor, "layer head"]]
    ablation: bool
    legend: str
    per_group: Callable[[HeadInputs], Float[Tensor, "layer head group"]] | None = None
    panel: Panel | None = None


HEAD_SCORES: dict[str, HeadScore] = {}  # name -> score, in declaration order (the rows' column order)


def head_score(*, ablation: bool, legend: str, per_group=None, panel: Panel | None = None):
    """Register the decorated function as the per-head score of its name (see the module
    docstring); returns the function unchanged."""

    def register(fn: Callable[[HeadInputs], Tensor]) -> Callable[[HeadInputs], Tensor]:
        if fn.__name__ in HEAD_SCORES:
            raise ValueError(f"a per-head score {fn.__name__!r} is registered already")
        HEAD_SCORES[fn.__name__] = HeadScore(fn.__name__, fn, ablation, legend, per_group, panel)
        return fn

    return register


def panels() -> list[HeadScore]:
    """The scores the circuit figures draw (those with a ``Panel``), in declaration order."""
    return [s for s in HEAD_SCORES.values() if s.panel is not None]


def ablation_columns(per_group: bool = False) -> tuple[str, ...]:
    """The scores that read the ablations (NaN without them); with ``per_group``, those of
    them that have per-group values (the "head_groups" columns)."""
    return tuple(s.name for s in HEAD_SCORES.values() if s.ablation and (s.per_group or not per_group))


def cache_version() -> str:
    """The version in the pass cache's key: a hash of ``CODE_VERSION`` and every registered
    score (name, whether it reads the ablations, whether it has per-group values), so that
    declaring a score makes every cached checkpoint a miss, computed again with it."""
    d = {"code": CODE_VERSION, "heads": [[s.name, s.ablation, s.per_group is not None] for s in HEAD_SCORES.values()]}
    return hashlib.sha1(json.dumps(d).encode()).hexdigest()[:10]


# The scores. Ablation effects in nats (ablated minus clean; ``packed_twins.HeadEffects``);
# definitions in ``per_checkpoint`` and docs/analyses.md.


def _sel_attn_groups(at: HeadInputs) -> Float[Tensor, "layer head group"]:
    """The mean of ``sel_attn`` over each group's K rows (rows are group-major)."""
    _, L, H = at.run.sel_attn.shape
    return at.run.sel_attn.reshape(-1, at.ev.task.cfg.K, L, H).mean(1).permute(1, 2, 0)


@head_score(
    ablation=False,
    legend="attention from the A1 query to the selector z minus the uniform baseline",
    per_group=_sel_attn_groups,
    panel=Panel(
        title="selector attention − baseline",
        scale="RdBu",
        diverging=True,
        legend="sel_attn = attention from the position that predicts A1 to the selector positions minus the "
        "uniform baseline",
    ),
)
def sel_attn(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """Attention from fp to the selector positions, summed over them and averaged over the
    evaluation set's rows, minus the uniform baseline len_z / (fp + 1)."""
    return at.run.sel_attn.mean(0)


@head_score(
    ablation=True,
    legend="ablation Delta L, full-vocabulary cross-entropy over A1..A4 and EOS, ablated - clean (the paper's; nats)",
    per_group=lambda at: at.fx.group_dL,
)
def dL(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """The paper's Delta L: full-vocabulary cross-entropy over A1..A4 and EOS, ablated - clean."""
    return at.fx.dL


@head_score(
    ablation=True,
    legend="ablation Delta Lc (first-token candidate loss; nats)",
    per_group=lambda at: at.fx.group_dLc,
    panel=Panel(
        title="ablation ΔLc (nats)",
        scale="Reds",
        diverging=False,
        legend="ΔLc = ablation (hook_z zeroed) effect on Lc in nats",
    ),
)
def dLc(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """Delta Lc: the first-token candidate loss, ablated - clean."""
    return at.fx.dLc


@head_score(ablation=True, legend="ablation Delta L1 (first token, full vocabulary; nats)")
def dL1(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """Delta L1: the first token's full-vocabulary cross-entropy, ablated - clean."""
    return at.fx.dL1


@head_score(
    ablation=True,
    legend="swap gap removed by ablating the head (nats)",
    per_group=lambda at: at.fx.group_swap_contrib,
)
def swap_contrib(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """The swap gap the head's ablation removes: dLc - dLc(swapped input) (nats of
    z-dependence that need the head; NaN without a selector swap)."""
    return at.fx.swap_contrib


@head_score(
    ablation=True,
    legend="swap_contrib / swap gap (blank while the gap is below 0.05 nats)",
    panel=Panel(
        title="causal share of Δz",
        scale="RdBu",
        diverging=True,
        legend="causal share = swap gap removed by ablating the head / swap gap (blank while the gap is below "
        "0.05 nats)",
    ),
)
def causal_share(at: HeadInputs) -> Float[Tensor, "layer head"]:
    """``swap_contrib / swap_gap``, NaN while the swap gap is below ``min_gap`` (divided in
    float64, the precision of the checkpoint's swap gap)."""
    c = at.fx.swap_contrib.double()
    return c / at.swap_gap if at.swap_gap >= at.min_gap else c.new_full(c.shape, NAN)
