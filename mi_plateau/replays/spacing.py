"""Would a widening checkpoint spacing have kept every tau? A replay of ``train.next_interval`` on
a densely checkpointed run's records.

``train.ckpt_every_max`` lets a run that sits on a quiet plateau double its spacing up to that
maximum and to an eighth of the step reached, and return to ``ckpt_every`` when a loss or the
swap gap moves. The width's t_start is
the last evaluation above 0.95 log K, so a spacing that is still wide when the loss leaves the
plateau would move it. The replay walks the dense run's records as a run with the wider maximum
would have visited them (each next checkpoint from the records it kept), and reports every
crossing the run reports and the widths from the kept records beside those from all of them, with
the share of checkpoints and of evaluation time the wider spacing saves. It reads only the
records: no weights, no evaluation.

A replayed step that the dense run did not checkpoint (a wider interval landing between two dense
records) is read at the first dense record after it and counted in ``shifted``: the replay is then
an approximation of the wider run, and says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..checkpoints import Run, RunError
from ..config import QUIET_GAP, SPACING_HI, RunConfig
from ..summaries import tau, transition_width
from ..train.rules import next_interval

FAMILY_KEYS = {"paper": "L_seq", "first_token": "Lc"}


def kept_records(cfg: RunConfig, records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The records a run under ``cfg`` would have written, picked from the dense ``records``, and
    how many of its steps fell between dense records (read at the next one)."""
    if not records:
        return [], 0
    by_step = [r["step"] for r in records]
    kept, shifted, i = [records[0]], 0, 0
    while True:
        want = kept[-1]["step"] + next_interval(cfg, kept)
        j = next((k for k in range(i + 1, len(records)) if by_step[k] >= want), None)
        if j is None:
            return kept, shifted
        shifted += by_step[j] != want
        kept.append(records[j])
        i = j


def _crossings(cfg: RunConfig, records: list[dict[str, Any]]) -> tuple[dict, dict]:
    steps = [r["step"] for r in records]
    log_K = cfg.task.log_K
    taus, widths = {}, {}
    for fam, key in FAMILY_KEYS.items():
        curve = [r["metrics"].get(key) for r in records]
        taus[fam] = {f: tau(steps, curve, log_K, f) for f in cfg.seq_thresholds()}
        widths[fam] = transition_width(steps, curve, log_K, cfg.eval.width_hi, cfg.eval.width_lo)
    return taus, widths


def spacing_check(run: str | Run, ckpt_every_max: int) -> dict[str, Any]:
    """The run's records replayed under ``train.ckpt_every_max = ckpt_every_max``: per reported
    threshold (``RunConfig.seq_thresholds``) and family the tau from all records and from the
    kept ones (``crossings``), the widths (``widths``), ``all_equal``, the checkpoints kept and the
    share of the run's recorded evaluation seconds they hold (``eval_share_kept``); and the lead
    the rule relies on: the first step with swap gap >= ``QUIET_GAP`` (``swap_gap_rise``), the
    first with L_seq < 0.95 log K (``L_seq_below_hi``) and the lead over that step
    (``lead_share``, which an eighth of the step must stay below)."""
    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    if ckpt_every_max <= cfg.train.ckpt_every:
        raise RunError(f"ckpt_every_max={ckpt_every_max}: must be above the run's ckpt_every ({cfg.train.ckpt_every})")
    if cfg.train.ckpt_every_max > cfg.train.ckpt_every:
        raise RunError(
            f"{run.path}: its spacing already widened (ckpt_every_max={cfg.train.ckpt_every_max}); "
            "the replay needs a densely checkpointed run"
        )
    records = run.records()
    wide = replace(cfg, train=replace(cfg.train, ckpt_every_max=ckpt_every_max))
    kept, shifted = kept_records(wide, records)
    (tau_all, w_all), (tau_kept, w_kept) = _crossings(cfg, records), _crossings(cfg, kept)
    crossings = [
        {"definition": fam, "fraction": f, "tau_all": tau_all[fam][f], "tau_kept": tau_kept[fam][f]}
        for fam in FAMILY_KEYS
        for f in cfg.seq_thresholds()
    ]
    widths = {fam: {"all": w_all[fam], "kept": w_kept[fam]} for fam in FAMILY_KEYS}
    # the warning the rule relies on: the swap gap's rise ahead of the loss's fall
    gap_up = next((r["step"] for r in records if (r["metrics"].get("swap_gap") or 0.0) >= QUIET_GAP), None)
    left = tau_all["paper"].get(SPACING_HI)
    try:
        eval_s = [f.get("eval_s") for f in run.record_files()]
    except (ValueError, KeyError, OSError, RunError):
        eval_s = []
    share = None
    if eval_s and None not in eval_s and sum(eval_s) > 0:
        kept_steps = {r["step"] for r in kept}
        share = sum(e for r, e in zip(records, eval_s) if r["step"] in kept_steps) / sum(eval_s)
    return {
        "run": str(run.path),
        "K": cfg.task.K,
        "ckpt_every": cfg.train.ckpt_every,
        "ckpt_every_max": ckpt_every_max,
        "last_step": records[-1]["step"] if records else None,
        "checkpoints": len(records),
        "kept": len(kept),
        "swap_gap_rise": gap_up,
        "L_seq_below_hi": left,
        "lead_share": None if None in (gap_up, left) or not left else (left - gap_up) / left,
        "shifted": shifted,
        "eval_share_kept": share,
        "crossings": crossings,
        "widths": widths,
        "all_equal": all(c["tau_all"] == c["tau_kept"] for c in crossings)
        and all(w["all"] == w["kept"] for w in widths.values()),
        "kept_steps": [r["step"] for r in kept],
    }
