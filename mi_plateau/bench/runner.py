"""The whole benchmark: ``run_benchmarks`` runs the sections, ``to_markdown`` renders the
tables (``mi-plateau bench`` prints them)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from ..checkpoints import Run
from ..checkpoints.files import code_commit
from ..config import RunConfig, preset
from .evaluation import bench_eval_share
from .price import bench_price, price_lines
from .sections import E2E_RUN, bench_end_to_end, bench_overhead, bench_passes, bench_threads, bench_train, step_anatomy
from .sweep import bench_sweep, sweep_lines
from .timing import machine, matmul_peak_gflops

QUICK_CANDIDATES = ["toolkit", "toolkit+fp32", "bridge", "plain", "fast", "fast+compile"]
FULL_CANDIDATES = [
    "toolkit",
    "toolkit+fp32",
    "bridge",
    "plain",
    "plain+sdpa",
    "plain+last",
    "plain+fused",
    "fast",
    "toolkit+compile",
    "fast+compile",
]


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --- the whole benchmark ------------------------------------------------------------


SECTIONS = ("train", "precision", "passes", "overhead", "sweep", "eval", "price")
PRECISION_CANDIDATES = ["toolkit", "toolkit+fp32", "plain"]  # the default step (auto) against fp32 eager


def run_benchmarks(
    quick: bool,
    *,
    cfg: RunConfig | None = None,
    e2e_run: Path | None = E2E_RUN,
    only: str | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Run all benchmarks; ``quick`` uses fewer repetitions and sequences and skips end to end.
    ``cfg`` (default: the paper preset) is the model and task benchmarked. ``only`` ("train",
    "passes", or "overhead": the toolkit's step and the checkpoint overhead) runs that section
    alone."""
    if only == "eval":
        return _alone(
            quick,
            "paper",
            device,
            "eval_share",
            "evaluation share at K = 10, 20, 36",
            lambda: bench_eval_share((10,) if quick else (10, 20, 36), reps=1 if quick else 3, device=device),
        )
    if only == "sweep":
        name = (cfg or preset("paper")).preset
        return _alone(
            quick,
            name,
            device,
            "sweep",
            "sweep throughput: batched trainer against single runs",
            lambda: bench_sweep(quick, name, device=device),
        )
    if only == "price":
        return _alone(
            quick,
            "paper",
            device,
            "price",
            "the dry run's prices against measured runs",
            lambda: bench_price(quick, device=device),
        )
    if only is not None and only not in SECTIONS:
        raise ValueError(f"bench section {only!r}: expected one of {', '.join(SECTIONS)}")
    cfg = cfg or preset("paper")
    res: dict[str, Any] = {
        "quick": quick,
        "preset": cfg.preset,
        "ckpt_every": cfg.train.ckpt_every,
        "machine": machine(),
        "load_start": os.getloadavg(),
    }
    t0 = time.perf_counter()
    _warn_if_busy(res["load_start"][0])
    res["matmul_peak_gflops"] = _matmul_peak(quick)
    if only in (None, "train", "overhead", "precision"):
        res["train"] = _train_section(cfg, quick, only, res["matmul_peak_gflops"])
    if only in ("train", "precision"):
        return _finish(res, t0)
    if not quick and only is None and (os.cpu_count() or 1) > 1:
        _log("training step at 1 thread and at one per core")
        res["threads_ms_per_step"] = bench_threads(cfg, reps=2, inner=3)
    pcfg = replace(cfg, eval=replace(cfg.eval, n_groups=40)) if quick else cfg
    trained = _trained_weights(e2e_run, cfg)
    if only in (None, "passes"):
        _log("analysis passes")
        res["passes"] = bench_passes(pcfg, reps=1 if quick else 3, weights=trained)
    if only == "passes":
        return _finish(res, t0)
    _log("checkpoint overhead")
    res["overhead"] = _overhead_section(cfg, quick, res["train"], e2e_run if trained is not None else None)
    if not quick and e2e_run is not None:
        _log("end to end (analyze_run over a finished run)")
        res["end_to_end"] = bench_end_to_end(Path(e2e_run))
    return _finish(res, t0)


