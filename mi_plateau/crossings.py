"""Crossings with intervals: when did a loss known only as an estimate cross a threshold?

Each checkpoint records L_seq as an estimate ``v`` with a standard error ``se`` (``L_seq_se``; 0
where the value is exact: the first-token family, a run that scored every group, a step that
``mi-plateau settle`` scored on the full set). Its *band* is ``[v - Z se, v + Z se]``.

**First checkpoint below t** (tau at alpha: t = alpha log K; the width's t_end):

- ``estimate``: the first checkpoint whose estimate is below t;
- ``lo``: the first checkpoint whose band reaches below t (no earlier one can be the crossing
  unless its full-set value lay outside its band);
- ``hi``: the first checkpoint whose whole band lies below t (the crossing is there or earlier);
  None where no recorded band lies wholly below t (the records do not bound it: censored).

**Last checkpoint above t before a given one** (the width's t_start, the mirror): ``hi`` = the
last whose band reaches above t, ``lo`` = the last whose whole band lies above t.

The interval ``[lo, hi]`` covers the full-set crossing whenever every band on the way holds its
full-set value; ``Z`` (``Z_INTERVAL``) is chosen so that the intervals of the committed runs
cover their exact crossings in >= 95% of crossings (docs/reproduction/coverage.md, built by
``analyses/coverage.py``). A crossing is **exact** when its interval at
``Z_EXACT`` (6e-5 per look under the normal approximation) holds one checkpoint: the value
``mi-plateau settle`` returns, which scores the checkpoints whose bands contain t until it does.
A value that is not recorded (NaN; the live evaluation stops scoring L_seq once it is below every
threshold a default question reads) is unknown: its band is the whole line.

Pure Python; ``summaries`` and ``settle.answers`` read every crossing through here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Z_INTERVAL = 2.0  # a band's half-width in standard errors for the reported intervals (chosen in coverage.md)
Z_EXACT = 4.0  # a crossing counts as exact once its interval at this Z is one checkpoint (settle's rule)


@dataclass(frozen=True)
class Crossing:
    """A crossing's answer: the estimate's own crossing (``estimate``), the interval ``[lo, hi]``
    of checkpoints that may hold the full-set crossing (``hi`` None: not bounded by the records),
    and ``exact`` (the interval at ``Z_EXACT`` is one checkpoint: the settled value)."""

    estimate: int | None
    lo: int | None
    hi: int | None
    exact: bool

    @property
    def value(self) -> int | None:
        """What a table shows: the exact crossing, else the estimate's."""
        return self.lo if self.exact else self.estimate

    def text(self) -> str:
        """``1,050 (exact)``, ``1,050 [1,000, 1,100] (estimate)``, ``none by 3,000 [2,950, -]`` ..."""
        if self.exact:
            return "none (exact)" if self.value is None else f"{self.value:,} (exact)"
        hi = "-" if self.hi is None else f"{self.hi:,}"
        lo = "-" if self.lo is None else f"{self.lo:,}"
        v = "none" if self.estimate is None else f"{self.estimate:,}"
        return f"{v} [{lo}, {hi}] (estimate)"


def _bands(values: Sequence[float], ses: Sequence[float], z: float) -> list[tuple[float, float]]:
    """(low, high) ends of each band; an unknown value (NaN, or se NaN/inf) spans the whole line."""
    out = []
    for v, se in zip(values, ses):
        if not (math.isfinite(v) and math.isfinite(se)):
            out.append((-math.inf, math.inf))
        else:
            out.append((v - z * se, v + z * se))
    return out


def first_below_index(values, ses, t: float, z: float) -> tuple[int | None, int | None, int | None]:
    """(estimate, lo, hi) as indices for "the first value below t" (module docstring)."""
    b = _bands(values, ses, z)
    est = next((i for i, v in enumerate(values) if math.isfinite(v) and v < t), None)
    lo = next((i for i, (low, _) in enumerate(b) if low < t), None)
    hi = next((i for i, (_, high) in enumerate(b) if high < t), None)
    return est, lo, hi


