"""What evaluation costs real runs, from their own records (docs/reproduction/eval_share.md).

    python analyses/eval_share.py RUN [RUN ...]   # read each run's records, add its row to the log
    python analyses/eval_share.py --build         # rebuild the table from the committed log alone

Per run: its steps and checkpoints, the run's wall time (training and every live evaluation, across
resumes), the live evaluations' seconds and their share, the mean seconds of a checkpoint's
evaluation with L_seq scored live and after it was left out (the first-token family alone), the
training seconds per step, the precisions of training and evaluation, the seconds
``mi-plateau summary RUN`` took on the finished run (timed here, in a fresh process), and what
``mi-plateau settle`` paid where it was asked (seconds and groups scored; apart from the run), and
the run replayed on a 50-step grid through the transition too (``sparse_grid``: the share, and the
first-token tau on both grids).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

from measurement_log import DOCS, Log, args, run_name

from mi_plateau.checkpoints import Run
from mi_plateau.outputs import write_table
from mi_plateau.sweeps.table import run_costs


def row(path: str) -> dict:
    run = Run(path)
    cfg = run.config()
    recs = run.record_files()
    wall = recs[-1]["wall_s"] + recs[-1]["eval_s"]
    ev = sum(r["eval_s"] for r in recs)
    seq = [r["eval_s"] for r in recs if r["metrics"].get("L_seq") is not None]
    first = [r["eval_s"] for r in recs if r["metrics"].get("L_seq") is None]
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mi_plateau", "summary", path], check=True, capture_output=True)
    return {
        "run": run_name(run),
        "K": cfg.task.K,
        "n_b": cfg.task.n_b,
        "seed": cfg.task.data_seed,
        "precision": cfg.train.precision,
        "eval_precision": recs[-1].get("eval_precision", "fp32"),
        "status": run.manifest()["status"],
        "steps": recs[-1]["step"],
        "checkpoints": len(recs),
        "run_wall_s": round(wall, 1),
        "live_eval_s": round(ev, 1),
        "eval_share": round(ev / wall, 4),
        "eval_s_per_ckpt_with_L_seq": round(sum(seq) / len(seq), 3) if seq else None,
        "eval_s_per_ckpt_first_token_only": round(sum(first) / len(first), 3) if first else None,
        "train_s_per_step": round((wall - ev) / recs[-1]["step"], 4),
        "summary_s": round(time.perf_counter() - t, 2),
        # what `mi-plateau settle` paid on request (its default questions, and any asked later)
        "settle_s": round(run_costs(run)["settle_s"] or 0.0, 1),
        "settle_groups": sum(len(v["groups"]) for v in (read_settled(run) or {}).values()),
        **sparse_grid(recs, wall, ev, cfg.task.K),
    }


def sparse_grid(recs: list[dict], wall: float, ev: float, K: int, every: int = 50) -> dict:
    """The run replayed on a grid of ``every`` steps through the transition too (its checkpoints
    at multiples of ``every`` only, each with the evaluation seconds it paid): the evaluation's
    share then, and the first-token tau (Lc < 0.5 log K) on both grids."""
    kept = [r for r in recs if r["step"] % every == 0]
    ev_kept = sum(r["eval_s"] for r in kept)
    tau = lambda rs: next((r["step"] for r in rs if (r["metrics"].get("Lc") or math.inf) < 0.5 * math.log(K)), None)
    return {
        f"eval_share_every_{every}": round(ev_kept / (wall - ev + ev_kept), 4),
        "tau_first_token": tau(recs),
        f"tau_first_token_every_{every}": tau(kept),
    }


def read_settled(run: Run) -> dict | None:
    path = run.path / "settled.json"
    return json.loads(path.read_text()).get("steps") if path.is_file() else None


def main() -> None:
    a, log = args(__doc__), Log("eval_share")
    for path in a.runs:
        log.replace(run_name(Run(path)), [row(path)])
    note = (
        "Times on 2 cores of an AMD EPYC with AVX512-BF16, one thread per run, 2-6 processes at once (the shares are "
        "ratios within one run; run: the folder under checkpoints/; the lead sweep's K36_seed0 stopped at 12,550 "
        "steps). "
        "The p57/ runs are the earlier runs of the same configs trained again with bf16 evaluation in chunks of 1,024 "
        "sequences, two processes at once; p57b/ again with each row's tail run as a continuation of its prompt, "
        "three to five processes at once; p57c/ the same alone on the machine; p57d/ with the live evaluation as one "
        "packed forward (every row's first token, the live groups' tails and scores in the same pass), four to six "
        "processes at once and the test suite beside it. Their weights equal the earlier "
        "ones' (SHA-256), so settle_s and "
        "settle_groups are the earlier runs' settlement, whose cache they reuse (0 new scorings). "
        "eval_share_every_50: the run's share with its checkpoints off the 50-step grid left out (the transition's "
        "25-step points); tau_first_token on both grids. "
        f"Rebuild: `python analyses/eval_share.py --build` (log: eval_share_log.json, "
        f"{log.updated})."
    )
    write_table(DOCS / "eval_share", sorted(log.rows, key=lambda r: (r["K"], r["run"])),
                title="Evaluation's share of real runs", note=note)  # fmt: skip
    for r in log.rows:
        print(r)


if __name__ == "__main__":
    main()
