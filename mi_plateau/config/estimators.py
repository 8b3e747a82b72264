"""The estimators' settings, each field declared once with ``setting`` (help, bounds and, where the
command line sets it, the flag): ``SGLDSettings`` (the LLC's sampler, ``estimators.llc``; its
flags of ``mi-plateau llc`` built by ``commands.options.add_settings``) and ``HessianSettings``
(Table 10's pass, ``reproduce.hessian``). Standard library only: the command line imports it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .schema import RunConfig
from .settings import NON_NEGATIVE, POSITIVE, SEED, Bounds, check_fields, setting

POSITIVE_NUMBER = Bounds(gt=0)


@dataclass(frozen=True)
class SGLDSettings:
    """The sampler's settings (devinterp's names in brackets; the module docstring of
    ``estimators.llc`` has the estimate they enter).

    The defaults are what ``calibrate`` picks on the ``tiny`` preset (docs/mechanisms.md, "The
    learning coefficient"): eps * gamma = 0.03 (``PULL``), so the loosest directions, held by gamma
    alone, settle within the burn-in, and the largest eps whose drift stays below the spread over
    chains. The estimate moves with eps by orders of magnitude (there is no range of eps over
    which it holds still), so estimates made with different settings are not comparable."""

    lr: float = setting(3e-6, help="SGLD step size eps [lr]", bounds=POSITIVE_NUMBER, flag="--lr")
    localization: float = setting(
        10000.0,
        help="gamma, the pull back to the checkpoint, per unit parameter squared [localization]",
        bounds=POSITIVE_NUMBER,
        flag="--localization",
    )
    nbeta: float = setting(
        1000.0,
        help="n beta, the inverse temperature times the sample size, per nat [n_beta]; 1000 is about n / log n at "
        "the paper's D = 10,000 examples",
        bounds=POSITIVE_NUMBER,
    )
    n_chains: int = setting(4, help="independent chains from the checkpoint", bounds=POSITIVE)
    n_draws: int = setting(200, help="steps per chain after the burn-in, one minibatch each", bounds=POSITIVE)
    n_burnin: int = setting(100, help="burn-in steps per chain (not averaged)", bounds=NON_NEGATIVE)
    batch_size: int | None = setting(
        None, help="examples per minibatch (None: the run's training batch size)", bounds=POSITIVE
    )
    n_batches: int = setting(
        16, help="the fixed data set: this many batches, cycled in one seeded order", bounds=POSITIVE
    )

    def __post_init__(self):
        check_fields(self, "llc")

    def resolved(self, cfg: RunConfig) -> SGLDSettings:
        return replace(self, batch_size=self.batch_size or cfg.train.batch_size)


@dataclass(frozen=True)
class HessianSettings:
    """Table 10's Hessian pass (``estimators.hessian.hessian_pass``'s keywords); float32 as the
    original ran it: a float32 product differs from the float64 one by < 1e-6 of its norm
    (docs/mechanisms.md), far below ``tol``."""

    n_examples: int = setting(
        512, help="training examples the loss is taken over (the first of a seeded permutation)", bounds=POSITIVE
    )
    seed: int = setting(0, help="seed of that permutation", bounds=SEED)
    k: int = setting(3, help="eigenpairs Lanczos finds at each end of the spectrum", bounds=POSITIVE)
    tol: float = setting(
        1e-4, help="an eigenpair has converged when its relative residual is at most this", bounds=POSITIVE_NUMBER
    )
    dtype: str = setting("float32", help="the Hessian-vector products' precision", choices=("float32", "float64"))
    maxiter: int = setting(200, help="Lanczos restarts at most", bounds=POSITIVE)

    def __post_init__(self):
        check_fields(self, "hessian")
