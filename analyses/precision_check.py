"""The science check of train.precision = auto (docs/reproduction/precision_check.md).

    python analyses/precision_check.py checkpoints/prec/*   # read the runs, rewrite the log and the tables
    python analyses/precision_check.py --build              # rebuild the tables from the committed log alone

The runs are paper-preset runs at K = 10 and 20, data seeds 0, 1, 2, each trained twice: in
fp32 and in auto (bf16 on a machine with bf16 units). Per run: tau, t_start, t_end and the width
in both families (L_seq's the live estimates with their intervals, exact where settled), the
training wall time and the evaluation's share. Per K and quantity: the fp32 runs' mean and
standard deviation over seeds, the auto runs' mean, and the mean of the paired (same seed)
differences auto - fp32 in units of the fp32 seeds' standard deviation.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from measurement_log import DOCS, Log, args

from mi_plateau.checkpoints import Run
from mi_plateau.outputs import write_table
from mi_plateau.settle import run_summary
from mi_plateau.summaries import nan_to_none, summarize
from mi_plateau.sweeps.table import run_costs

KEYS = ("tau", "t_start", "t_end", "tau_width")


def run_row(path: str) -> dict:
    run = Run(path)
    cfg, s = run.config(), run_summary(run)
    costs = run_costs(run)
    row = {
        "run": run.path.name,
        "K": cfg.task.K,
        "seed": cfg.task.data_seed,
        "precision": cfg.train.precision,
        "status": s["status"],
        "steps": s["last_step"],
        "train_wall_s": costs["run_wall_s"],
        "eval_share": costs["eval_share"],
    }
    live = summarize(cfg, run.records(settled=False))["definitions"]  # the live estimates alone
    for fam, short in (("paper", "seq"), ("first_token", "first")):
        d = s["definitions"][fam]
        for k in KEYS:
            row[f"{k}_{short}"] = d[k]
            row[f"{k}_{short}_lo"], row[f"{k}_{short}_hi"] = d[f"{k}_lo"], d[f"{k}_hi"]
            row[f"{k}_{short}_exact"] = d[f"{k}_exact"]
            row[f"{k}_{short}_live"] = nan_to_none(live[fam][k])
    return row


def paired(f: dict, a: dict, key: str) -> tuple:
    """The fp32 and auto runs' values of ``key``, like with like: exact where both are settled,
    else both runs' live estimates (one settled run and one estimate would mix the estimate's
    error into the difference); and which it is."""
    if f.get(f"{key}_exact") and a.get(f"{key}_exact"):
        return f[key], a[key], "exact"
    return f.get(f"{key}_live", f[key]), a.get(f"{key}_live", a[key]), "estimate"


def compare(rows: list[dict]) -> list[dict]:
    out = []
    # a run stopped by hand at or past the step where the other runs at its K finished counts too
    caps = {r["K"]: r["steps"] for r in sorted(rows, key=lambda r: -r["steps"]) if r["status"] == "finished"}
    done = [r for r in rows if r["status"] == "finished" or r["steps"] >= caps.get(r["K"], float("inf"))]
    for K in sorted({r["K"] for r in done}):
        by = {(r["seed"], r["precision"]): r for r in done if r["K"] == K}
        seeds = sorted({s for s, p in by if (s, "fp32") in by and (s, "bf16") in by})
        for fam in ("seq", "first"):
            for k in KEYS:
                key = f"{k}_{fam}"
                pairs = [paired(by[(s, "fp32")], by[(s, "bf16")], key) for s in seeds]
                f, a = [p[0] for p in pairs], [p[1] for p in pairs]
                kinds = sorted({p[2] for p in pairs})
                if not seeds or None in f or None in a:
                    out.append({"K": K, "quantity": key, "n_seeds": len(seeds), "note": "missing in a run"})
                    continue
                sd = statistics.stdev(f) if len(f) > 1 else float("nan")
                diff = statistics.fmean(x - y for x, y in zip(a, f))
                out.append({
                    "K": K, "quantity": key, "n_seeds": len(seeds), "values": "/".join(kinds),
                    "fp32_mean": statistics.fmean(f), "fp32_sd": sd, "auto_mean": statistics.fmean(a),
                    "paired_diff_mean": diff, "diff_over_fp32_sd": diff / sd if sd and sd == sd else float("nan"),
                    "fp32": f, "auto": a,
                })  # fmt: skip
    return out


def main() -> None:
    a, log = args(__doc__), Log("precision_check")
    for r in a.runs:
        if (Path(r) / "manifest.json").exists():
            log.replace(Run(r).path.name, [run_row(r)])
    rows = sorted(log.rows, key=lambda r: (r["K"], r["seed"], r["precision"]))
    note = (
        "Paper preset, data seeds 0-2, each run in fp32 and in auto (bf16 here: an AMD EPYC with AVX512-BF16). "
        "K = 20 runs stop at 14,600 steps (`--max-steps 14600`; seed 0's auto run, trained under the converge "
        "rule, was stopped by hand at 14,700): the first-token transition has not ended there, so its t_start, "
        "t_end and width are missing at K = 20. "
        "L_seq crossings are live estimates unless `_exact`; Lc crossings are exact. The paired comparison takes "
        "like with like (`values`): exact values where both runs of a seed are settled, else both runs' live "
        "estimates (`_live`). Rebuild: "
        f"`python analyses/precision_check.py --build` (log: precision_check_log.json, {log.updated})."
    )
    write_table(DOCS / "precision_check_runs", rows, title="Precision check: every run", note=note)
    write_table(DOCS / "precision_check", compare(rows), title="Precision check: auto against fp32", note=note)
    for r in compare(rows):
        print(r)


if __name__ == "__main__":
    main()
