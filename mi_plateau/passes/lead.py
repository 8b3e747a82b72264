"""Figure 3(a) as the paper drew it, "z-dependence leads loss across all K", and the abstract's
"~50% lead": when the model starts to read the selector, against when its loss starts to fall.

Two pairs of series, both in nats per checkpoint, both reported (``Series``):

- the original's (``ORIGINAL``, SPEC 5): its trainer's first-token loss, our records'
  ``train_first_loss`` (A1's full-vocabulary cross-entropy on the training batches, the mean over
  the steps since the last checkpoint; none at step 0; it sits near log 36, not log K, on the
  plateau), and its z-gap ``train_gap`` = ``train_first_loss_z_deranged`` (the last training batch
  with its selectors deranged across it) minus ``train_first_loss``; ``original_series`` reads
  them off a run's checkpoint records, nothing to compute;
- ours (``OURS``): ``Lc`` (A1's cross-entropy over the K candidate first characters, on the
  evaluation set; Lc <= L1, so it reads an earlier loss onset) and ``shuffle_gap`` (Lc with the
  selectors deranged across the evaluation examples, minus the clean Lc), from the passes'
  checkpoint rows.

Figure 3(a) plots loss and gap divided by log K against the step. Per run and series:

- loss onset: the first checkpoint with loss < ``loss_frac`` log K (0.9);
- z onset: the first checkpoint with z-gap > ``gap`` nats (0.1; 0.05 is the sensitive variant);
- lead = loss onset - z onset (steps); lead fraction = lead / loss onset.

The original's first-token tau (``original_tau``: the first checkpoint with ``train_first_loss`` <
0.5 log K) is the tau its Figure 3(b) script reads its windows against (``passes.descent``).

Over a K sweep (``sweep_lead``): the mean and the standard deviation (ddof 0) of the lead
fraction over the runs with a positive lead (the abstract's number), and the exponent s of the
least-squares fit log lead = s log K + c over those runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..checkpoints import RunError
from ..frames import records

LOSS_FRAC = 0.9
TAU_FRAC = 0.5  # the original's first-token tau: train_first_loss < 0.5 log K
GAPS = (0.1, 0.05)  # the z onset's threshold (nats) and its sensitive variant


@dataclass(frozen=True)
class Series:
    """The loss and z-gap columns (nats) a Figure 3(a) reads, and how a message names the gap."""

    loss: str
    gap: str
    gap_name: str
    hint: str


OURS = Series("Lc", "shuffle_gap", "z-shuffle gap", "run the passes first")
ORIGINAL = Series(
    "train_first_loss",
    "train_gap",
    "training batch's z-deranged gap",
    "the run's records keep no train_first_loss_z_deranged (trained before the trainer kept it)",
)


def _first(steps: Sequence[int], ok: Sequence[bool]) -> int | None:
    return next((int(s) for s, o in zip(steps, ok) if o), None)


def z_onsets(
    rows, K: int, loss_frac: float = LOSS_FRAC, gaps: Sequence[float] = GAPS, series: Series = OURS
) -> dict[str, Any]:
    """The loss onset, the z onsets at each gap of ``gaps`` and the leads of one run, from rows with
    ``step`` and the loss and gap columns of ``series`` (ours: the passes' checkpoint table; the
    original's: ``original_series``). Keys: ``loss_onset``, ``z_onset_<gap>``, ``lead_<gap>``,
    ``lead_frac_<gap>`` (None where an onset was not reached)."""
    rs = sorted(records(rows), key=lambda r: r["step"])
    if not rs or any(series.gap not in r for r in rs):
        raise RunError(f"Figure 3(a): the checkpoint rows have no {series.gap_name} ({series.gap}); {series.hint}")
    if all(not _finite(r[series.gap]) for r in rs):
        raise RunError(f"Figure 3(a): no checkpoint has a {series.gap_name} (a run without a selector?)")
    steps = [r["step"] for r in rs]
    logK = math.log(K)
    out: dict[str, Any] = {
        "K": K,
        "loss_onset": _first(steps, [_finite(r[series.loss]) and r[series.loss] < loss_frac * logK for r in rs]),
    }
    for g in gaps:
        z = _first(steps, [_finite(r[series.gap]) and r[series.gap] > g for r in rs])
        lead = out["loss_onset"] - z if (z is not None and out["loss_onset"] is not None) else None
        out[f"z_onset_{g}"] = z
        out[f"lead_{g}"] = lead
        out[f"lead_frac_{g}"] = lead / out["loss_onset"] if lead is not None and out["loss_onset"] else None
    return out


def curve_rows(rows, K: int) -> list[dict[str, Any]]:
    """Figure 3(a)'s series, ours: per checkpoint, Lc / log K and the z-gap / log K."""
    logK = math.log(K)
    return [
        {"step": r["step"], "Lc_over_logK": r["Lc"] / logK, "zgap_over_logK": r["shuffle_gap"] / logK}
        for r in sorted(records(rows), key=lambda r: r["step"])
    ]


def original_series(recs, K: int) -> list[dict[str, Any]]:
    """Figure 3(a)'s series by the original's quantity, from a run's checkpoint records: per record
    with a finite ``train_first_loss`` (none at step 0), the step, ``train_first_loss`` and
    ``train_first_loss_z_deranged`` (nats), ``train_gap`` = the second minus the first (None where
    the deranged loss is missing), and the loss and the gap over log K (``first_loss_over_logK``,
    ``zgap_over_logK``). Empty for records written before the trainer kept the first-token loss."""
    logK = math.log(K)
    out = []
    for r in sorted(records(recs), key=lambda r: r["step"]):
        first, der = r.get("train_first_loss"), r.get("train_first_loss_z_deranged")
        if not _finite(first):
            continue
        gap = der - first if _finite(der) else None
        out.append(
            {
                "step": int(r["step"]),
                "train_first_loss": first,
                "train_first_loss_z_deranged": der if _finite(der) else None,
                "train_gap": gap,
                "first_loss_over_logK": first / logK,
                "zgap_over_logK": gap / logK if gap is not None else None,
            }
        )
    return out


def original_onsets(series, K: int) -> dict[str, Any] | None:
    """``z_onsets`` by the original's quantity on ``original_series`` rows; None where they hold no
    z-deranged gap (records written before the trainer kept it, or a task without a selector)."""
    rs = records(series)
    if not any(_finite(r.get("train_gap")) for r in rs):
        return None
    return z_onsets(rs, K, series=ORIGINAL)


def original_tau(series, K: int, frac: float = TAU_FRAC) -> int | None:
    """The original's first-token tau: the first step of ``original_series`` rows (or any rows
    with ``step`` and ``train_first_loss``) with ``train_first_loss`` < ``frac`` log K; None
    before it is reached."""
    rs = sorted(records(series), key=lambda r: r["step"])
    level = frac * math.log(K)
    return _first(
        [r["step"] for r in rs], [_finite(r.get("train_first_loss")) and r["train_first_loss"] < level for r in rs]
    )


def sweep_lead(onsets: Sequence[dict[str, Any]], gap: float = GAPS[0]) -> dict[str, Any]:
    """Over a K sweep's runs (``z_onsets`` rows): ``n``, the number of runs with a positive lead at
    ``gap``, the mean and the std (ddof 0) of their lead fraction, and the fitted exponent of
    lead ~ K^s over them (None below two Ks)."""
    pos = [o for o in onsets if (o.get(f"lead_{gap}") or 0) > 0]
    fr = np.array([o[f"lead_frac_{gap}"] for o in pos], dtype=float)
    out: dict[str, Any] = {
        "gap": gap,
        "runs": len(onsets),
        "n": len(pos),
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
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
