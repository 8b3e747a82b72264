"""Plotly figures built from the passes' tidy tables (no computation of results here).

Every function takes tidy rows and draws them; the only arithmetic is choosing colour ranges
and axis ticks. By family:

- ``curves``: loss against step (``loss_curves``, ``llc_curve``, Figure 1's ``figure1``);
- ``descent``: Figure 3 as the paper drew it (``figure3_paper``: the lead, the displacement cosine);
- ``transition``: our Figure 3 variants against t / tau (``figure3``), the groups' accuracy (``group_accuracy``)
  and the transition width read on the loss curves (``width_curves``);
- ``circuit``: the heads and the residual stream (``head_scores_over_training``,
  ``head_grid_slider``: one column per score with a panel in ``passes.head_scores``;
  ``attention_pattern``, ``patching``);
- ``forest``: the scorecard as a forest plot, ours over the paper's value per number (``forest``);
- ``sweeps``: tau against a swept quantity (``tau_power_law``), the phase diagram
  (``phase_diagram``) and log-axis ticks (``log_ticks``, ``tick_label``);
- ``style``: the palette and the None / NaN handling they share.
"""

from .circuit import attention_pattern, head_grid_slider, head_scores_over_training, patching
from .curves import LOSS_SERIES, METRIC_COLOURS, figure1, llc_curve, loss_curves
from .descent import figure3_paper
from .forest import SAME_SYMBOLS, VERDICT_COLOURS, forest
from .style import PALETTE
from .sweeps import log_ticks, phase_diagram, tau_power_law, tick_label
from .transition import FAMILY_LABEL, figure3, group_accuracy, width_curves

__all__ = [
    "FAMILY_LABEL",
    "LOSS_SERIES",
    "METRIC_COLOURS",
    "PALETTE",
    "SAME_SYMBOLS",
    "VERDICT_COLOURS",
    "attention_pattern",
    "figure1",
    "figure3",
    "figure3_paper",
    "forest",
    "group_accuracy",
    "head_grid_slider",
    "head_scores_over_training",
    "llc_curve",
    "log_ticks",
    "loss_curves",
    "patching",
    "phase_diagram",
    "tau_power_law",
    "tick_label",
    "width_curves",
]
