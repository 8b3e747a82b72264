"""The coverage of the live crossing intervals (docs/reproduction/coverage.md): how Z is chosen.

    python analyses/coverage.py RUN [RUN ...]   # settle each run's default questions, add its rows to the log
    python analyses/coverage.py --build         # rebuild the tables from the committed log alone

The log (docs/reproduction/coverage_log.json) keeps one row per crossing (run, crossing, exact
step, estimate, the interval at each Z); the tables are built from it alone, so they rebuild on a
machine without the runs. A run given again replaces its rows.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from mi_plateau.checkpoints import Run, atomic_write_text
from mi_plateau.crossings import Z_INTERVAL
from mi_plateau.replays.coverage import ZS, coverage_table, run_coverage
from mi_plateau.tabular import write_table

# MI_PLATEAU_DOCS: another folder (the rebuild test writes the tables beside a copy of the log)
DOCS = Path(os.environ.get("MI_PLATEAU_DOCS") or Path(__file__).resolve().parent.parent / "docs" / "reproduction")
LOG = DOCS / "coverage_log.json"


def build(log: dict) -> None:
    rows = log["rows"]
    table = coverage_table(rows)
    runs = sorted({r["run"] for r in rows})
    note = (
        f"Crossings: tau at 0.3-0.7 log K and the width's t_start and t_end (0.95 -> 0.05 log K) of {len(runs)} "
        f"runs ({', '.join(runs)}); exact = `mi-plateau settle`'s answer; an interval covers when it holds the "
        f"exact step. `chosen`: the smallest Z with >= 95% coverage; the toolkit's Z_INTERVAL is {Z_INTERVAL:g}. "
        f"Rebuild: `python analyses/coverage.py --build` (log: coverage_log.json, {log['updated']})."
    )
    write_table(DOCS / "coverage", table, title="Coverage of the live crossing intervals", note=note)
    cols = ["run", "crossing", "exact", "estimate"] + [f"{e}_{z:g}" for z in ZS for e in ("lo", "hi", "covers")]
    write_table(DOCS / "coverage_rows", rows, title="Every crossing behind coverage.md", cols=cols)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*")
    p.add_argument("--build", action="store_true", help="only rebuild the tables from the log")
    a = p.parse_args()
    log = json.loads(LOG.read_text()) if LOG.exists() else {"rows": [], "updated": None}
    for path in a.runs:
        run = Run(path)
        rows = run_coverage(run)
        log["rows"] = [r for r in log["rows"] if r["run"] != run.path.name] + rows
        log["updated"] = time.strftime("%Y-%m-%d")
        atomic_write_text(LOG, json.dumps(log, indent=1) + "\n")
        print(f"{path}: {len(rows)} crossings")
    if log["rows"]:
        build(log)
        for r in coverage_table(log["rows"]):
            print(r)


if __name__ == "__main__":
    main()
