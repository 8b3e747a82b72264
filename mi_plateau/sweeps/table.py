"""A sweep's table, read from its folder: one row per point, from its run folder's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, read_json
from .schedule import status


def sweep_table(folder: str | Path):
    """One row per run of the sweep in ``folder`` (its ``sweep.json``): the swept settings, both
    families' tau (steps and examples), plateau heights, converged, steps, training wall time,
    status and error. A pandas DataFrame."""
    from ..frames import frame

    folder = Path(folder)
    try:
        spec = read_json(folder / "sweep.json")
        if not isinstance(spec, dict) or not isinstance(spec.get("points"), list):
            raise RunError(f"{folder / 'sweep.json'}: not a resolved sweep")
    except RunError as e:
        raise RunError(f"{folder}: not a sweep folder ({e})") from None
    try:
        errors = read_json(folder / "errors.json")
    except RunError:
        errors = {}
    errors = errors if isinstance(errors, dict) else {}
    rows = []
    for p in spec["points"]:
        row: dict[str, Any] = {"run": p["name"], **p["settings"], **run_row(folder / p["name"])}
        row["error"] = row.get("error") or errors.get(p["name"])
        rows.append(row)
    return frame(rows)


def run_row(path: Path) -> dict[str, Any]:
    """A run folder's line in a sweep table: status, both families' tau (steps and examples),
    plateau heights, converged, steps and training wall time (only the status, for a run that
    has not started; ``error`` where the folder cannot be read)."""
    row: dict[str, Any] = {"status": status(path)}
    if row["status"] in ("finished", "running"):
        try:
            run = Run(path)
            s = run.summary()
            for fam, v in s["definitions"].items():
                row[f"tau_{fam}"] = v["tau"]
                row[f"tau_width_{fam}"] = v["tau_width"]
                row[f"tau_examples_{fam}"] = v["tau_examples"]
                row[f"plateau_{fam}"] = v["plateau_loss"]
                row[f"plateau_ratio_{fam}"] = v["plateau_ratio"]
            row.update(
                {
                    "converged": s["converged"],
                    "steps": s["last_step"],
                    "wall_s": train_wall(run),
                    "dissipation_Q": s.get("dissipation_Q"),
                }
            )
        except RunError as e:
            row["error"] = str(e)
    return row


def train_wall(run: Run) -> float | None:
    """The run's training wall time in seconds (across resumes), from its last checkpoint record."""
    try:
        last = run.manifest()["checkpoints"][-1]
        return float(read_json(run.inside(last["record_file"])).get("wall_s"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RunError):
        return None


def run_costs(run: Run) -> dict[str, float | int | None]:
    """Where a run's wall time went, from its checkpoint records and its settlement cache:
    ``run_wall_s`` (the training run's wall time across resumes, every live evaluation in it),
    ``live_eval_s`` (the evaluations of every checkpoint), ``eval_share`` (``live_eval_s`` over
    ``run_wall_s``: what evaluation costs a run), ``settle_s`` (the full scorings ``mi-plateau
    settle`` made on request, ``settled.json``), ``wall_s`` (both), ``eval_s`` (live and
    settlement) and ``checkpoints``. The
    evaluation numbers are None where a record lacks ``eval_s`` (runs written before it was
    recorded). A run of the batched trainer shares its process's wall time with the other runs
    in it, so its share reads low."""
    out: dict[str, float | int | None] = {
        "wall_s": None,
        "run_wall_s": None,
        "live_eval_s": None,
        "settle_s": None,
        "eval_s": None,
        "eval_share": None,
        "checkpoints": 0,
    }
    try:
        files = run.record_files()
        out["checkpoints"] = len(files)
        last_wall = float(files[-1]["wall_s"])  # training and the evaluations before the last checkpoint
        out["wall_s"] = last_wall
        ev = [float(f["eval_s"]) for f in files]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RunError):
        return out
    settle_s = 0.0
    try:
        path = run.own_file("settled.json")
        if path.is_file():
            settle_s = float(read_json(path).get("settle_s") or 0.0)
    except (ValueError, TypeError, AttributeError, RunError):
        settle_s = 0.0
    run_wall = last_wall + ev[-1]
    out.update(
        wall_s=run_wall + settle_s,
        run_wall_s=run_wall,
        live_eval_s=sum(ev),
        settle_s=settle_s,
        eval_s=sum(ev) + settle_s,
        eval_share=sum(ev) / run_wall if run_wall > 0 else None,
    )
    return out
