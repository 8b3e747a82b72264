"""The label-noise runs read on the examples their noise left alone.

Under the original's label noise (``task.label_noise_mode = "fixed"``) a fraction p of the
training examples is trained on another A of its group for the whole run, and the evaluation
scores the clean labels. The evaluation groups are training groups, so about p of the evaluation
examples carry a label the model was taught wrong. Once it learns the noise, their clean loss
grows with its confidence and can hold the mean L_seq above the crossing line for good
(docs/reproduction_sweeps.md, Figure 2b).

``noise_split`` scores every example at each checkpoint and reports the clean L_seq and Lc
separately over the ``kept`` examples (trained on their own A) and the ``flipped`` ones, and the
crossing tau and the transition width of the kept examples: a clock that the memorised noise
does not move. The split is read off ``Task.noisy_target_sel``, the same fixed draw the run
trained on.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError
from ..config import parse_json
from ..summaries import tau, transition_width
from .example_losses import ExampleLosses


def flipped_rows(ev) -> np.ndarray:
    """Per row of the evaluation set, whether the run trained that example on another A of its
    group (fixed label noise); all False without label noise."""
    cfg = ev.task.cfg
    if cfg.label_noise == 0:
        return np.zeros(len(ev.g), dtype=bool)
    if cfg.label_noise_mode != "fixed":
        raise RunError(
            f"task.label_noise_mode={cfg.label_noise_mode!r}: each draw is corrupted afresh, so no example is "
            "trained on a wrong label for the whole run; the split needs the fixed mode"
        )
    return ev.task.noisy_target_sel[ev.g, ev.s] != ev.s


def noise_split(run: str | Run, every: int = 1, progress: bool = False) -> dict[str, Any]:
    """Every ``every``-th checkpoint of the run scored on every evaluation example: per step, the
    mean clean L_seq and Lc over all examples, the kept ones and the flipped ones (``rows``);
    the kept examples' crossing tau (L_seq < alpha log K, the run's alpha) and transition width
    (the run's thresholds) beside the same over all examples; ``n_kept``, ``n_flipped``."""
    run = run if isinstance(run, Run) else Run(run)
    if every < 1:
        raise ValueError(f"every must be positive (got {every})")
    cfg = run.config()
    if not cfg.task.targets_A:
        raise RunError(f"{run.path}: direction {cfg.task.direction!r} has no candidate strings; L_seq is undefined")
    steps = run.steps()[::every]
    if not steps:
        raise RunError(f"{run.path}: no checkpoints")
    losses = ExampleLosses(run, progress)
    flipped = flipped_rows(losses.ev)
    rows = []
    for step in steps:
        out = losses.at(step)
        row: dict[str, Any] = {"step": step}
        for name, pick in (("all", slice(None)), ("kept", ~flipped), ("flipped", flipped)):
            for m in ("L_seq", "Lc"):
                vals = out[m][pick]
                row[f"{m}_{name}"] = float(vals.mean()) if len(vals) else math.nan
        rows.append(row)
    if progress:
        print(file=sys.stderr)
    log_K, alpha = cfg.task.log_K, cfg.eval.alpha
    hi, lo = cfg.eval.width_hi, cfg.eval.width_lo

    def clocks(name: str) -> dict[str, Any]:
        seq = [r[f"L_seq_{name}"] for r in rows]
        t0, t1, w = transition_width(steps, seq, log_K, hi, lo)
        return {
            "tau": tau(steps, seq, log_K, alpha),
            "tau_first_token": tau(steps, [r[f"Lc_{name}"] for r in rows], log_K, alpha),
            "t_start": t0,
            "t_end": t1,
            "tau_width": w,
            "min_L_seq_over_log_K": min(seq) / log_K,
        }

    return {
        "run": str(run.path),
        "K": cfg.task.K,
        "label_noise": cfg.task.label_noise,
        "label_noise_mode": cfg.task.label_noise_mode,
        "alpha": alpha,
        "every": every,
        "n_kept": int((~flipped).sum()),
        "n_flipped": int(flipped.sum()),
        "last_step": steps[-1],
        "kept": clocks("kept"),
        "all": clocks("all"),
        "rows": rows,
    }


def noise_splits(
    sources: Sequence[str], *, every: int = 1, stamp: dict[str, Any], progress: bool = False
) -> list[dict[str, Any]]:
    """``noise_split`` of each label-noise run in ``sources``, sorted by K, label noise and run:
    a run folder is scored here (every ``every``-th checkpoint), its result marked ``scored``
    with ``stamp`` (the command, commit and date, ``provenance``); a JSON file a former call
    wrote is read, its runs kept as they are, so a new run joins a file without the others
    being scored again. A run in several sources keeps its last."""
    results: dict[str, dict[str, Any]] = {}
    for src in sources:
        if src.endswith(".json"):
            doc = parse_json(Path(src).read_text(), src)
            got = doc.get("runs") if isinstance(doc, dict) else None
            if not isinstance(got, list) or not all(isinstance(r, dict) and "run" in r for r in got):
                raise ValueError(f"{src}: no runs in it (mi-plateau noise-split RUN --out FILE)")
            results.update({r["run"]: r for r in got})
        else:
            r = noise_split(src, every=every, progress=progress)
            results[r["run"]] = r | {"scored": stamp}
    return sorted(results.values(), key=lambda r: (r["K"], r["label_noise"], r["run"]))
