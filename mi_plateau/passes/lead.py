"""Figure 3(a) as the paper drew it, "z-dependence leads loss across all K", and the abstract's
"~50% lead": when the model starts to read the selector, against when its loss starts to fall.

Per run, from the checkpoint rows of the passes (first-token family, every checkpoint):

- the loss ``Lc`` (A1's cross-entropy over the K candidate first characters) and the z-gap
  ``shuffle_gap`` (Lc with the selectors deranged across the evaluation examples, minus the
  clean Lc), both in nats; Figure 3(a) plots both divided by log K against the step;
- loss onset: the first checkpoint with Lc < ``loss_frac`` log K (0.9);
- z onset: the first checkpoint with z-gap > ``gap`` nats (0.1; 0.05 is the sensitive variant);
- lead = loss onset - z onset (steps); lead fraction = lead / loss onset.

Over a K sweep (``sweep_lead``): the mean and the standard deviation (ddof 0) of the lead
fraction over the runs with a positive lead (the abstract's number), and the exponent s of the
least-squares fit log lead = s log K + c over those runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checkpoints import RunError
from ..frames import records

LOSS_FRAC = 0.9
GAPS = (0.1, 0.05)  # the z onset's threshold (nats) and its sensitive variant


def _first(steps: Sequence[int], ok: Sequence[bool]) -> int | None:
    return next((int(s) for s, o in zip(steps, ok) if o), None)


def z_onsets(rows, K: int, loss_frac: float = LOSS_FRAC, gaps: Sequence[float] = GAPS) -> dict[str, Any]:
    """The loss onset, the z onsets at each gap of ``gaps`` and the leads of one run, from rows with
    ``step``, ``Lc`` and ``shuffle_gap`` (the passes' checkpoint table). Keys: ``loss_onset``,
    ``z_onset_<gap>``, ``lead_<gap>``, ``lead_frac_<gap>`` (None where an onset was not reached)."""
    rs = sorted(records(rows), key=lambda r: r["step"])
    if not rs or any("shuffle_gap" not in r for r in rs):
        raise RunError("Figure 3(a): the checkpoint rows have no z-shuffle gap (shuffle_gap); run the passes first")
    if all(not _finite(r["shuffle_gap"]) for r in rs):
        raise RunError("Figure 3(a): no checkpoint has a z-shuffle gap (a run without a selector?)")
    steps = [r["step"] for r in rs]
    logK = math.log(K)
    out: dict[str, Any] = {
        "K": K,
        "loss_onset": _first(steps, [_finite(r["Lc"]) and r["Lc"] < loss_frac * logK for r in rs]),
    }
    for g in gaps:
        z = _first(steps, [_finite(r["shuffle_gap"]) and r["shuffle_gap"] > g for r in rs])
        lead = out["loss_onset"] - z if (z is not None and out["loss_onset"] is not None) else None
        out[f"z_onset_{g}"] = z
        out[f"lead_{g}"] = lead
        out[f"lead_frac_{g}"] = lead / out["loss_onset"] if lead is not None and out["loss_onset"] else None
    return out


def curve_rows(rows, K: int) -> list[dict[str, Any]]:
    """Figure 3(a)'s series: per checkpoint, Lc / log K and the z-gap / log K."""
    logK = math.log(K)
    return [
        {"step": r["step"], "Lc_over_logK": r["Lc"] / logK, "zgap_over_logK": r["shuffle_gap"] / logK}
        for r in sorted(records(rows), key=lambda r: r["step"])
    ]


def sweep_lead(onsets: Sequence[dict[str, Any]], gap: float = GAPS[0]) -> dict[str, Any]:
    """Over a K sweep's runs (``z_onsets`` rows): the runs with a positive lead at ``gap``, the
    mean and the std (ddof 0) of their lead fraction, and the fitted exponent of lead ~ K^s."""
    pos = [o for o in onsets if (o.get(f"lead_{gap}") or 0) > 0]
    fr = np.array([o[f"lead_frac_{gap}"] for o in pos], dtype=float)
    out: dict[str, Any] = {
        "gap": gap,
        "runs": len(onsets),
        "positive": len(pos),
        "Ks_positive": [o["K"] for o in pos],
        "mean_lead_frac": float(fr.mean()) if len(fr) else None,
        "std_lead_frac": float(fr.std(ddof=0)) if len(fr) else None,
        "lead_exponent": None,
    }
    if len({o["K"] for o in pos}) >= 2:
        x = np.log([o["K"] for o in pos])
        y = np.log([o[f"lead_{gap}"] for o in pos])
        out["lead_exponent"] = float(np.polyfit(x, y, 1)[0])
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
