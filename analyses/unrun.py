"""What the scorecard's unrun and one-seed rows would cost (docs/reproduction/unrun.md): each
recipe's dry run on this machine, the runs it has not finished here or in its log, and their price.

    python analyses/unrun.py price    # run every dry run below, replace the log's rows
    python analyses/unrun.py --build  # rebuild the table from the committed log alone

Each row: the scorecard rows it would fill, the command, its runs neither finished here nor
recorded finished in its log (and every run not here), and the core-minutes the dry run prices them
at (one thread per run; the recipe's own estimate from its measured or recorded runs:
`mi-plateau reproduce RECIPE --dry-run --skip-recorded`), and the CPU that priced it.
"""

from __future__ import annotations

import sys

from measurement_log import DOCS, Log, args

from mi_plateau.bench.timing import machine
from mi_plateau.outputs import write_table
from mi_plateau.reproduce.registry import recipe
from mi_plateau.sweeps import RunOptions

# recipe -> (the scorecard rows it fills, its options beyond the defaults)
PRICED = {
    "phase_boundary": ("Table 4's five other conditions and Table 8 (eta* and its brackets)", {}),
    "batch_size": ("Table 1 and Figure 2(a) at B = 64 to 512, K = 20, clipped as the original", {}),
    "batch_size_noclip": ("Table 1 at K = 20 unclipped (our variant), with curves", {}),
    "fixed_d": ("Figure 5's D = 10,000 points, recorded on an earlier day (K = 20 there without its curves)", {}),
    "k_sweep": ("Table 3's seeds at K = 5, 10, 20 and K = 25, 30 with curves", {}),
}


def priced(name: str, skip_recorded: bool) -> tuple[int, int, int]:
    """(runs left, their core-minutes, their steps) by the recipe's dry run here."""
    dry = recipe(name).dry_run(RunOptions(progress=False, skip_recorded=skip_recorded, **PRICED[name][1]))
    todo = [r for r in dry.rows if (r.get("est_core_min") or 0) > 0]
    steps = sum(int(r.get("expected_steps") or 0) - int(r.get("steps_done") or 0) for r in todo)
    return len(todo), round(sum(r["est_core_min"] for r in todo)), steps


def row(name: str) -> dict:
    n_here, min_here, _ = priced(name, False)  # every run not finished here (recorded ones retrained for curves)
    n_new, min_new, steps_new = priced(name, True)  # only the runs its log does not hold finished either
    return {
        "run": name,
        "fills": PRICED[name][0],
        "command": f"mi-plateau reproduce {name}",
        "not_run_anywhere": n_new,
        "core_min_not_run_anywhere": min_new,
        "steps_not_run_anywhere": steps_new,
        "not_here": n_here,
        "core_min_not_here": min_here,
        "cpu": machine()["cpu"],
    }


def main() -> None:
    a = args(__doc__)
    log = Log("unrun")
    if not a.build:
        if a.runs != ["price"]:
            sys.exit("usage: python analyses/unrun.py price | --build")
        for name in PRICED:
            log.replace(name, [row(name)])
    note = (
        "Core-minutes as each recipe's dry run prices its runs on the CPU named (one thread per run; its probe step "
        "timed while training runs shared the cores, so high): not_run_anywhere, the runs neither here nor recorded "
        "as finished in the recipe's log; not_here, every run not finished here (the recorded ones retrained, for "
        "their curves). "
        f"Rebuild: `python analyses/unrun.py --build` (log: unrun_log.json, {log.updated}); reprice: "
        "`python analyses/unrun.py price`."
    )
    write_table(DOCS / "unrun", log.rows, title="What the scorecard's unrun rows would cost", note=note)
    for r in log.rows:
        print(r)


if __name__ == "__main__":
    main()
