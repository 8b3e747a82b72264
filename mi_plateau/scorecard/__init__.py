"""The pages read off committed tables, against the paper: the scorecard (``page``: a row per
artifact and claim, the readers in ``tables`` and ``claims``, the one verdict rule in
``verdicts``, the number formats in ``scoring``) and Table 12 as a whole (``controls``).
Nothing here trains or scores a model; ``mi-plateau reproduce scorecard`` and ``reproduce
controls`` write them.
"""

from .page import (
    EXPLAINED,
    FOREST,
    PAGE,
    POINTS,
    ROWS,
    RULES,
    SAME,
    SOURCES,
    STEM,
    judged_rows,
    scorecard,
    verdict_counts,
    write_scorecard,
)
from .tables import spreads
from .verdicts import point

__all__ = [
    "EXPLAINED",
    "FOREST",
    "PAGE",
    "POINTS",
    "ROWS",
    "RULES",
    "SAME",
    "SOURCES",
    "STEM",
    "judged_rows",
    "point",
    "scorecard",
    "spreads",
    "verdict_counts",
    "write_scorecard",
]
