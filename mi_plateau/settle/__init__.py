"""The settle stage: a run's crossings (tau at any alpha, the transition width) made exact on the
full evaluation set where the live estimate cannot decide them (``settlement``: the questions,
their walks, the scorings), and what a reader asks of the settled records (``answers``: a
question's answer, a run's summary). Its scorings are kept in the run folder's ``settled.json``,
which the storage stage reads and writes (``checkpoints.settled``).
"""

from .answers import answer, run_summary, settled_summary
from .settlement import (
    TABLE5_ALPHAS,
    Crossing,
    Settlement,
    Width,
    Z,
    default_questions,
    pending,
    retire_live,
    scorer,
    settle,
)

__all__ = [
    "TABLE5_ALPHAS",
    "Z",
    "Crossing",
    "Settlement",
    "Width",
    "answer",
    "default_questions",
    "pending",
    "retire_live",
    "run_summary",
    "scorer",
    "settle",
    "settled_summary",
]
