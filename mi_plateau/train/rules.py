"""When a run writes its next checkpoint and when it stops: the checkpoint spacing (denser
through the transition, doubling on a quiet plateau) and the stopping rule ``train.stop``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import QUIET_GAP, QUIET_SPACING_FRAC, RunConfig
from ..settle import Z
from ..summaries import num as _num
from ..summaries import tau as tau_of


def next_interval(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> int:
    """Checkpoint spacing after the last of ``records``: denser while the transition is under
    way in either family (between ``RunConfig.spacing_thresholds``: max(converge_Lc, 0.1 log K) < loss
    < 0.95 log K).

    The slow convergence tail below 0.1 log K goes back to the plateau spacing, on its grid (the
    first checkpoint after the dense stretch is the next multiple of ``ckpt_every``): it is long
    and nothing in it needs 25-step resolution. With ``train.ckpt_every_max`` above ``ckpt_every``,
    a run that sits on the plateau (both losses above 0.95 log K and the swap gap below
    ``QUIET_GAP``, the z-dependence that leads the loss's fall) doubles its spacing at each
    checkpoint up to that maximum and to ``QUIET_SPACING_FRAC`` of the step reached, and returns
    to ``ckpt_every`` as soon as either moves. The second cap keeps the first dense checkpoint
    ahead of the escape: on 23 paper-scale runs the swap gap rose 0.24-0.5 of the step count
    before L_seq left 0.95 log K (``mi-plateau summary RUN --spacing-check N`` replays the rule
    on a dense run's records).
    """
    log_K = cfg.task.log_K
    last = records[-1]["metrics"]
    lo, hi = (f * log_K for f in cfg.spacing_thresholds())
    if any(lo < _num(last.get(k)) < hi for k in ("Lc", "L_seq")):
        return cfg.train.ckpt_every_transition
    off = records[-1]["step"] % cfg.train.ckpt_every
    if off:  # back onto the ckpt_every grid after the dense stretch (Figure 3(b)'s Delta grid reads it)
        return cfg.train.ckpt_every - off
    top = cfg.train.ckpt_every_max
    quiet = all(not _num(last.get(k)) < hi for k in ("Lc", "L_seq")) and _num(last.get("swap_gap")) < QUIET_GAP
    if top > cfg.train.ckpt_every and quiet and len(records) > 1 and records[-1]["step"] >= cfg.eval.plateau_start:
        every, step = cfg.train.ckpt_every, records[-1]["step"]
        doubled = 2 * (step - records[-2]["step"])
        share = int(step * QUIET_SPACING_FRAC) // every * every
        return max(every, min(top, doubled, share))
    return cfg.train.ckpt_every


def run_over(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> bool:
    """The run ends at its last checkpoint: its stopping rule says so (``should_stop``) or the
    checkpoint is at ``max_steps``. What a live member and a resumed finished run both ask."""
    return "diverged" in records[-1] or should_stop(cfg, records) or records[-1]["step"] >= cfg.train.max_steps


def should_stop(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> bool:
    """The stopping rule ``train.stop``.

    "converge": Lc has fallen below ``converge_Lc``, ``margin_steps`` have passed since, and the
    step is at least ``post_tau_frac`` times the later of the two families' tau.
    "tau": the tau of the families named by ``tau_on`` are known and the step is at least
    ``tau_margin`` times the later.
    "floor": the last checkpoint's loss of the families named by ``tau_on`` is below
    ``stop_floor * log K`` (the original's phase-boundary early stop, 0.01 log K on L_seq); a
    live estimate of L_seq counts only once it is below by ``settle.Z`` standard errors.
    "budget": never early; the run ends at ``max_steps``.
    """
    if cfg.train.stop == "budget":
        return False
    steps = [r["step"] for r in records]

    def tau_for(key: str) -> float | None:
        return tau_of(steps, [r["metrics"].get(key) for r in records], cfg.task.log_K, cfg.eval.alpha)

    # the paper family is undefined for B-target directions: "both" waits for Lc alone there
    keys = {"paper": ("L_seq",), "first_token": ("Lc",)}.get(cfg.train.tau_on, ("Lc", "L_seq"))
    if not cfg.task.targets_A:
        keys = ("Lc",)
    if cfg.train.stop == "floor":  # a live estimate must lie below the floor by Z standard errors
        floor, last = cfg.train.stop_floor * cfg.task.log_K, records[-1]["metrics"]
        return all(
            _num(last.get(k)) + Z * (_num(last.get(f"{k}_se")) if last.get(f"{k}_se") else 0.0) < floor for k in keys
        )
    if cfg.train.stop == "tau":
        taus = [tau_for(k) for k in keys]
        return None not in taus and steps[-1] >= cfg.train.tau_margin * max(taus)
    known = [t for t in (tau_for("Lc"), tau_for("L_seq")) if t is not None]
    Lc = [_num(r["metrics"].get("Lc")) for r in records]
    conv = next((s for s, v in zip(steps, Lc) if v < cfg.train.converge_Lc), None)
    if conv is None:
        return False
    t = max(known) if known else conv
    return steps[-1] >= conv + cfg.train.margin_steps and steps[-1] >= cfg.train.post_tau_frac * t