def _alone(
    quick: bool, preset_name: str, device: str, key: str, label: str, measure: Callable[[], Any]
) -> dict[str, Any]:
    """A section run on its own (``only`` "eval" or "sweep"): the report's header, the fp32
    matmul peak, then ``res[key] = measure()``, logged as ``label``."""
    res = {"quick": quick, "preset": preset_name, "machine": machine(), "load_start": os.getloadavg(), "device": device}
    t0 = time.perf_counter()
    res["matmul_peak_gflops"] = _matmul_peak(quick)
    _log(label)
    res[key] = measure()
    return _finish(res, t0)


def _matmul_peak(quick: bool) -> float:
    """The fp32 matmul peak (GFLOP/s) that every report states and the training step is measured against."""
    _log("fp32 matmul peak")
    return matmul_peak_gflops(1024 if quick else 2048, 3 if quick else 7)


def _warn_if_busy(load: float) -> None:
    """Warn when the machine's 1-minute load average and torch's threads exceed its cores."""
    busy = load + torch.get_num_threads() > (os.cpu_count() or 1) + 0.5
    if busy and torch.get_num_threads() > 1:
        _log(
            f"warning: load average {load:.1f} on {os.cpu_count()} cores and torch uses "
            f"{torch.get_num_threads()} threads: timings will be inflated (try OMP_NUM_THREADS=1)"
        )


def _train_section(cfg: RunConfig, quick: bool, only: str | None, peak_gflops: float) -> dict[str, Any]:
    """The training step of each candidate (only the toolkit's for ``only="overhead"``), with its
    share of the fp32 matmul peak."""
    _log("training step")
    which = {"overhead": ["toolkit"], "precision": PRECISION_CANDIDATES}.get(
        only or "", QUICK_CANDIDATES if quick else FULL_CANDIDATES
    )
    train = bench_train(cfg, which, reps=4 if quick else 6, inner=5 if quick else 10, check_steps=10 if quick else 50)
    for row in train["candidates"].values():
        row["frac_of_peak"] = row["gflops"] / peak_gflops
    if only == "precision":  # where the default step's time goes: what bf16 speeds up, what it leaves
        _log("step anatomy (profiled)")
        for name, parts in step_anatomy(cfg, which).items():
            train["candidates"][name].update(parts)
    return train


def _trained_weights(e2e_run: Path | None, cfg: RunConfig):
    """The last weights of the reference run, where it exists and has ``cfg``'s model and task
    (the passes are then timed on trained weights); else None."""
    if e2e_run is not None and (Path(e2e_run) / "manifest.json").exists():
        run = Run(e2e_run)
        if run.config().model == cfg.model and run.config().task == cfg.task:
            return run.weights(run.steps()[-1])
    return None


def _overhead_section(cfg: RunConfig, quick: bool, train: dict[str, Any], reference_run: Path | None) -> dict[str, Any]:
    """The checkpoint overhead (``bench_overhead``) and its shares of the training time: per
    checkpoint interval of ``cfg``, and over ``reference_run``'s own intervals (where given)."""
    ov = bench_overhead(cfg, reps=5 if quick else 9)  # evaluate is ~0.2 s: cheap to repeat
    step_s = train["candidates"]["toolkit"]["ms_per_step"] / 1e3
    ck = ov["evaluate_s"] + ov["save_s"]
    ov["evaluate_in_steps"] = ov["evaluate_s"] / step_s
    for every in (cfg.train.ckpt_every, cfg.train.ckpt_every_transition):
        ov[f"share_every_{every}"] = ck / (every * step_s + ck)
    # the evaluation of both families as a share of the training time between two checkpoints,
    # and of the first-token family alone (the issue's measure: eval / (every * step))
    every = cfg.train.ckpt_every
    ov["eval_over_train_both"] = ov["evaluate_s"] / (every * step_s)
    ov["eval_over_train_first_token"] = ov["evaluate_first_token_s"] / (every * step_s)
    if reference_run is not None:  # the mean interval of a whole run (denser through the transition)
        steps = Run(reference_run).steps()
        ov["mean_interval_reference_run"] = steps[-1] / (len(steps) - 1)
        ov["share_reference_run"] = ck / (ov["mean_interval_reference_run"] * step_s + ck)
    ov["train_steps_between_ckpts_s"] = cfg.train.ckpt_every * step_s
    return ov


