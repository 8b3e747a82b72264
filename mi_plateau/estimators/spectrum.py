"""Extreme eigenvalues of a symmetric operator H seen only through its products ``v -> H v``
(``matvec``): the two estimators of the Hessian pass (``estimators.hessian``, Table 10).

- ``power_extremes`` ("original_power"), the original code's: power iteration for lambda_max,
  then power iteration on ``H - sigma I`` with ``sigma = lambda_max + 1`` for lambda_min.
- ``lanczos_extremes`` ("lanczos"): implicitly restarted Lanczos (ARPACK through
  ``scipy.sparse.linalg.eigsh``) for the k largest and the k smallest eigenvalues, each pair
  checked by its relative residual ``||H v - lambda v|| / |lambda|`` from a fresh product.

Both return an ``Extremes``, whose ``anisotropy`` is ``|lambda_max| / max(|lambda_min|, 1e-10)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

FLOOR = 1e-10  # |lambda_min| is floored here in the anisotropy

# jaxtyping dimension names, not Python names: F821 does not apply
MatVec = Callable[[Float[Tensor, "n_params"]], Float[Tensor, "n_params"]]


def start_vector(n: int, seed: int, dtype: torch.dtype = torch.float64) -> Float[Tensor, n]:
    """A unit vector from ``torch.randn`` on a generator seeded ``seed``, drawn in float32 (so
    both precisions start from the same direction) and cast to ``dtype``."""
    v = torch.randn(n, generator=torch.Generator().manual_seed(int(seed))).to(dtype)
    return v / v.norm()


@dataclass(frozen=True)
class Extremes:
    """Extreme eigenvalues of a symmetric operator and how they were found.

    ``top`` largest first, ``bottom`` smallest first; ``residual_*`` the relative residual
    ``||H v - lambda v|| / |lambda|`` of each pair; ``n_hvp`` Hessian-vector products in all
    (residual checks included); ``iterations`` the power iterations of each run (power only)."""

    estimator: str
    top: tuple[float, ...]
    bottom: tuple[float, ...]
    residual_top: tuple[float, ...]
    residual_bottom: tuple[float, ...]
    tol: float
    n_hvp: int
    seconds: float
    iterations: tuple[int, ...] = ()

    @property
    def lambda_max(self) -> float:
        return self.top[0]

    @property
    def lambda_min(self) -> float:
        return self.bottom[0]

    @property
    def anisotropy(self) -> float:
        """``|lambda_max| / max(|lambda_min|, 1e-10)`` (dimensionless)."""
        return abs(self.lambda_max) / max(abs(self.lambda_min), FLOOR)

    @property
    def converged(self) -> bool:
        """Every pair's relative residual is at most ``tol`` (False if a value is missing)."""
        res = (*self.residual_top, *self.residual_bottom)
        return bool(res) and all(r <= self.tol for r in res)


@dataclass(frozen=True)
class PowerResult:
    eigenvalue: float  # Rayleigh quotient v . A v of the last iterate multiplied
    vector: Tensor  # that iterate (unit norm)
    residual: float  # ||A v - eigenvalue v||, absolute
    iterations: int


def power_iteration(
    matvec: MatVec,
    v0: Float[Tensor, n],
    max_iter: int = 50,
    min_iter: int = 10,
    cos_stop: float = 0.9999,
    abs_cos: bool = True,
) -> PowerResult:
    """The original's power iteration on a symmetric ``A`` (``matvec``: v -> A v).

    Iteration i (1-based) multiplies the unit iterate v_i: ``w = A v_i``, ``lambda = v_i . w``,
    ``v_{i+1} = w / ||w||``; it stops after iteration i once ``i > min_iter`` and
    ``cos(v_i, v_{i+1}) > cos_stop`` (absolute value with ``abs_cos``, so a negative dominant
    eigenvalue, whose iterates flip sign, can stop too), else after ``max_iter``. One product
    per iteration: at least ``min_iter + 1``, at most ``max_iter``. The stop says that the
    direction changes little, not that it has converged: when the two largest |eigenvalues|
    are close it fires long before; ``residual`` tells."""
    v = v0 / v0.norm()
    for it in range(1, max_iter + 1):
        w = matvec(v)
        lam = torch.dot(v, w)
        res = (w - lam * v).norm()
        nw = w.norm()
        if nw == 0:
            break
        nxt = w / nw
        cos = torch.dot(v, nxt)
        if it > min_iter and (cos.abs() if abs_cos else cos) > cos_stop or it == max_iter:
            break
        v = nxt
    return PowerResult(float(lam), v, float(res), it)


