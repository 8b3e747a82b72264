"""Reading a transition off a score curve: missing values, the plateau level, and the half-rise
rule that times an assembly (t_r), for one curve and for many resampled ones.

Torch-free, like the tables that use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def finite(v) -> bool:
    """Neither missing (None) nor NaN."""
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def plateau_level(steps: Sequence[float], Lc: Sequence[float], tau: int) -> float:
    """Median Lc over the checkpoints strictly between step 0 and 0.5 tau (Lc at step 0 if none)."""
    pre = [v for s, v in zip(steps, Lc) if 0 < s < 0.5 * tau]
    return float(np.median(pre)) if pre else float(Lc[0])


def half_rise_step(steps: Sequence[int], values: Sequence[float]) -> int | None:
    """First step at which a score reaches half of its rise from its first to its last value."""
    pairs = [(s, v) for s, v in zip(steps, values) if finite(v)]
    if len(pairs) < 2:
        return None
    v0, vf = pairs[0][1], pairs[-1][1]
    if vf <= v0:
        return None
    half = v0 + 0.5 * (vf - v0)
    return next(s for s, v in pairs if v >= half)


def half_rise_many(steps: Sequence[int], curves: np.ndarray) -> np.ndarray:
    """``half_rise_step`` of each row of ``curves`` [n, step] (NaN where the score does not rise)."""
    v0, vf = curves[:, 0], curves[:, -1]
    first = (curves >= (v0 + 0.5 * (vf - v0))[:, None]).argmax(1)
    t = np.asarray(steps, dtype=float)[first]
    t[~(vf > v0)] = np.nan
    return t