def last_above_index(values, ses, t: float, z: float, before: int) -> tuple[int | None, int | None, int | None]:
    """(estimate, lo, hi) as indices for "the last value above t before index ``before``"."""
    b = _bands(values, ses, z)
    idx = range(min(before, len(values)) - 1, -1, -1)
    est = next((i for i in idx if math.isfinite(values[i]) and values[i] > t), None)
    hi = next((i for i in idx if b[i][1] > t), None)
    lo = next((i for i in idx if b[i][0] > t), None)
    return est, lo, hi


def _steps(steps: Sequence[int], i: int | None) -> int | None:
    return None if i is None else int(steps[i])


def first_below(steps, values, ses, t: float, z: float = Z_INTERVAL) -> Crossing:
    """The first checkpoint with the (full-set) value below ``t``, as a ``Crossing`` in steps (no
    value recorded at all, as for a family a task does not have: nothing is known)."""
    if not any(math.isfinite(v) for v in values):
        return Crossing(None, None, None, False)
    est, lo, hi = first_below_index(values, ses, t, z)
    _, lo4, hi4 = first_below_index(values, ses, t, Z_EXACT)
    exact = lo4 is not None and lo4 == hi4
    if exact:  # the estimate's crossing is the exact one: pin it (a smaller Z cannot widen it)
        return Crossing(int(steps[hi4]), int(steps[hi4]), int(steps[hi4]), True)
    if lo4 is None and all(math.isfinite(v) and math.isfinite(s) for v, s in zip(values, ses)):
        return Crossing(None, None, None, True)  # every band wholly above t at Z_EXACT: no crossing
    return Crossing(_steps(steps, est), _steps(steps, lo), _steps(steps, hi), False)


def width(steps, values, ses, hi_t: float, lo_t: float, z: float = Z_INTERVAL) -> dict[str, Any]:
    """The transition width with intervals: t_end = the first checkpoint below ``lo_t``, t_start =
    the last one above ``hi_t`` before t_end (0 where none), tau_width = t_end - t_start. The
    intervals: t_end's as ``first_below``; t_start's from the bands before t_end's ends (its
    ``lo`` before t_end's ``lo``, its ``hi`` before t_end's ``hi``); the width's from both
    (``tau_width_lo`` = t_end lo - t_start hi, ``tau_width_hi`` = t_end hi - t_start lo)."""
    end = first_below(steps, values, ses, lo_t, z)
    index = {int(s): i for i, s in enumerate(steps)}

    def start_at(end_step: int | None, zz: float, pick: int) -> int | None:
        if end_step is None:
            return None
        r = last_above_index(values, ses, hi_t, zz, index[end_step])
        return 0 if r[pick] is None else int(steps[r[pick]])

    if end.estimate is None and end.lo is None:
        start = Crossing(None, None, None, end.exact)
    else:
        s_est = start_at(end.estimate, z, 0)
        s_lo, s_hi = start_at(end.lo, z, 1), start_at(end.hi, z, 2)
        s_lo4, s_hi4 = start_at(end.lo, Z_EXACT, 1), start_at(end.hi, Z_EXACT, 2)
        exact = end.exact and s_lo4 is not None and s_lo4 == s_hi4
        start = Crossing(s_lo4, s_lo4, s_lo4, True) if exact else Crossing(s_est, s_lo, s_hi, False)
    w_est = None if end.estimate is None or start.estimate is None else end.estimate - start.estimate
    w_lo = None if end.lo is None or start.hi is None else max(0, end.lo - start.hi)
    w_hi = None if end.hi is None or start.lo is None else end.hi - start.lo
    exact = end.exact and start.exact
    if exact:
        w_est = w_lo = w_hi = None if end.value is None else end.value - (start.value or 0)
    return {"t_start": start, "t_end": end, "tau_width": Crossing(w_est, w_lo, w_hi, exact)}


def columns(name: str, c: Crossing) -> dict[str, Any]:
    """A crossing as flat columns: ``name`` (the value a table shows), ``name_lo``, ``name_hi``,
    ``name_exact``."""
    return {name: c.value, f"{name}_lo": c.lo, f"{name}_hi": c.hi, f"{name}_exact": c.exact}