def _finish(res: dict[str, Any], t0: float) -> dict[str, Any]:
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    res["commit"] = code_commit()
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - t0
    return res


def to_markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['threads']} threads), Python {m['python']}; "
        f"load average (1/5/15 min) {_load(res['load_start'])} at start, {_load(res['load_end'])} at end; "
        f"fp32 matmul peak {res['matmul_peak_gflops']:.0f} GFLOP/s; "
        f"{'quick' if res['quick'] else 'full'} run, {res['total_s']:.0f} s; "
        f"{res.get('date')}, commit {res.get('commit')}.",
    ]
    if "train" in res:
        lines += _train_lines(res)
    if "passes" in res:
        lines += _passes_lines(res["passes"])
    if "overhead" in res:
        lines += _overhead_lines(res)
    e = res.get("end_to_end")
    if e is not None:
        lines += _e2e_lines(e)
    if "eval_share" in res:
        lines += _eval_lines(res["eval_share"])
    if "sweep" in res:
        lines += sweep_lines(res["sweep"])
    if "price" in res:
        lines += price_lines(res["price"])
    return "\n".join(lines) + "\n"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"  # a snapshot from before the column existed


def _eval_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "**Evaluation as a share of training** (paper model; seconds of `evaluate` / (50 x seconds per step); "
        f"live: {rows[0]['subset']} of the evaluation groups; the step, the live evaluation and the first-token "
        f"family in {rows[0].get('precision', 'fp32')}, as a run in the default precision evaluates, the full "
        "scoring and the A1 losses in fp32)",
        "",
        "| K | strings (all groups) | s / step | full (one settling scoring) | live | first token only | "
        "first-token losses (A1 only) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['K']} | {r['strings_full']} | {r['s_per_step']:.3f} | {_pct(r.get('full_share'))} | "
            f"{_pct(r.get('live_share'))} | {_pct(r.get('first_token_share'))} | {_pct(r.get('losses_A1_share'))} |"
        )
    return lines


