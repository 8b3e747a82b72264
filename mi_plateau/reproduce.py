"""Named recipes that rebuild the paper's artifacts: ``mi-plateau reproduce core``.

``core`` trains the paper configuration (n_b = 1000, paper model and optimiser) for K in
{5, 10, 20, 36} with seed 0 and K in {10, 20} with seeds 1 and 2, analyses every run, and writes
the static figures and generated tables under ``docs/reproduction/``. It is resumable: finished
runs and analysed checkpoints are skipped, unfinished runs resume from their last checkpoint.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .checkpoints import RunError

RECIPES = {
    "core": [(5, 0), (10, 0), (20, 0), (36, 0), (10, 1), (10, 2), (20, 1), (20, 2)],
}


def plan(recipe: str, root: str | Path = "checkpoints"):
    from .cli import default_run_name
    from .config import preset, with_overrides

    out = []
    for K, seed in RECIPES[recipe]:
        cfg = with_overrides(preset("paper"), {"K": K, "seed": seed})
        out.append((Path(root) / default_run_name(cfg), cfg))
    return out


def _status(path: Path) -> str:
    try:
        return json.loads((path / "manifest.json").read_text()).get("status", "?")
    except (OSError, json.JSONDecodeError):
        return "not started"


def train_all(runs, jobs: int = 1, progress: bool = True) -> None:
    """Train the unfinished runs, ``jobs`` at a time in subprocesses with cores split evenly."""
    todo = [(p, c) for p, c in runs if _status(p) != "finished"]
    if not todo:
        return
    threads = max(1, (os.cpu_count() or 1) // jobs)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    if jobs < 1:
        raise RunError(f"jobs={jobs}: must be at least 1")
    running: list[tuple[subprocess.Popen, Path]] = []
    failed: list[str] = []

    def reap() -> None:
        nonlocal running
        still = []
        for p, where in running:
            if p.poll() is None:
                still.append((p, where))
            elif p.returncode != 0:
                failed.append(f"{where} (exit {p.returncode})")
        running = still

    for path, cfg in todo:
        cmd = [sys.executable, "-m", "mi_plateau", "train", "--out", str(path), "--resume"]
        if (path / "config.json").exists():  # started: continue with the stored config
            _check_recipe_config(path, cfg)
        else:
            cmd += ["--preset", "paper", "--K", str(cfg.task.K), "--seed", str(cfg.task.data_seed)]
        while len(running) >= jobs:
            reap()
            time.sleep(2)
        if not progress or jobs > 1:
            cmd.append("--quiet")
        print(f"training {path.name} ({threads} threads)", file=sys.stderr)
        running.append((subprocess.Popen(cmd, env=env), path))
    for p, _ in running:
        p.wait()
    reap()
    if failed:
        raise RunError(f"training failed for {', '.join(failed)}; rerun the recipe to resume")


STEP_IMPL = ("impl", "compile")  # how a step is computed, not what the recipe trains


def _check_recipe_config(path: Path, cfg) -> None:
    """A started run must be the recipe's run; only the step implementation may differ (runs
    begun before ``train.impl`` existed trained with ``bridge``, and resume that way), and its
    ``max_steps`` may have been raised."""
    from .checkpoints import Run

    stored, want = Run(path).config().to_dict(), cfg.to_dict()
    keys = STEP_IMPL + (("max_steps",) if stored["train"]["max_steps"] >= want["train"]["max_steps"] else ())
    for d in (stored, want):  # (a cap raised with `train.extends` continues the same run)
        for k in keys:
            d["train"].pop(k, None)
    if stored != want:
        from .train import _config_diff

        raise RunError(f"{path / 'config.json'}: not this recipe's run ({_config_diff(stored, want)}); move it away or rerun elsewhere")


def _train_wall(path: Path) -> float:
    from .checkpoints import Run

    run = Run(path)
    last = run.manifest()["checkpoints"][-1]
    rec = json.loads(run.inside(last["record_file"]).read_text())
    return float(rec.get("wall_s", float("nan")))


def write_assets(results: dict[str, Any], runs, docs: Path) -> list[Path]:
    """Static SVG figures and the generated tables Markdown for docs/reproduction.md."""
    from .checkpoints import Run, atomic_write_bytes
    from .passes.tables import PAPER_TAU
    from .svgplot import line_plot
    from .tabular import read_json_rows, to_markdown

    docs.mkdir(parents=True, exist_ok=True)
    written = []
    seed0 = [(p, c) for p, c in runs if c.task.data_seed == 0]
    # Figure 1: Lc curves with log K lines
    series, hl = [], []
    for i, (p, c) in enumerate(seed0):
        recs = Run(p).records()
        series.append({"x": [r["step"] for r in recs], "y": [r["metrics"]["Lc"] for r in recs], "label": f"K={c.task.K}"})
        hl.append({"y": c.task.log_K, "color": "#bbb"})
    svg = line_plot(series, title="Figure 1: candidate loss Lc (n_b=1000, seed 0); dashed: log K", xlabel="step", ylabel="Lc (nats)", hlines=hl)
    atomic_write_bytes(docs / "figure1.svg", svg.encode())
    written.append(docs / "figure1.svg")
    # Figure 3 a and b from the analysis outputs
    fa, fb = [], []
    for i, (p, c) in enumerate(seed0):
        name = p.name
        f3 = results["figure3"].get(name)
        if not f3 or not f3["a"]:
            continue
        col = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"][i % 4]
        fa.append({"x": [r["t_over_tau"] for r in f3["a"]], "y": [r["z_norm"] for r in f3["a"]], "label": f"K={c.task.K} z-dep.", "color": col})
        fa.append({"x": [r["t_over_tau"] for r in f3["a"]], "y": [r["loss_progress"] for r in f3["a"]], "label": f"K={c.task.K} loss", "color": col, "dash": True})
        fb.append({"x": [r["t_over_tau"] for r in f3["b"]], "y": [r["frac_falling"] for r in f3["b"]], "label": f"K={c.task.K}", "color": col})
    if fa:
        atomic_write_bytes(docs / "figure3a.svg", line_plot(fa, title="Figure 3a: normalised z-dependence (solid) and loss progress (dashed)", xlabel="t / tau", ylabel="normalised", vlines=[1.0], ylim=(-0.1, 1.05)).encode())
        atomic_write_bytes(docs / "figure3b.svg", line_plot(fb, title="Figure 3b: fraction of groups whose Lc falls between checkpoints", xlabel="t / tau", ylabel="fraction of groups", vlines=[1.0], ylim=(0, 1.0)).encode())
        written += [docs / "figure3a.svg", docs / "figure3b.svg"]
    # tables
    t3 = []
    by_K: dict[int, list] = {}
    for p, c in runs:
        s = results["summaries"][p.name]
        by_K.setdefault(c.task.K, []).append(s)
        t3.append({"run": p.name, "K": c.task.K, "seed": c.task.data_seed, "tau": s["tau"], "paper_tau": PAPER_TAU.get(c.task.K),
                   "plateau_Lc": s["plateau_Lc"], "plateau_over_logK": s["plateau_ratio"], "converged_step": s["converged_step"],
                   "last_step": s["last_step"], "status": s.get("status"), "train_wall_s": results["train_wall"].get(p.name)})
    spread = []
    for K, ss in sorted(by_K.items()):
        taus = [s["tau"] for s in ss if s["tau"] is not None]
        if len(taus) > 1:
            spread.append({"K": K, "seeds": len(taus), "tau_mean": statistics.mean(taus), "tau_std": statistics.stdev(taus),
                           "tau_min": min(taus), "tau_max": max(taus), "paper_tau": PAPER_TAU.get(K)})
    comp = Path(results["comparison"])
    parts = ["# Generated tables (mi-plateau reproduce core)\n",
             "Regenerate with `mi-plateau reproduce core`. Columns named paper_* are the paper's values, for reference.\n",
             "## Table 3 (K column): tau and plateau height\n", to_markdown(t3),
             "\n## tau across seeds\n", to_markdown(spread) if spread else "(one seed per K)\n",
             "\n## Table 6: collective transition\n", to_markdown(read_json_rows(comp / "table6.json")),
             "\n## Table 9: head ablation (top 4 heads per phase, Delta Lc in nats)\n", to_markdown(read_json_rows(comp / "table9.json")),
             "\n## Selector routing: routing head, assembly time t_r and lead (tau - t_r) / tau\n", to_markdown(read_json_rows(comp / "routing.json"))]
    atomic_write_bytes(docs / "tables.md", "".join(parts).encode())
    written.append(docs / "tables.md")
    return written


def run_recipe(recipe: str = "core", *, jobs: int = 1, progress: bool = True, docs: str | Path = "docs/reproduction",
               analyses: str | Path = "analyses", train: bool = True) -> dict[str, Any]:
    """Train (unless ``train=False``) and analyse the recipe's runs; write docs assets and a log."""
    from .api import analyze
    from .summaries import nan_to_none

    t0 = time.perf_counter()
    runs = plan(recipe)
    if train:
        train_all(runs, jobs=jobs, progress=progress)
    else:  # analyse what exists: finished runs and unfinished ones up to their last checkpoint
        runs = [(p, c) for p, c in runs if _status(p) in ("finished", "running")]
        if not runs:
            raise RunError("no run of this recipe has started yet; run it without --no-train first")
    t_train = time.perf_counter() - t0
    res = analyze([p for p, _ in runs], analyses, progress=progress, with_figure3=True)
    t_an = time.perf_counter() - t0 - t_train
    fig3 = {p.name: res["runs"][p.name]["figure3"] for p, c in runs if c.task.data_seed == 0}
    results = {
        "summaries": {n: r["summary"] for n, r in res["runs"].items()},
        "routing": {n: r["routing"] for n, r in res["runs"].items()},
        "comparison": res["comparison"],
        "figure3": fig3,
        "train_wall": {p.name: _train_wall(p) for p, _ in runs},
    }
    written = write_assets(results, runs, Path(docs))
    log = {"recipe": recipe, "recipe_train_wall_s": t_train, "recipe_analysis_wall_s": t_an,
           "sum_of_run_train_wall_s": sum(v for v in results["train_wall"].values() if math.isfinite(v)),
           "summaries": results["summaries"], "routing": results["routing"], "written": [str(w) for w in written]}
    from .checkpoints import atomic_write_json

    atomic_write_json(Path(docs) / "recipe_log.json", log)
    return nan_to_none(log)


def main(args) -> int:
    runs = plan(args.recipe)
    if args.dry_run:
        for p, c in runs:
            print(f"{p}  K={c.task.K} seed={c.task.data_seed}  {_status(p)}")
        return 0
    log = run_recipe(args.recipe, jobs=getattr(args, "jobs", 1), progress=not args.quiet, train=not args.no_train)
    for name, s in log["summaries"].items():
        ro = log["routing"][name]
        ratio = s["plateau_ratio"]
        ratio = f"{ratio:.3f}" if isinstance(ratio, float) else "—"
        print(f"{name}: tau={s['tau']} plateau/logK={ratio} routing={ro.get('routing_head')} "
              f"lead(attn)={ro.get('routing_lead_sel_attn')} lead(causal)={ro.get('routing_lead_swap_contrib')}")
    print(f"wrote {', '.join(log['written'])}")
    return 0
