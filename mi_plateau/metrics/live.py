"""The live subset of the evaluation set: the seeded groups, and the rows of each, whose L_seq a
checkpoint scores while training (``evaluate``'s ``live``); the other groups are scored where a
crossing needs them afterwards (``settle``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..summaries import group_order

LIVE_ROWS = 5  # rows (selectors) of each live group whose L_seq is scored live (all K where K is smaller)


@dataclass(frozen=True)
class Live:
    """The live subset of the evaluation set: ``groups`` (sorted) and, over the rows of
    ``EvalSet.subset(groups)`` (group-major), the ``m`` seeded rows of each whose L_seq is scored."""

    groups: np.ndarray
    rows: np.ndarray  # bool, one per row of the subset
    m: int


def live_subset(n_live: int, groups: np.ndarray, K: int, eval_seed: int) -> Live | None:
    """``n_live`` of the evaluation ``groups`` and min(K, ``LIVE_ROWS``) rows of each, drawn by
    generators seeded by ``eval_seed`` (the same at every checkpoint of a run); None where
    ``n_live`` is 0 or at least every group (L_seq is then scored on the full set live). A row
    costs K - 1 continuation strings, so the live cost grows as K, not K^2."""
    if not n_live or n_live >= len(groups):
        return None
    chosen = np.sort(np.asarray(group_order(groups, eval_seed)[:n_live]))
    m = min(K, LIVE_ROWS)
    pick = np.random.default_rng([eval_seed, 0x5EB5, 1]).random((n_live, K)).argsort(1)[:, :m]
    rows = np.zeros((n_live, K), dtype=bool)
    rows[np.arange(n_live)[:, None], pick] = True
    return Live(chosen, rows.ravel(), m)
