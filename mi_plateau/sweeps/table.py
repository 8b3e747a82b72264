"""A sweep's table, read from its folder: one row per point, from its run folder's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, manifest_digest, read_json
from ..config import ConfigError, RunConfig, config_diff, extends
from ..frames import frame
from ..settle import run_summary
from .schedule import status
from .spec import folder_name


def sweep_table(folder: str | Path):
    """One row per run of the sweep in ``folder`` (its ``sweep.json``): the swept settings, both
    families' tau (steps and examples), plateau heights, converged, steps, training wall time,
    status and error. A pandas DataFrame."""
    folder = Path(folder)
    spec = read_sweep_json(folder)
    try:
        errors = read_json(folder / "errors.json")
    except RunError:
        errors = {}
    errors = errors if isinstance(errors, dict) else {}
    rows = []
    for p in spec["points"]:
        row: dict[str, Any] = {"run": p["name"], **p["settings"], **run_row(folder / p["name"])}
        row["error"] = row.get("error") or _config_mismatch(folder / p["name"], p) or errors.get(p["name"])
        rows.append(row)
    return frame(rows)


def read_sweep_json(folder: Path) -> dict[str, Any]:
    """The resolved sweep of ``folder``, checked: its seal (the digest the runner wrote; a file
    edited since is refused, as a run's manifest is) and every point's name (one folder inside
    the sweep's, ``spec.FOLDER_NAME``). A file written before sweeps were sealed has no digest."""
    path = folder / "sweep.json"
    try:
        spec = read_json(path)
        if not isinstance(spec, dict) or not isinstance(spec.get("points"), list):
            raise RunError(f"{path}: not a resolved sweep")
    except RunError as e:
        raise RunError(f"{folder}: not a sweep folder ({e})") from None
    if "digest" in spec and spec["digest"] != manifest_digest(spec):
        raise RunError(f"{path}: its content does not match its digest: edited or damaged after it was written")
    for i, p in enumerate(spec["points"]):
        if not isinstance(p, dict) or not isinstance(p.get("settings"), dict):
            raise RunError(f"{path}: points[{i}] is not a resolved point")
        try:
            folder_name(p.get("name"), f"points[{i}].name", "the point")
        except ConfigError as e:
            raise RunError(f"{path}: {e}") from None
    return spec


def _config_mismatch(path: Path, point: dict[str, Any]) -> str | None:
    """Where the run folder's config is not the one the sweep records for the point (a swapped or
    edited entry): one line naming the settings that differ; None where they agree or the run
    has not started."""
    if not (path / "config.json").exists() or not isinstance(point.get("config"), dict):
        return None
    try:
        stored, want = Run(path).config(), RunConfig.from_dict(dict(point["config"]))
    except (RunError, ConfigError, TypeError, ValueError, AttributeError):
        return None  # the run's own error is in its row already
    if stored.to_dict() == want.to_dict() or extends(stored, want):
        return None
    return f"the sweep records another config for this run ({config_diff(stored.to_dict(), want.to_dict())})"


def run_row(path: Path) -> dict[str, Any]:
    """A run folder's line in a sweep table: status, both families' tau (steps and examples),
    plateau heights, converged, steps and training wall time (only the status, for a run that
    has not started; ``error`` where the folder cannot be read)."""
    row: dict[str, Any] = {"status": status(path)}
    if row["status"] in ("finished", "running"):
        try:
            run = Run(path)
            s = run_summary(run)
            for fam, v in s["definitions"].items():
                row[f"tau_{fam}"] = v["tau"]
                # exact where settled (the first-token family always), else the live estimate's, with its interval
                row[f"tau_{fam}_exact"] = v["tau_exact"]
                row[f"tau_{fam}_lo"], row[f"tau_{fam}_hi"] = v["tau_lo"], v["tau_hi"]
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
                    "diverged_step": (s.get("diverged") or {}).get("step"),
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
