"""Which groups the paper family scores at a checkpoint: exact where it matters, cheap elsewhere.

The first-token losses (Lc, L1, the candidate mass, the swap gap) read only the position that
predicts A1 and are computed on every group at every checkpoint, unless
``eval.guard_first_token`` puts them on the stages too, guarded by their own thresholds. The paper family's L_seq costs
K (K - 1) continuation strings per group, so a guarded run (``eval.seq_subset = n``) scores it
in stages over a seeded order of the groups: the first n, then 2.5 times as many, and so on up
to all of them, stopping at the first stage whose estimate of the full-set mean lies more than
``eval.seq_guard`` standard errors from every L_seq threshold that can still change what the run
reports or does. So every tau, transition width, stop and spacing decision read off the records
is the full-set one (the error bound is in ``EvalGuard``'s docstring), and a checkpoint far from
every threshold costs n groups.

A threshold stops mattering once the run's record has settled it (``active_thresholds``): tau at
a fraction is the first evaluation below it, so after that first crossing no later checkpoint can
move it; the width's upper end (the last evaluation above 0.95 log K before the width's lower end)
is settled once the lower end is; the dense spacing's ends (0.95 log K and ``dense_lo``) are read
at every checkpoint and never retire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import QUIET_GAP, RunConfig

STAGE_GROWTH = 2.5  # each escalation scores this many times the groups of the stage before


@dataclass(frozen=True)
class EvalGuard:
    """The staged scoring of L_seq at one checkpoint.

    ``order`` holds every evaluation group in the seeded order the stages take them; stage sizes
    are ``first``, ``STAGE_GROWTH`` times that, ... and finally all of them (``stages``). After
    each stage the estimate of the full-set mean is the mean of the scored groups' means, with
    standard error se = sd(group means) / sqrt(n) * sqrt(1 - n / N) (n of the N groups, drawn
    without replacement). Scoring goes on while some threshold t (nats) has |estimate - t| <= z se,
    or while ``force`` holds (Table 7's plateau window). Where it stops short of all groups the
    recorded L_seq is on the same side of every active threshold as the full-set value unless the
    estimate is off by more than z se: under the normal approximation of a subset mean, a chance of
    at most 2 Phi(-z) per look (z = 5: 5.7e-7), at most ``len(stages)`` looks per checkpoint. The
    records say how many groups were scored (``groups_scored``) and the standard error
    (``L_seq_se``, 0 where every group was scored). With ``row_mask`` (``eval.seq_rows``) a stage
    short of every group reads only those rows of its groups: each group's mean is then itself a
    sample, the standard error is the spread of those means over sqrt(n) without the
    finite-population factor (at least the estimator's variance in expectation), the same bound
    holds under the same approximation with a wider se, and the last stage scores every row.
    What is scored on the stages and feeds no
    threshold (the L_seq curve drawn, both families' accuracy shares, the full target loss) is
    an estimate there; the analysis passes score every group.
    """

    order: np.ndarray  # every evaluation group, in the order the stages score them
    first: int  # groups in the first stage
    thresholds: tuple[float, ...]  # L_seq thresholds still active, in nats
    z: float
    force: bool = False
    # eval.guard_first_token: the first-token losses on the stages too, guarded by these (nats)
    first_token: bool = False
    lc_thresholds: tuple[float, ...] = ()
    gap_thresholds: tuple[float, ...] = ()
    # eval.seq_rows: over the evaluation set's rows, those L_seq scores on the stages short of all
    # groups (the same number in every group); None: every row
    row_mask: np.ndarray | None = None

    @property
    def rows_per_group(self) -> int | None:
        """Rows of each group L_seq scores on a stage short of every group (None: all of them)."""
        if self.row_mask is None:
            return None
        return int(self.row_mask.sum()) // len(self.order)

    @property
    def groups(self) -> np.ndarray:
        """The first stage's groups (the same at every checkpoint of a run), sorted."""
        return np.sort(self.order[: self.first])

    def stages(self) -> list[int]:
        """How many groups each stage has scored when it ends: first, growing by STAGE_GROWTH,
        then all (only all when ``force``)."""
        N = len(self.order)
        if self.force or self.first >= N:
            return [N]
        sizes = [self.first]
        while sizes[-1] < N:
            sizes.append(min(N, max(sizes[-1] + 1, round(sizes[-1] * STAGE_GROWTH))))
        return sizes

    @staticmethod
    def estimate(group_means: np.ndarray, n_total: int, rows_sampled: bool = False) -> tuple[float, float]:
        """(mean, standard error) of the full-set mean from a subset's group means. With
        ``rows_sampled`` each mean is over a seeded sample of the group's rows (two-stage
        sampling): the spread of those means then carries the within-group sampling error too,
        and the finite-population factor is left out, so the squared standard error is at least
        the estimator's variance in expectation (Cochran's two-stage bound); a full stage is never
        row-sampled."""
        n = len(group_means)
        if n < 2 or (n >= n_total and not rows_sampled):
            return float(group_means.mean()), 0.0 if n >= n_total else float("inf")
        sd = float(group_means.std(ddof=1))
        fpc = 1.0 if rows_sampled else np.sqrt(1 - n / n_total)
        return float(group_means.mean()), sd / np.sqrt(n) * fpc

    def undecided(self, est: float, se: float, thresholds: tuple[float, ...] | None = None) -> bool:
        """True where the estimate cannot rule out the full-set value lying across an active
        threshold (``thresholds``, nats; default: L_seq's)."""
        if self.force or not (np.isfinite(se) and np.isfinite(est)):
            return True
        return any(abs(est - t) <= self.z * se for t in (self.thresholds if thresholds is None else thresholds))

    def undecided_first_token(self, lc: tuple[float, float], gap: tuple[float, float] | None) -> bool:
        """With ``first_token``: Lc's (estimate, se) near one of its thresholds, or the swap gap's
        near one of its own (``gap`` None: the task has no selector)."""
        if not self.first_token:
            return False
        return self.undecided(*lc, self.lc_thresholds) or (
            gap is not None and self.undecided(*gap, self.gap_thresholds)
        )


def active_thresholds(cfg: RunConfig, history: Sequence[float | None]) -> tuple[float, ...]:
    """The L_seq thresholds (fractions of log K) whose side can still change a reported crossing
    or a decision, given the L_seq recorded at the run's earlier checkpoints (``history``).

    Every threshold of ``RunConfig.seq_thresholds`` is a first crossing (tau at Table 5's alphas
    and ``eval.alpha``, the width's lower end, the floor stop) and retires once a recorded value
    lies below it, except: the width's upper end, which retires with the lower end (t_start is the
    last evaluation above it before t_end), and the dense spacing's ends, read at every checkpoint."""
    lowest = min((v for v in history if v is not None and np.isfinite(v)), default=np.inf) / cfg.task.log_K
    every_checkpoint = set(cfg.spacing_thresholds())
    keep = []
    for f in cfg.seq_thresholds():
        if f in every_checkpoint:
            keep.append(f)
        elif f == cfg.eval.width_hi:
            if not lowest < cfg.eval.width_lo:
                keep.append(f)
        elif not lowest < f:
            keep.append(f)
    return tuple(keep)


# the swap gap (nats) above which the dissipation window starts (summaries: its first crossing)
GAP_WINDOW = 0.1


def gap_thresholds(cfg: RunConfig, gap_history: Sequence[float | None]) -> tuple[float, ...]:
    """The swap-gap levels (nats) the run still reads: ``QUIET_GAP`` at every checkpoint where the
    spacing can widen (``train.ckpt_every_max`` above ``ckpt_every``), and ``GAP_WINDOW`` until a
    recorded gap is above it (a first crossing)."""
    highest = max((v for v in gap_history if v is not None and np.isfinite(v)), default=-np.inf)
    widens = cfg.train.ckpt_every_max > cfg.train.ckpt_every
    return (QUIET_GAP,) * widens + (GAP_WINDOW,) * (not highest > GAP_WINDOW)


def lc_thresholds(cfg: RunConfig, lc_history: Sequence[float | None]) -> tuple[float, ...]:
    """Lc's active thresholds, fractions of log K: those of ``active_thresholds`` on Lc's own
    record, and ``train.converge_Lc`` (the converge stop) until a recorded Lc is below it."""
    out = active_thresholds(cfg, lc_history)
    lowest = min((v for v in lc_history if v is not None and np.isfinite(v)), default=np.inf)
    if not lowest < cfg.train.converge_Lc:
        out = tuple(sorted({*out, cfg.train.converge_Lc / cfg.task.log_K}))
    return out


def eval_guard(
    cfg: RunConfig,
    ev,
    step: int,
    history: Sequence[float | None] = (),
    lc_history: Sequence[float | None] = (),
    gap_history: Sequence[float | None] = (),
) -> EvalGuard | None:
    """The run's ``EvalGuard`` at a checkpoint (None where every group is scored anyway). The
    order is a permutation of the evaluation groups drawn by a generator seeded by
    ``eval.eval_seed`` (the same at every checkpoint); the first stage is ``eval.seq_subset``
    groups; Table 7's plateau window (``eval.seq_plateau_start..end``) is scored in full; the
    thresholds are ``active_thresholds`` given the L_seq recorded before (``history``), and with
    ``eval.guard_first_token`` Lc's (``lc_thresholds`` given the Lc recorded before,
    ``lc_history``) and the swap gap's (``gap_thresholds`` given ``gap_history``)."""
    n = cfg.eval.seq_subset
    if not n or n >= ev.n_groups:
        return None
    order = np.random.default_rng([cfg.eval.eval_seed, 0x5EB5]).permutation(ev.groups)
    log_K = cfg.task.log_K
    K, m = cfg.task.K, cfg.eval.seq_rows
    row_mask = None
    if 0 < m < K:  # m seeded rows of each group, drawn once per run (rows are group-major)
        pick = np.random.default_rng([cfg.eval.eval_seed, 0x5EB5, 1]).random((ev.n_groups, K)).argsort(1)[:, :m]
        row_mask = np.zeros((ev.n_groups, K), dtype=bool)
        row_mask[np.arange(ev.n_groups)[:, None], pick] = True
        row_mask = row_mask.ravel()
    first = cfg.eval.guard_first_token
    return EvalGuard(
        order,
        n,
        tuple(f * log_K for f in active_thresholds(cfg, history)),
        cfg.eval.seq_guard,
        force=cfg.eval.seq_plateau_start <= step <= cfg.eval.seq_plateau_end,
        first_token=first,
        lc_thresholds=tuple(f * log_K for f in lc_thresholds(cfg, lc_history)) if first else (),
        gap_thresholds=gap_thresholds(cfg, gap_history) if first else (),
        row_mask=row_mask,
    )
