"""Power-law fits of the sweep tables: tau ~ D^delta (Table 3, Figure 4, Table 5) and the slope
of tau against K at fixed D (Figure 5).

A fit is ordinary least squares of log tau on log x, optionally with one intercept per group
(the fixed-D control pools two D values, each with its own level, and fits one shared slope).
Its interval is a percentile bootstrap over runs: resample the runs with replacement (within
each group), refit, and take the central ``level`` share of the slopes; the t interval of the
OLS slope is given beside it. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np


def _design(logx: np.ndarray, groups: Sequence[Hashable]) -> np.ndarray:
    levels = list(dict.fromkeys(groups))
    cols = [logx] + [np.array([g == lv for g in groups], dtype=float) for lv in levels]
    return np.column_stack(cols)


def _ols(logx: np.ndarray, logy: np.ndarray, groups: Sequence[Hashable]) -> tuple[np.ndarray, float, float]:
    """(coefficients: slope then one intercept per group, R^2 of the fit, standard error of the
    slope)."""
    X = _design(logx, groups)
    coef, *_ = np.linalg.lstsq(X, logy, rcond=None)
    resid = logy - X @ coef
    ss_res = float(resid @ resid)
    # R^2 against each group's own mean (the share of within-group variance the slope explains)
    centred = logy.copy()
    for g in set(groups):
        m = np.array([h == g for h in groups])
        centred[m] -= logy[m].mean()
    ss_tot = float(centred @ centred)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    dof = len(logy) - X.shape[1]
    if dof > 0:
        cov = ss_res / dof * np.linalg.pinv(X.T @ X)
        se = float(math.sqrt(max(cov[0, 0], 0.0)))
    else:
        se = float("nan")
    return coef, r2, se


def _t_quantile(q: float, dof: int) -> float:
    """Student t quantile (q > 0.5): bisection on the CDF, the density integrated by Simpson's
    rule (no scipy)."""
    if dof <= 0:
        return float("nan")
    logc = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)

    def cdf(t: float, n: int = 4000) -> float:
        u = np.linspace(0.0, t, n + 1)
        f = np.exp(logc - (dof + 1) / 2 * np.log1p(u * u / dof))
        return 0.5 + float((t / n / 3) * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum()))

    lo, hi = 0.0, 1e3
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def power_law(
    x: Sequence[float],
    y: Sequence[float | None],
    *,
    groups: Sequence[Hashable] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Fit y = c x^slope (one c per group). Points whose y is missing or not positive are left
    out (a run that never left the plateau has no tau); ``n`` says how many were used.

    Returns slope, its bootstrap percentile interval (``ci``, over runs, resampled within
    groups), its t interval (``ci_t``), R^2 on log-log axes, the prefactors, n and the settings.
    """
    groups = list(groups) if groups is not None else [0] * len(x)
    keep = [i for i, v in enumerate(y) if v is not None and np.isfinite(v) and v > 0 and x[i] > 0]
    lx = np.log(np.asarray([x[i] for i in keep], dtype=float))
    ly = np.log(np.asarray([y[i] for i in keep], dtype=float))
    g = [groups[i] for i in keep]
    out: dict[str, Any] = {
        "n": len(keep),
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
        "slope": None,
        "ci": [None, None],
        "ci_t": [None, None],
        "r2": None,
        "prefactor": {},
    }
    levels = list(dict.fromkeys(g))
    if len(keep) < len(levels) + 1 or len(set(lx.tolist())) < 2:
        return out  # too few points to fit a slope
    coef, r2, se = _ols(lx, ly, g)
    out.update(slope=float(coef[0]), r2=r2, prefactor={str(lv): float(math.exp(c)) for lv, c in zip(levels, coef[1:])})
    dof = len(keep) - len(levels) - 1
    if dof > 0 and math.isfinite(se):
        t = _t_quantile(0.5 + level / 2, dof)
        out["ci_t"] = [float(coef[0] - t * se), float(coef[0] + t * se)]
    rng = np.random.default_rng(seed)
    idx_by = {lv: np.array([i for i, h in enumerate(g) if h == lv]) for lv in levels}
    slopes = []
    for _ in range(n_boot):
        pick = np.concatenate([rng.choice(ix, size=len(ix), replace=True) for ix in idx_by.values()])
        if len(set(lx[pick].tolist())) < 2:
            continue  # every resampled run at one x: no slope
        slopes.append(_ols(lx[pick], ly[pick], [g[i] for i in pick])[0][0])
    if slopes:
        lo, hi = np.quantile(slopes, [0.5 - level / 2, 0.5 + level / 2])
        out["ci"] = [float(lo), float(hi)]
        out["n_boot_used"] = len(slopes)
    return out


def smaller_spread_p(std: float | None, n: int, ref_std: float | None) -> float | None:
    """One-sided F test of "this spread is smaller than a reference measured on three seeds": the
    probability, were both samples normal with the same variance, of a ratio of sample variances
    F = (std / ref_std)^2 this small or smaller, with n - 1 and 2 degrees of freedom (the paper's
    Table 4 has three seeds per condition). With 2 denominator degrees of freedom the F CDF has a
    closed form: P(F <= x) = (d x / (d x + 2))^(d / 2), d = n - 1. None where either spread is
    missing, the reference is zero or n < 2. A small value says the runs vary less than the
    reference's; three seeds make it a coarse test."""
    if std is None or ref_std is None or n < 2 or not ref_std > 0 or not std >= 0:
        return None
    d, x = n - 1, (std / ref_std) ** 2
    return (d * x / (d * x + 2)) ** (d / 2)
