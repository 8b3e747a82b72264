"""Evaluation in bf16 against fp32 on a finished run (docs/reproduction/eval_precision.md).

    python analyses/eval_precision.py RUN [RUN ...]   # score each checkpoint in bf16, add the run's rows to the log
    python analyses/eval_precision.py --build         # rebuild the table from the committed log alone

Every checkpoint of the run is evaluated again with bf16 autocast on the run's own live subset;
the crossings of both families (tau at 0.3-0.7 log K, the width's t_start and t_end) are read from
those records and from the run's recorded fp32 ones. A bf16 crossing agrees when it lies inside
the fp32 estimate's interval (L_seq, at the toolkit's Z) or within one checkpoint of the fp32 step
(the exact first-token family).
"""

from __future__ import annotations

import time

from measurement_log import DOCS, Log, args

from mi_plateau.checkpoints import Run
from mi_plateau.crossings import first_below, width
from mi_plateau.metrics import evaluate, live_subset
from mi_plateau.outputs import write_table
from mi_plateau.settle import TABLE5_ALPHAS
from mi_plateau.summaries import loss_bands


def crossings_of(cfg, records, family):
    steps = [int(r["step"]) for r in records]
    vals, ses = loss_bands(cfg, records, family)
    log_K = cfg.task.log_K
    out = {f"tau at {a:g}": first_below(steps, vals, ses, a * log_K) for a in TABLE5_ALPHAS}
    w = width(steps, vals, ses, cfg.eval.width_hi * log_K, cfg.eval.width_lo * log_K)
    out |= {"t_start": w["t_start"], "t_end": w["t_end"]}
    return out


def run_rows(path: str) -> list[dict]:
    run = Run(path)
    cfg = run.config()
    ev = run.eval_set()
    live = live_subset(cfg.eval.live_groups, ev.groups, cfg.task.K, cfg.eval.eval_seed)
    fp32 = run.records(settled=False)
    bf16 = []
    t0 = time.perf_counter()
    for step, model in run:
        rec = next(r for r in fp32 if r["step"] == step)
        bf16.append({**rec, "metrics": evaluate(model, ev, live=live, precision="bf16")})
    seconds = time.perf_counter() - t0
    rows = []
    steps = [int(r["step"]) for r in fp32]
    for fam in ("paper", "first_token"):
        a, b = crossings_of(cfg, fp32, fam), crossings_of(cfg, bf16, fam)
        for q in a:
            ca, cb = a[q], b[q]
            va, vb = ca.value, cb.value
            if fam == "paper":
                ok = (
                    vb is None
                    and ca.hi is None
                    or (vb is not None and ca.lo is not None and ca.lo <= vb and (ca.hi is None or vb <= ca.hi))
                )
            else:
                ok = va == vb or (va is not None and vb is not None and abs(steps.index(va) - steps.index(vb)) <= 1)
            rows.append({"run": run.path.name, "K": cfg.task.K, "family": fam, "crossing": q, "fp32": va,
                         "fp32_lo": ca.lo, "fp32_hi": ca.hi, "bf16": vb, "agrees": bool(ok)})  # fmt: skip
    print(f"{path}: {len(bf16)} checkpoints in bf16 in {seconds:.0f} s")
    return rows


def main() -> None:
    a, log = args(__doc__), Log("eval_precision")
    for path in a.runs:
        log.replace(Run(path).path.name, run_rows(path))
    rows = log.rows
    if rows:
        n, ok = len(rows), sum(r["agrees"] for r in rows)
        note = (f"{ok} of {n} crossings agree (bf16 inside the fp32 estimate's interval for L_seq; within one "
                f"checkpoint for the exact first-token family). Rebuild: `python analyses/eval_precision.py --build` "
                f"(log: eval_precision_log.json, {log.updated}).")  # fmt: skip
        write_table(DOCS / "eval_precision", rows, title="Evaluation in bf16 against fp32", note=note)
        print(note)


if __name__ == "__main__":
    main()