def power_extremes(
    matvec: MatVec,
    n: int,
    *,
    dtype: torch.dtype = torch.float64,
    tol: float = 1e-4,
    max_iter: int = 50,
    min_iter: int = 10,
    cos_stop: float = 0.9999,
    seeds: tuple[int, int] = (0, 1),
    abs_cos: bool = True,
) -> Extremes:
    """The original estimator ("original_power"): ``lambda_max`` by ``power_iteration`` on H
    (start ``start_vector(n, seeds[0])``), then ``lambda_min = mu + sigma`` with ``mu`` from
    ``power_iteration`` on ``H - sigma I``, ``sigma = lambda_max + 1`` (start ``seeds[1]``). Power
    iteration finds the eigenvalue of largest |.|: for H that is lambda_max only if lambda_max >=
    |lambda_min|, and the shifted run reaches lambda_min only when it is dominant there.
    Residuals come from the last product of each run (H v - lambda v = (H - sigma) v - mu v)."""
    t0 = time.perf_counter()
    hi = power_iteration(matvec, start_vector(n, seeds[0], dtype), max_iter, min_iter, cos_stop, abs_cos)
    sigma = hi.eigenvalue + 1.0
    lo = power_iteration(
        lambda v: matvec(v) - sigma * v, start_vector(n, seeds[1], dtype), max_iter, min_iter, cos_stop, abs_cos
    )
    lam_min = lo.eigenvalue + sigma
    return Extremes(
        "original_power",
        (hi.eigenvalue,),
        (lam_min,),
        (_relative(hi.residual, hi.eigenvalue),),
        (_relative(lo.residual, lam_min),),
        tol,
        hi.iterations + lo.iterations,
        time.perf_counter() - t0,
        (hi.iterations, lo.iterations),
    )


def _relative(res: float, lam: float) -> float:
    return res / abs(lam) if lam != 0 else math.inf


def _eigsh_side(
    matvec: MatVec,
    n: int,
    k: int,
    which: str,
    tol: float,
    seed: int,
    dtype: torch.dtype,
    ncv: int | None,
    maxiter: int | None,
) -> tuple[list[tuple[float, Tensor]], int]:
    """One ``eigsh`` call; returns the (eigenvalue, unit vector) pairs it converged (extreme
    first) and the products it took. ARPACK's own stop: Ritz estimate <= tol * |lambda|."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    count = [0]

    def mv(x: np.ndarray) -> np.ndarray:
        count[0] += 1
        return matvec(torch.from_numpy(np.ascontiguousarray(x).reshape(-1)).to(dtype)).double().numpy()

    op = LinearOperator((n, n), matvec=mv, dtype=np.float64)
    v0 = start_vector(n, seed, torch.float64).numpy()
    try:
        vals, vecs = eigsh(op, k=k, which=which, tol=tol, v0=v0, ncv=ncv, maxiter=maxiter)
    except ArpackNoConvergence as e:  # keep the pairs that did converge
        vals, vecs = e.eigenvalues, e.eigenvectors
    order = np.argsort(-vals if which == "LA" else vals)
    pairs = [(float(vals[i]), torch.from_numpy(vecs[:, i].copy())) for i in order]
    return pairs, count[0]


def lanczos_extremes(
    matvec: MatVec,
    n: int,
    k: int = 3,
    *,
    tol: float = 1e-4,
    dtype: torch.dtype = torch.float64,
    seeds: tuple[int, int] = (0, 1),
    ncv: int | None = None,
    maxiter: int | None = 200,
) -> Extremes:
    """The converged estimator ("lanczos"): ``eigsh`` on a ``LinearOperator`` of ``matvec``,
    ``which="LA"`` for the k largest and ``"SA"`` for the k smallest eigenvalues (start vectors
    ``start_vector(n, seeds[i])``; ``ncv`` Lanczos vectors, default max(2k + 1, 20); at most
    ``maxiter`` restarts). Each returned pair (lambda, v) is checked with one fresh product:
    ``||H v - lambda v|| / |lambda|``, converged when <= ``tol``. A pair ARPACK did not converge
    is NaN with an infinite residual."""
    t0 = time.perf_counter()
    sides, n_hvp = [], 0
    for which, seed in (("LA", seeds[0]), ("SA", seeds[1])):
        pairs, used = _eigsh_side(matvec, n, k, which, tol, seed, dtype, ncv, maxiter)
        vals, res = [], []
        for lam, v in pairs:
            v = v.to(dtype) / v.norm()
            res.append(_relative(float((matvec(v) - lam * v).norm()), lam))
            vals.append(lam)
        pad = k - len(vals)
        sides.append((tuple(vals) + (math.nan,) * pad, tuple(res) + (math.inf,) * pad))
        n_hvp += used + len(pairs)
    (top, r_top), (bottom, r_bottom) = sides
    return Extremes("lanczos", top, bottom, r_top, r_bottom, tol, n_hvp, time.perf_counter() - t0)
