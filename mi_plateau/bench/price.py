"""The dry run's prices against what runs cost (``mi-plateau bench --only price``): two runs of
different shapes trained here, one thread each, then priced by the probe the dry run uses
(``reproduce.price_probe``). Two estimates per run: with the evaluations it made (the probe's two
numbers alone), and with the evaluations the dry run expects from its steps (``evaluations``); both
against its measured training and live evaluation time (its wall time less the settlement, which the
dry run does not price)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import RunOptions, preset
from ..reproduce.price_probe import evaluations, prober, run_seconds
from ..sweeps.table import run_costs
from ..train import train

# (preset, K, step cap): a small model and the paper's, both run to their own stop
SHAPES = (("demo", 5, 3000), ("paper", 3, 3000))
QUICK_SHAPES = (("tiny", 3, 600), ("demo", 3, 1500))


def bench_price(quick: bool, device: str = "cpu") -> list[dict[str, Any]]:
    """One row per shape: the run's steps and evaluations, its measured seconds (training and
    live evaluation), the probe's prices and the two estimates with their ratios to it."""
    import torch

    rows = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a run trains on one thread; the probe times one
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, K, cap in QUICK_SHAPES if quick else SHAPES:
                base = preset(name)
                cfg = replace(base, task=replace(base.task, K=K), train=replace(base.train, max_steps=cap))
                run = train(cfg, Path(tmp) / f"{name}_K{K}", progress=False, options=RunOptions(device=device))
                cost = run_costs(run)
                steps = run.steps()[-1]
                measured = cost["wall_s"] - (cost["settle_s"] or 0.0)
                price = prober(tmp, device)(cfg)
                made = steps * price["s_step"] + cost["checkpoints"] * price["s_eval"]
                expected = run_seconds(cfg, price, steps)
                rows.append(
                    {
                        "preset": name,
                        "K": K,
                        "params": sum(p.numel() for p in run.load_model().parameters()),
                        "steps": steps,
                        "evaluations": cost["checkpoints"],
                        "evaluations_expected": evaluations(cfg, steps),
                        "measured_s": measured,
                        "s_step": price["s_step"],
                        "s_eval": price["s_eval"],
                        "estimate_s": made,
                        "estimate_over_measured": made / measured,
                        "dry_run_s": expected,
                        "dry_run_over_measured": expected / measured,
                    }
                )
    finally:
        torch.set_num_threads(threads)
    return rows


def price_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "**The dry run's prices against measured runs** (one thread; measured: training and live evaluation, the "
        "settlement left out; estimate: the probe's seconds per step and per evaluation x the run's steps and "
        "evaluations; dry run: the same with the evaluations it expects from the steps)",
        "",
        "| preset | K | parameters | steps | evaluations (expected) | measured s | s / step | s / evaluation | "
        "estimate s | estimate / measured | dry run s | dry run / measured |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['preset']} | {r['K']} | {r['params']} | {r['steps']} | {r['evaluations']} "
            f"({r['evaluations_expected']:.0f}) | {r['measured_s']:.1f} | {r['s_step']:.4f} | {r['s_eval']:.3f} | "
            f"{r['estimate_s']:.1f} | {r['estimate_over_measured']:.2f} | {r['dry_run_s']:.1f} | "
            f"{r['dry_run_over_measured']:.2f} |"
        )
    return lines
