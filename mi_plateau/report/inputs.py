"""What a report reads besides the runs' checkpoints: each run's command line (``command.json``),
the learning-coefficient curves recorded by ``estimators.llc``, and the passes' tidy tables with the
outputs made from them (``gather``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, read_json
from ..config import RunOptions
from ..passes.analyze import analyze_run, figure3_paper, run_outputs
from ..settle import run_summary


def read_command(run: Run) -> dict[str, Any]:
    """The run's ``command.json`` as the page shows it: {} where there is none, and one "error"
    entry where it is not a JSON object or is a symbolic link (never followed out of the folder)."""
    cmd_path = run.path / "command.json"
    try:
        cmd_path = run.own_file("command.json")
        command = read_json(cmd_path) if cmd_path.exists() else {}
    except RunError as e:
        return {"error": " ".join(str(e).split()) if "symbolic link" in str(e) else f"{cmd_path} is not readable JSON"}
    return command if isinstance(command, dict) else {"error": f"{cmd_path} is not a JSON object"}


def gather(run: Run, analyses: Path, pc, progress: bool, options: RunOptions | None = None) -> dict[str, Any]:
    """What the page shows of one run: its config, summary, command line, the passes' tables
    (computed on ``options.device``, or read from their cache under ``<analyses>/<run name>/passes/``)
    and the outputs made from them (Tables 6 and 9, routing, Figure 3 panels)."""
    cfg = run.config()
    s = run_summary(run)
    tables = analyze_run(run, analyses / run.name, pc, progress=progress, options=options)
    out = run_outputs(run.name, cfg, s, tables, pc)  # the tables read the pass settings the passes ran with
    return {
        "run": run,
        "name": run.name,
        "cfg": cfg,
        "summary": s,
        "tables": tables,
        "command": read_command(run),
        "figure3_paper": figure3_paper(run, tables["checkpoint"], pc.delta),
        **out,
    }


def read_llc(paths: Sequence[str | os.PathLike], runs: Sequence[Run]) -> dict[str, list[dict]]:
    """{run name: LLC rows} from recorded curves (``estimators.llc``'s JSON: "run" and "rows" with
    step, llc_mean, llc_std); one line naming the file where one is unreadable, has no rows, or
    names none of ``runs``."""
    names = {r.name for r in runs}
    out: dict[str, list[dict]] = {}
    for p in paths:
        doc = read_json(Path(p))
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and "step" in r for r in rows):
            raise RunError(f"{p}: not an LLC curve (expected an object with rows of step, llc_mean, llc_std)")
        name = Path(str(doc.get("run", ""))).name
        if name not in names:
            raise RunError(
                f"{p}: an LLC curve of run {name!r}, which is not in this report ({', '.join(sorted(names))})"
            )
        out[name] = rows
    return out
