"""Run-level summaries from checkpoint records: tau, plateau height, convergence (docs/analyses.md).

Pure Python plus numpy: ``mi-plateau summary`` never imports torch or transformer_lens.
Records store NaN as JSON null; ``num`` maps both to NaN so comparisons are simply false.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import crossings
from .config import RunConfig


def num(v: Any) -> float:
    """A metric value as float; None (JSON null) and non-numbers become NaN."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def nearest(steps: Sequence[int], target: float) -> int:
    """The step closest to ``target`` (the earlier one on a tie): the one rule by which every
    command and table snaps a requested step or a fraction of tau to a checkpoint."""
    return min(steps, key=lambda s: (abs(s - target), s))


def tau(steps: Sequence[int], Lc: Sequence[float], log_K: float, alpha: float = 0.5) -> int | None:
    """Waiting time: the first evaluated step at which the loss (Lc, or L_seq for the paper
    family) is below alpha * log K (None if never)."""
    for s, v in zip(steps, Lc):
        if num(v) < alpha * log_K:
            return int(s)
    return None


ACC_THRESHOLD = 0.8  # Table 6: a group counts at ">= 80%" once this share of its K examples is right
ACC_TOL = 1e-9  # a group's mean k / K may land a rounding step below the fraction it stands for


def estimate(group_means: np.ndarray, n_total: int, rows_sampled: bool = False) -> tuple[float, float]:
    """(mean, standard error) of the full set's mean from n of its ``n_total`` group means, drawn
    without replacement: se = sd(group means) / sqrt(n) * sqrt(1 - n / n_total). With
    ``rows_sampled`` each group's mean is itself over a sample of its rows (two-stage sampling):
    the spread of those means then carries the within-group error too, and the finite-population
    factor is left out, so se^2 is at least the estimator's variance in expectation (Cochran)."""
    n = len(group_means)
    mean = float(np.mean(group_means))
    if n >= n_total and not rows_sampled:
        return mean, 0.0
    if n < 2:
        return mean, float("inf")
    fpc = 1.0 if rows_sampled else math.sqrt(1 - n / n_total)
    return mean, float(np.std(group_means, ddof=1)) / math.sqrt(n) * fpc


def group_order(groups, eval_seed: int) -> list[int]:
    """The evaluation groups in the run's seeded order (a generator seeded by ``eval_seed``, the
    same at every checkpoint): the live subset is its head, and settlement scores its stages
    along it."""
    return [int(g) for g in np.random.default_rng([eval_seed, 0x5EB5]).permutation(np.asarray(groups))]


def group_shares(acc) -> tuple[float, float, float]:
    """Per-group accuracies (an array) -> (mean, share of groups at >= ``ACC_THRESHOLD``, share at 1)."""
    a = np.asarray(acc, dtype=float)
    return float(a.mean()), float((a >= ACC_THRESHOLD - ACC_TOL).mean()), float((a >= 1 - ACC_TOL).mean())


FORWARD_L1 = 0.1  # nats: Table 2's forward clock threshold (absolute, not a fraction of log K)


def forward_clock(steps: Sequence[int], L1: Sequence[float], threshold: float = FORWARD_L1) -> int | None:
    """Table 2's clock for the forward task: the first evaluated step with the first-token loss
    over the whole vocabulary (L1) below ``threshold`` nats (None if never). Absolute, because the
    forward task has no K-fold ambiguity to scale by."""
    for s, v in zip(steps, L1):
        if num(v) < threshold:
            return int(s)
    return None


def transition_width(
    steps: Sequence[int], loss: Sequence[float], log_K: float, hi: float = 0.95, lo: float = 0.05
) -> tuple[int | None, int | None, int | None]:
    """The original's transition clock (Tables 4 and 8, the learning-rate sweep): ``(t_start,
    t_end, tau_width)`` in steps.

    t_end is the first evaluated step with loss < lo * log K; t_start the last evaluated step
    before t_end with loss > hi * log K, or 0 if there is none (the original's rule: a run whose
    loss never sat above hi log K before t_end is counted from step 0); tau_width = t_end -
    t_start. All three are None while the loss has not fallen below lo * log K.
    """
    vals = [num(v) for v in loss]
    end = next((i for i, v in enumerate(vals) if v < lo * log_K), None)
    if end is None:
        return None, None, None
    start = next((i for i in range(end - 1, -1, -1) if vals[i] > hi * log_K), None)
    t_start, t_end = (int(steps[start]) if start is not None else 0), int(steps[end])
    return t_start, t_end, t_end - t_start


DISSIPATION_KEYS = tuple(f"dissipation_{g}{k}" for g in ("", "train_") for k in ("Q", "window_start", "window_end"))
GAPS = {  # Table 11's z-gap per checkpoint record: ours (the evaluation set's) and the original's
    "swap": lambda r: r["metrics"].get("swap_gap"),
    "train": lambda r: (
        r["train_first_loss_z_deranged"] - r["train_first_loss"]
        if r.get("train_first_loss") is not None and r.get("train_first_loss_z_deranged") is not None
        else None
    ),
}


