"""Tables 6 and 9 on more seeds (docs/reproduction/seeds_tables.md): each run's collective
transition and head ablation, as ``mi-plateau analyze`` computes them, one row per table row.

    python analyses/seeds_tables.py RUN [RUN ...]   # analyse each run, add its rows to the log
    python analyses/seeds_tables.py --build         # rebuild the table from the committed log alone

``reproduce core`` holds these tables for its seed-0 runs (tables.json); this log adds other
seeds of the same configuration (the paper preset; data seeds, the paper's fixed init), so that
the scorecard's Table 6 and Table 9 rows have n runs and a seed spread. The per-head passes run at
the tables' checkpoints only (``--max-checkpoints 1``: Pre, Mid and Post, the four Table 6
fractions of tau, and the last checkpoint). The passes' cache goes under ``analyses/<run>/``
(``MI_PLATEAU_ANALYSES`` names another folder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from measurement_log import DOCS, Log, args

from mi_plateau.api import analyze
from mi_plateau.checkpoints import Run
from mi_plateau.config import AnalysisConfig
from mi_plateau.outputs import write_table

KEEP6 = ("K", "definition", "tau", "target", "step", "frac_tau", "ge80_pct", "eq100_pct", "mean_acc")
KEEP9 = ("K", "definition", "phase", "step", "frac_tau", "rank", "head", "dL", "dLc", "dL1")


def rows(path: str) -> list[dict]:
    run = Run(path)
    cfg = run.config()
    out = os.environ.get("MI_PLATEAU_ANALYSES", "analyses")  # the passes' cache: a rerun reads it
    got = analyze([run], out, progress=False, pass_config=AnalysisConfig(max_checkpoints=1))["runs"][run.name]
    folder = Path(got["folder"])
    t6 = json.loads((folder / "table6.json").read_text())
    t9 = json.loads((folder / "table9.json").read_text())
    head = {"run": run.name, "seed": cfg.task.data_seed, "precision": cfg.train.precision}
    return [head | {"table": "table6"} | {k: r.get(k) for k in KEEP6} for r in t6] + [
        head | {"table": "table9"} | {k: r.get(k) for k in KEEP9} for r in t9
    ]


def main() -> None:
    a, log = args(__doc__), Log("seeds_tables")
    for path in a.runs:
        log.replace(Run(path).name, rows(path))
    note = (
        "Rows as `mi-plateau analyze RUN --max-checkpoints 1` writes them (table6.json, table9.json). Rebuild: "
        f"`python analyses/seeds_tables.py --build` (log: seeds_tables_log.json, {log.updated})."
    )
    key = lambda r: (r["table"], r["K"], r["run"], r.get("definition") or "", str(r.get("target") or r.get("phase")))
    write_table(DOCS / "seeds_tables", sorted(log.rows, key=key), title="Tables 6 and 9 on more seeds", note=note)
    print(f"{len(log.rows)} rows from {len({r['run'] for r in log.rows})} runs")


if __name__ == "__main__":
    main()