def _train_lines(res: dict[str, Any]) -> list[str]:
    t = res["train"]
    lines = [
        "",
        f"**Training step** (preset {res['preset']}, {t['tokens_per_step']} tokens, "
        f"{t['flops_per_step'] / 1e9:.2f} GFLOP nominal; loss checked over {t['check_steps']} steps; "
        f"{next(iter(t['candidates'].values()))['n_steps']} timed steps per candidate; the toolkit's step in "
        f"train.precision {t.get('precision', 'fp32')}: {t.get('precision_reason', 'fp32 before auto existed')}; "
        "plain is fp32 eager)",
        "",
        "| candidate | ms/step (median) | mean | GFLOP/s | of peak | vs toolkit | vs plain "
        "| max abs loss diff | first step (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, r in t["candidates"].items():
        lines.append(
            f"| {k} | {r['ms_per_step']:.1f} | {r['ms_mean']:.1f} | {r['gflops']:.0f} | {100 * r['frac_of_peak']:.0f}% "
            f"| {r['vs_toolkit']:.2f} | {r['vs_plain']:.2f} | {r['max_abs_loss_diff']:.1e} | {r['first_step_s']:.2f} |"
        )
    rows = t["candidates"]
    if all("matmul_ms" in r for r in rows.values()) and "plain" in rows:
        plain = rows["plain"]["matmul_ms"] + rows["plain"]["other_ms"]
        lines += [
            "",
            "Where each step's time goes (torch.profiler, self CPU time over 10 steps; matmul = mm, addmm, bmm):",
            "",
            "| candidate | matmul ms/step | other ms/step | matmul share | matmul vs plain's | other vs plain's |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for k, r in rows.items():
            lines.append(
                f"| {k} | {r['matmul_ms']:.1f} | {r['other_ms']:.1f} "
                f"| {r['matmul_ms'] / (r['matmul_ms'] + r['other_ms']):.0%} "
                f"| {r['matmul_ms'] / rows['plain']['matmul_ms']:.2f} "
                f"| {r['other_ms'] / rows['plain']['other_ms']:.2f} |"
            )
        lines += [
            "",
            f"The plain step profiles at {plain:.1f} ms. A step at most 0.5x the plain one needs its matmuls and "
            "the rest together at most half of that: the matmul column shows what this CPU's bf16 units give.",
        ]
    if "threads_ms_per_step" in res:
        lines += [
            "",
            "Toolkit step by intra-op thread count (ms/step, median, alternated): "
            + ", ".join(f"{n} thread(s) {v:.0f}" for n, v in res["threads_ms_per_step"].items()),
        ]
    return lines


def _passes_lines(p: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"**Analysis passes at one checkpoint** ({p['n_sequences']} sequences, {p['weights']})",
        "",
        "| passes | toolkit (s) | TransformerLens loop (s) | speed-up | max abs diff |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, label in (("all", "all (ablation=True)"), ("cheap", "cheap (ablation=False)")):
        r = p["rows"][kind]
        lines.append(
            f"| {label} | {r['toolkit_s']:.2f} | {r['loop_s']:.2f} | {r['speedup']:.1f}x | {r['max_abs_diff']:.1e} |"
        )
    lines += [
        "",
        f"Each pass on its own ({p['n_sequences']} sequences): "
        + ", ".join(f"{k} {v:.2f} s" for k, v in p.get("parts_s", {}).items())
        + " (forward: the packed clean and swapped forward, which gives the losses, per-group accuracy,"
        " the swap gap and the selector attention; ablation: every head on the clean and swapped inputs;"
        " patching: the selector positions, layer by layer).",
    ]
    return lines


def _overhead_lines(res: dict[str, Any]) -> list[str]:
    o = res["overhead"]
    lines = [
        "",
        f"**Checkpoint overhead** ({o['n_sequences']} eval sequences; manifest of {o['manifest_records']} checkpoints)",
        "",
        "| item | seconds |",
        "|---|---:|",
        f"| evaluate(), both families (packed forward; every candidate string scored) | {o['evaluate_s']:.3f} |",
        f"| evaluate(), first-token family only | {o['evaluate_first_token_s']:.3f} |",
        f"| evaluate_reference() (two plain forwards) through PlainTransformer "
        f"(max abs diff {o['evaluate_plain_max_abs_diff']:.0e}) | {o['evaluate_plain_s']:.3f} |",
        f"| checkpoint files | {o['save_s']:.3f} |",
        f"| {res['ckpt_every']} training steps (toolkit) | {o['train_steps_between_ckpts_s']:.2f} |",
        f"| evaluate() in training steps (toolkit) | {o['evaluate_in_steps']:.1f} |",
        f"| evaluate(), both families / training time between checkpoints (every {res['ckpt_every']}) "
        f"| {100 * o['eval_over_train_both']:.1f}% |",
        f"| evaluate(), first token only / training time between checkpoints "
        f"| {100 * o['eval_over_train_first_token']:.1f}% |",
    ]
    for k, v in o.items():
        every = k.rsplit("_", 1)[1]
        if k.startswith("share_every_"):
            lines.append(f"| share of wall time in evaluate + files, checkpoint every {every} steps | {100 * v:.1f}% |")
    if "share_reference_run" in o:
        lines.append(
            f"| share over a whole run (mean interval {o['mean_interval_reference_run']:.0f} steps, {E2E_RUN.name}) "
            f"| {100 * o['share_reference_run']:.1f}% |"
        )
    return lines


def _e2e_lines(e: dict[str, Any]) -> list[str]:
    lines = ["", "**End to end**", ""]
    if "skipped" in e:
        return lines + [f"skipped: {e['skipped']}"]
    return lines + [
        "| item | value |",
        "|---|---:|",
        f"| run | {e['run']} ({e['status']}, last step {e['last_step']}) |",
        f"| training wall time (records' wall_s, {e['resumed_segments']} segment(s)) | {e['train_wall_s']:.0f} s |",
        f"| analyze_run: {e['n_checkpoints']} checkpoints, {e['n_heavy']} with ablation + patching "
        f"| {e['analyze_s']:.0f} s |",
    ]


def _load(la) -> str:
    return "/".join(f"{x:.1f}" for x in la)
