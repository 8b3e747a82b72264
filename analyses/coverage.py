"""The coverage of the live crossing intervals (docs/reproduction/coverage.md): how Z is chosen.

    python analyses/coverage.py RUN [RUN ...]   # settle each run's default questions, add its rows to the log
    python analyses/coverage.py --build         # rebuild the tables from the committed log alone

The log (docs/reproduction/coverage_log.json) keeps one row per crossing (run, crossing, exact
step, estimate, the interval at each Z); the tables are built from it alone, so they rebuild on a
machine without the runs. A run given again replaces its rows.
"""

from __future__ import annotations

from measurement_log import DOCS, Log, args, run_name

from mi_plateau.checkpoints import Run
from mi_plateau.crossings import Z_INTERVAL
from mi_plateau.outputs import write_table
from mi_plateau.replays.coverage import ZS, coverage_table, distinct_trainings, run_coverage, training_identity


def build(log: Log) -> None:
    rows, dropped = distinct_trainings(log.rows)
    table = coverage_table(rows)
    runs = sorted({r["run"] for r in rows})
    note = (
        f"Crossings: tau at 0.3-0.7 log K and the width's t_start and t_end (0.95 -> 0.05 log K) of {len(runs)} "
        f"runs ({', '.join(runs)}); exact = `mi-plateau settle`'s answer; "
        f"{_same(dropped)}an interval covers when it holds the "
        f"exact step. `coverage_lo`-`coverage_hi`: the share's 95% interval by resampling whole runs (a run's "
        f"crossings share its live subset). `chosen`: the smallest Z with >= 95% coverage; the toolkit's Z_INTERVAL "
        f"is {Z_INTERVAL:g}. "
        f"Rebuild: `python analyses/coverage.py --build` (log: coverage_log.json, {log.updated})."
    )
    write_table(DOCS / "coverage", table, title="Coverage of the live crossing intervals", note=note)
    cols = ["run", "weights", "eval_precision", "crossing", "exact", "estimate"] + [
        f"{e}_{z:g}" for z in ZS for e in ("lo", "hi", "covers")
    ]
    write_table(DOCS / "coverage_rows", log.rows, title="Every crossing behind coverage.md", cols=cols)


def _same(dropped: list[str]) -> str:
    if not dropped:
        return ""
    same = "equal weights at its first checkpoint past step 0"
    return f"left out as the same training as a listed run ({same}): {', '.join(dropped)}; "


def main() -> None:
    a, log = args(__doc__), Log("coverage")
    for path in a.runs:
        run = Run(path)
        ident = training_identity(run)
        rows = [r | {"run": run_name(run)} | ident for r in run_coverage(run)]
        log.replace(run_name(run), rows)
        print(f"{path}: {len(rows)} crossings")
    if log.rows:
        build(log)
        for r in coverage_table(distinct_trainings(log.rows)[0]):
            print(r)


if __name__ == "__main__":
    main()
