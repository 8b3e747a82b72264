"""Percentile bootstrap intervals over groups for the tables and the routing summary.

Every interval resamples the evaluation groups with replacement (``n_boot`` resamples, a
generator seeded ``seed``) and recomputes a statistic of the per-group rows on each resample;
``resample_counts`` gives the same draws as ``group_bootstrap`` and ``head_bootstrap`` under the
same seed. Intervals are 95% (``level``) percentile intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..frames import Rows, frame, records
from .curves import half_rise_many


def group_bootstrap(accs: Sequence[float], n_boot: int, seed: int, level: float = 0.95) -> dict[str, float]:
    """Percentile bootstrap over groups of Table 6's three numbers (``metrics.accuracy_shares``):
    the % of groups with accuracy >= ``metrics.ACC_THRESHOLD``, the % at 1, and the mean
    accuracy; ``{<name>_lo, <name>_hi}``."""
    # metrics imports torch: only when a table draws intervals, so that the tables import without it
    from ..metrics import accuracy_shares

    a = np.asarray(accs, dtype=float)
    if not len(a) or n_boot <= 0:
        return {}
    idx = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    mean, ge80, eq100 = accuracy_shares(a[idx])
    stats = {"ge80_pct": 100 * ge80, "eq100_pct": 100 * eq100, "mean_acc": mean}
    q = (0.5 - level / 2, 0.5 + level / 2)
    out = {}
    for k, v in stats.items():
        lo, hi = np.quantile(v, q)
        out[f"{k}_lo"], out[f"{k}_hi"] = float(lo), float(hi)
    return out


def head_bootstrap(
    per_group: dict[str, list[float]], n_boot: int, seed: int, level: float = 0.95
) -> dict[str, dict[str, float]]:
    """Percentile bootstrap over groups of each head's mean ablation delta, and the share of
    resamples in which each head has the largest mean. ``per_group[head]`` holds the head's
    per-group deltas, in one group order for every head. Returns {head: {lo, hi, top_share}}."""
    heads = list(per_group)
    if not heads or n_boot <= 0:
        return {}
    M = np.asarray([per_group[h] for h in heads], dtype=float)  # [head, group]
    idx = np.random.default_rng(seed).integers(0, M.shape[1], size=(n_boot, M.shape[1]))
    means = M[:, idx].mean(-1)  # [head, resample]
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=1)
    top = np.bincount(means.argmax(0), minlength=len(heads)) / n_boot
    return {h: {"lo": float(lo[i]), "hi": float(hi[i]), "top_share": float(top[i])} for i, h in enumerate(heads)}


def resample_counts(n_groups: int, n_boot: int, seed: int) -> np.ndarray:
    """[n_boot, n_groups]: how often each group is drawn in each bootstrap resample (the same
    draws as ``group_bootstrap`` and ``head_bootstrap`` with the same seed)."""
    idx = np.random.default_rng(seed).integers(0, n_groups, size=(n_boot, n_groups))
    flat = (idx + n_groups * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_groups).reshape(n_boot, n_groups)


def _per_group(rows, value: str, head: str | None = None):
    """(steps, [group, step] matrix) of one per-group quantity, over the steps where every
    group has it; None if there are none."""
    df = rows if hasattr(rows, "pivot_table") else frame(records(rows))
    if not len(df) or value not in df.columns:
        return None
    if head is not None:
        df = df[df["head"] == head]
    m = df.pivot_table(index="group", columns="step", values=value, aggfunc="first").dropna(axis=1, how="any")
    return (list(m.columns), m.to_numpy(dtype=float)) if m.shape[1] else None


def _interval(values: np.ndarray, level: float) -> tuple[float, float] | tuple[None, None]:
    """Percentile interval of the resamples where the statistic is defined (None if it is
    defined in fewer than half of them)."""
    ok = values[np.isfinite(values)]
    if len(ok) < len(values) / 2:
        return None, None
    lo, hi = np.quantile(ok, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


def swap_gap_intervals(group_rows: Rows, n_boot: int, seed: int, level: float = 0.95) -> Rows:
    """Per checkpoint, the 95% bootstrap interval over groups of both swap gaps (the mean of
    the groups' gaps): rows (step, swap_gap_lo, swap_gap_hi, swap_gap_seq_lo, swap_gap_seq_hi)."""
    by: dict[int, dict[str, Any]] = {}
    for col in ("swap_gap", "swap_gap_seq"):
        got = _per_group(group_rows, col) if n_boot > 0 else None
        if got is None:
            continue
        steps, X = got
        means = resample_counts(X.shape[0], n_boot, seed) @ X / X.shape[0]  # [resample, step]
        lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=0)
        for s, a, b in zip(steps, lo, hi):
            by.setdefault(int(s), {"step": int(s)}).update({f"{col}_lo": float(a), f"{col}_hi": float(b)})
    return frame(sorted(by.values(), key=lambda r: r["step"]))


def routing_intervals(
    out: dict[str, Any], head_group_rows: Rows, group_rows: Rows, n_boot: int, seed: int, level: float = 0.95
) -> dict[str, Any]:
    """95% bootstrap intervals over groups (``<key>_lo``, ``<key>_hi``) of the leads in a
    ``routing`` result and of the step where the swap gap first exceeds 0.1 nats (as a fraction
    of tau): each resample of the groups recomputes the heads' mean score curves and the swap
    gap's, and from them t_r and the crossing. The heads (routing, top attention) and tau stay
    those of the full set of groups: the interval is the uncertainty of the timing alone."""
    res: dict[str, Any] = {}
    if n_boot <= 0:
        return res
    taus = {"": out.get("tau"), "_first_token": out.get("tau_first_token")}
    drawn: dict[int, np.ndarray] = {}

    def mean_curves(X: np.ndarray) -> np.ndarray:  # [resample, step]: the resampled groups' mean
        if X.shape[0] not in drawn:
            drawn[X.shape[0]] = resample_counts(X.shape[0], n_boot, seed)
        return drawn[X.shape[0]] @ X / X.shape[0]

    for label in ("routing", "top_attention"):
        head = out.get(f"{label}_head")
        if head is None:
            continue
        for score in ("sel_attn", "swap_contrib"):
            got = _per_group(head_group_rows, score, head)
            if got is None or len(got[0]) < 2:
                continue
            steps, X = got
            t_r = half_rise_many(steps, mean_curves(X))
            for suffix, tau in taus.items():
                if tau:
                    key = f"{label}_lead_{score}{suffix}"
                    res[f"{key}_lo"], res[f"{key}_hi"] = _interval((tau - t_r) / tau, level)
    got = _per_group(group_rows, "swap_gap")
    if got is not None:
        steps, X = got
        above = mean_curves(X) > 0.1
        first = np.where(above.any(1), np.asarray(steps, dtype=float)[above.argmax(1)], np.nan)
        for suffix, tau in taus.items():
            if tau:
                key = f"swap_gap_0.1_frac_tau{suffix}"
                res[f"{key}_lo"], res[f"{key}_hi"] = _interval(first / tau, level)
    return res