def dissipation(
    records: Sequence[dict[str, Any]], log_K: float, lo: float = 0.1, hi_frac: float = 0.9, gap: str = "swap"
) -> dict[str, Any]:
    """Table 11's gradient dissipation over the transition window (the original's definition):
    Q = sum over the checkpoints i in the window of lr_i x (mean squared gradient norm, before
    clipping, over the steps since checkpoint i - 1) x (step_i - step_{i-1}), in nats-free units
    of lr x |grad|^2 x steps. The window runs from the first checkpoint whose z-gap exceeds
    ``lo`` nats to the first whose z-gap exceeds ``hi_frac`` log K, both included (the blocks
    at both ends summed). The z-gap (``GAPS``): ``swap``, ours, the record's ``swap_gap``
    (first-token candidate loss on the evaluation set with each selector replaced, minus the
    clean one); ``train``, the original's, the first-token loss of the last training batch with
    its selectors deranged across the batch minus the mean first-token training loss since the
    previous checkpoint. None where the window never closes, a record in it lacks the squared
    norm, or (``train``) a record lacks the training batches' losses (``missing`` says so)."""
    read = GAPS[gap]
    gaps = [read(r) for r in records[1:]]
    out: dict[str, Any] = {"Q": None, "window_start": None, "window_end": None}
    if gap == "train" and (not gaps or any(g is None for g in gaps)):
        out["missing"] = (
            "a checkpoint record without the training batches' first-token losses (a run trained before the "
            "trainer kept them, or a loss that was not finite)"
        )
        return out
    gap_at = [num(g) for g in [read(records[0]) if records else None, *gaps]]
    start = next((i for i, g in enumerate(gap_at) if g > lo), None)
    end = next((i for i, g in enumerate(gap_at) if start is not None and i >= start and g > hi_frac * log_K), None)
    if start is None or end is None:
        return out
    out.update(window_start=int(records[start]["step"]), window_end=int(records[end]["step"]))
    q = 0.0
    for i in range(max(start, 1), end + 1):
        sq = num(records[i].get("grad_norm_sq_mean"))
        if not math.isfinite(sq):
            return out
        q += num(records[i].get("lr")) * sq * (records[i]["step"] - records[i - 1]["step"])
    out["Q"] = q
    return out


def plateau_height(steps: Sequence[int], Lc: Sequence[float], log_K: float, start: int) -> float:
    """Median Lc over the plateau window.

    The window runs from ``start`` (after the first few hundred steps) up to, not including,
    the first step at which Lc < 0.9 log K (the onset of the transition). If the transition
    begins before ``start`` the window is every evaluated step before the onset but step 0.
    """
    steps, Lc = np.asarray(steps), np.asarray([num(v) for v in Lc], dtype=float)
    below = np.nonzero((Lc < 0.9 * log_K) & (steps > 0))[0]
    onset = steps[below[0]] if below.size else steps[-1] + 1
    window = (steps >= start) & (steps < onset)
    if not window.any():
        window = (steps > 0) & (steps < onset)
    if not window.any():
        return float("nan")
    return float(np.median(Lc[window]))


