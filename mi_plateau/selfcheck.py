"""``mi-plateau selfcheck [--device D]``: does the toolkit work on this machine, and how fast?

One command for a new machine (a GPU or a CPU). In a temporary folder it trains the demo preset
for ``steps`` steps in fp32 on the CPU and on the device (TF32 off for the comparison, so a GPU's
fp32 meets the CPU's at rounding level) and compares their curves (training loss, Lc, L_seq at
every checkpoint) and their first-token tau; trains a batched stack of ``m`` members on the device
and compares member 0 with the device's single run; runs the per-head passes (``inspect``) on the
device and on the CPU at the last checkpoint; and measures steps/s of a single run and
run-steps/s of the batched stack in the precision ``auto`` picks. Each check prints OK or FAIL
with its largest difference and its tolerance; the exit status is 1 if any failed.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .api import inspect
from .checkpoints import Run
from .config import RunOptions, preset, with_overrides
from .devices import precision_reason, resolve
from .settle import run_summary
from .train import train
from .train.batched import train_batched

CURVE_TOL = 2e-2  # nats: the largest |difference| of a curve point between devices or trainers
PASS_TOL = 1e-3  # nats: per-head Delta L and selector attention between devices


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    value: float
    tol: float | None  # None: a measurement, not a check

    def line(self) -> str:
        if self.tol is None:
            return f"INFO {self.name}: {self.value:,.1f}"
        return f"{'OK  ' if self.ok else 'FAIL'} {self.name}: max |diff| {self.value:.1e} (tolerance {self.tol:g})"


def curve(path: Path) -> dict[int, list[float]]:
    """{step: [training loss, Lc, L_seq]} of a run, as recorded."""
    return {
        r["step"]: [r["train_loss"], r["metrics"].get("Lc"), r["metrics"].get("L_seq")]
        for r in Run(path).records(settled=False)
    }


def curve_diff(a: Path, b: Path) -> float:
    """The largest |difference| of the curves of two runs over the checkpoints both have."""
    ca, cb = curve(a), curve(b)
    diffs = [
        abs(x - y)
        for s in set(ca) & set(cb)
        for x, y in zip(ca[s], cb[s])
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    return max(diffs) if diffs else math.inf


def tau_steps(path: Path) -> int | None:
    return run_summary(Run(path))["definitions"]["first_token"]["tau"]


def selfcheck(device: str = "auto", steps: int = 200, m: int = 4, folder: str | None = None) -> dict[str, Any]:
    """The checks and measurements (module docstring); returns the device, the precision ``auto``
    picks there and why, and the ``Check`` rows."""
    dev = resolve(device)
    on_dev = RunOptions(device=str(dev))
    work = Path(folder or tempfile.mkdtemp(prefix="mi_plateau_selfcheck_"))
    cfg = lambda seed=0, **o: with_overrides(preset("demo"), {"max_steps": steps, "seed": seed, **o})  # noqa: E731
    fp32 = {"train.precision": "fp32"}
    rows: list[Check] = []
    tf32 = torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32 = False  # fp32 is fp32 (devices.configure keeps matmuls off TF32)
        train(cfg(**fp32), work / "cpu", progress=False, options=RunOptions(device="cpu"))
        train(cfg(**fp32), work / "dev", progress=False, options=on_dev)
        d = curve_diff(work / "cpu", work / "dev")
        rows.append(Check(f"demo, {steps} steps, fp32 curves: {dev} against cpu", d <= CURVE_TOL, d, CURVE_TOL))
        ta, tb = tau_steps(work / "cpu"), tau_steps(work / "dev")
        gap = math.inf if (ta is None) != (tb is None) else abs((ta or 0) - (tb or 0))
        rows.append(Check(f"first-token tau: {dev} {tb} against cpu {ta} (steps)", gap <= 25, gap, 25))
        train_batched([(cfg(s, **fp32), work / f"b{s}") for s in range(m)], progress=False, options=on_dev)
        d = curve_diff(work / "dev", work / "b0")
        rows.append(Check(f"batched member 0 of {m} against its single run on {dev}", d <= CURVE_TOL, d, CURVE_TOL))
        differ = curve_diff(work / "b0", work / "b1") if m > 1 else math.inf
        rows.append(Check("batched members 0 and 1 are different runs (min diff)", differ > 1e-3, differ, 1e-3))
        a, b = inspect(work / "cpu", options=RunOptions(device="cpu")), inspect(work / "cpu", options=on_dev)
        d = max(
            abs(x[k] - y[k])
            for x, y in zip(a["heads"], b["heads"])
            for k in ("dL", "sel_attn")
            if x[k] is not None and y[k] is not None
        )
        rows.append(Check(f"per-head passes at the last checkpoint: {dev} against cpu", d <= PASS_TOL, d, PASS_TOL))
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    rows += speed(work, dev, steps, m)
    return {"device": str(dev), "precision": precision_reason(dev), "folder": str(work), "checks": rows}


def speed(work: Path, dev: torch.device, steps: int, m: int) -> list[Check]:
    """Steps/s of a single demo run and run-steps/s of a batched stack of ``m``, in the precision
    ``auto`` picks, checkpoints only at the ends (the step's own speed)."""
    quiet = lambda s: with_overrides(  # noqa: E731
        preset("demo"), {"max_steps": steps, "seed": s, "train.ckpt_every": 10**6, "eval.live_groups": 0}
    )
    on_dev = RunOptions(device=str(dev))
    t = time.perf_counter()
    train(quiet(0), work / "speed_single", progress=False, options=on_dev)
    single = steps / (time.perf_counter() - t)
    t = time.perf_counter()
    train_batched([(quiet(s), work / f"speed_b{s}") for s in range(m)], progress=False, options=on_dev)
    batched = m * steps / (time.perf_counter() - t)
    return [
        Check(f"single run on {dev}: steps/s (evaluations at both ends included)", True, single, None),
        Check(f"batched M = {m} on {dev}: run-steps/s", True, batched, None),
    ]