def mean_over_window(steps: Sequence[int], values: Sequence[float], start: int, end: int) -> float:
    """Mean of the values evaluated at steps in [start, end] (the paper's Table 7 plateau height:
    mean L_seq over steps 100-500); NaN if no finite value lies there."""
    v = [num(x) for s, x in zip(steps, values) if start <= s <= end]
    v = [x for x in v if math.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def every_group_live(cfg: RunConfig) -> bool:
    """Did the run score every group live? (Records written before ``L_seq_se`` existed carry
    none: exact unless the run's live subset was smaller than the evaluation set.)"""
    return not cfg.eval.live_groups or cfg.eval.live_groups >= min(cfg.eval.n_groups, cfg.task.n_b)


def seq_band(metrics: dict[str, Any], exact_live: bool) -> tuple[float, float]:
    """(value, standard error) of a record's L_seq. A record without ``L_seq_se`` is exact where
    the run scored every group live (``exact_live``), else an estimate of unknown error (inf), as
    is a record whose L_seq the live evaluation left out (``settle.retire_live``)."""
    v = num(metrics.get("L_seq"))
    se = metrics.get("L_seq_se")
    if se is None:
        return v, 0.0 if exact_live and "L_seq" in metrics and "groups_scored" not in metrics else float("inf")
    return v, num(se)


def seq_bands(records: Sequence[dict[str, Any]], exact_live: bool) -> tuple[list, list]:
    """(values, standard errors) of L_seq over the records (``seq_band``)."""
    pairs = [seq_band(r["metrics"], exact_live) for r in records]
    return [v for v, _ in pairs], [s for _, s in pairs]


def loss_bands(cfg: RunConfig, records: Sequence[dict[str, Any]], family: str) -> tuple[list, list]:
    """(values, standard errors) of a family's loss over the records: L_seq with its recorded
    standard error (``seq_band``), Lc exact (0)."""
    if family == "paper":
        return seq_bands(records, every_group_live(cfg))
    return [num(r["metrics"].get("Lc")) for r in records], [0.0] * len(records)


def family_summary(cfg: RunConfig, records: list[dict[str, Any]], family: str) -> dict[str, Any]:
    """tau (steps and examples), the transition width, plateau height and its ratio to log K
    under one definition. Each crossing (tau, t_start, t_end, tau_width) is a value with its
    interval and whether it is exact (``crossings``: ``tau``, ``tau_lo``, ``tau_hi``,
    ``tau_exact``); the first-token family's are exact, L_seq's estimates until settled."""
    steps = [r["step"] for r in records]
    key = "L_seq" if family == "paper" else "Lc"
    vals, ses = loss_bands(cfg, records, family)
    log_K = cfg.task.log_K
    t = crossings.first_below(steps, vals, ses, cfg.eval.alpha * log_K)
    if family == "paper":
        ph = mean_over_window(steps, vals, cfg.eval.seq_plateau_start, cfg.eval.seq_plateau_end)
    else:
        ph = plateau_height(steps, vals, log_K, cfg.eval.plateau_start) if steps else float("nan")
    # log K is the reference only where the first target token carries a K-fold ambiguity (A
    # targets); a B-target task has one target per group: no ratio to print
    w = crossings.width(steps, vals, ses, cfg.eval.width_hi * log_K, cfg.eval.width_lo * log_K)
    return {
        "loss": key,
        **crossings.columns("tau", t),
        **{k: v for name, c in w.items() for k, v in crossings.columns(name, c).items()},
        "tau_examples": None if t.value is None else cfg.examples_seen(t.value),
        "plateau_loss": ph,
        "plateau_ratio": ph / log_K if log_K > 0 and cfg.task.targets_A else float("nan"),
    }


def summarize(cfg: RunConfig, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of one run from its checkpoint records (what ``mi-plateau summary`` prints).

    The top-level tau / tau_examples / plateau_loss / plateau_ratio are the paper family's (for a
    task without candidate strings, whose paper family is undefined, the first-token family's);
    ``definitions`` holds both families side by side.
    """
    steps = [r["step"] for r in records]
    Lc = [num(r["metrics"].get("Lc")) for r in records]
    log_K = cfg.task.log_K
    fams = {f: family_summary(cfg, records, f) for f in ("paper", "first_token")}
    has_paper = any(math.isfinite(num(r["metrics"].get("L_seq"))) for r in records)
    top = "paper" if has_paper else "first_token"
    conv = next((s for s, v in zip(steps, Lc) if v < cfg.train.converge_Lc), None)
    gap_step = next((r["step"] for r in records if num(r["metrics"].get("swap_gap")) > 0.1), None)
    head = fams[top]
    return {
        "K": cfg.task.K,
        "n_b": cfg.task.n_b,
        "D": cfg.task.D,
        "direction": cfg.task.direction,
        "log_K": log_K,
        "reference": "log K"
        if cfg.task.targets_A
        else "none: B targets have no K-fold ambiguity (tau still uses alpha log K)",
        "definition": top,
        "plateau_loss": head["plateau_loss"],
        "plateau_ratio": head["plateau_ratio"],
        "alpha": cfg.eval.alpha,
        **{k: head[k] for k in head if k.startswith(("tau", "t_start", "t_end"))},
        "definitions": fams,
        "converged": conv is not None,
        "converged_step": conv,
        "swap_gap_0.1_step": gap_step,
        **(
            {f"dissipation_{k}": v for k, v in dissipation(records, log_K).items()}
            | {f"dissipation_train_{k}": v for k, v in dissipation(records, log_K, gap="train").items()}
            if cfg.task.has_selector
            else dict.fromkeys(DISSIPATION_KEYS)
        ),
        "last_step": steps[-1] if steps else None,
        # a run whose loss stopped being a number: the step and the first quantity (a result)
        "diverged": next((r["diverged"] for r in records if isinstance(r.get("diverged"), dict)), None),
        "final_Lc": Lc[-1] if Lc else None,
        "final_L_seq": num(records[-1]["metrics"].get("L_seq")) if records else None,
        "n_checkpoints": len(records),
        # the evaluation set holds min(eval.n_groups, n_b) groups: say so when it is fewer
        "eval_groups": min(cfg.eval.n_groups, cfg.task.n_b),
        **(
            {
                "eval_groups_note": f"eval.n_groups={cfg.eval.n_groups} > task.n_b={cfg.task.n_b}: "
                f"the evaluation set holds all {cfg.task.n_b} groups"
            }
            if cfg.eval.n_groups > cfg.task.n_b
            else {}
        ),
    }


def nan_to_none(x: Any) -> Any:
    """JSON has no NaN: map float NaN/inf to None, recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: nan_to_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [nan_to_none(v) for v in x]
    return x
