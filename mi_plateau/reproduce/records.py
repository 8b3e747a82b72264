"""A recipe's runs as recorded in its log, so that its tables outlive the machine that trained them.

Run folders (weights and all) stay on the machine that made them; a paper-scale recipe takes
longer than one machine lives here, so a rebuild elsewhere would lose every row it cannot see.
The recipe's log (``docs/reproduction/<sweep>_log.json``, committed) therefore keeps, per run,
its table row, its resolved config and its loss curves (step, L_seq, Lc at every checkpoint: all
that Table 5, the figures and the sweep page read). ``collect`` merges the run folders here with
those records, one row per point:

- a run folder here and no record, or a record that got no further: the folder's row
  (``source`` "here");
- otherwise the record (``source`` "recorded"), if its config is the point's (records written
  before configs were kept are matched by run name, which encodes the swept settings); a record
  whose config differs from the point's is ignored;
- neither: a "not started" row.

"Further" is finished before running, then more steps. Training is deterministic (same config
and thread count: bit-identical), so a record and a folder of the same point agree on every step
they share; which one a row came from is a matter of provenance, which ``source`` and
``recorded_at`` (the UTC date the row was last read from a run folder) keep.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, read_json
from ..config import RunConfig, extends
from ..sweeps import Point, Sweep, run_row, status

CURVE_KEYS = ("L_seq", "Lc")  # per checkpoint; with "step", what the builders read of a run's records


def log_path(docs: str | Path, sweep: Sweep) -> Path:
    return Path(docs) / f"{sweep.name}_log.json"


def read_log(docs: str | Path, sweep: Sweep) -> dict[str, Any]:
    """The recipe's last log, or {} where there is none (an unreadable one is an error: it holds
    the only record of runs trained elsewhere, and rewriting it would lose them)."""
    path = log_path(docs, sweep)
    if not path.exists():
        return {}
    log = read_json(path)
    if not isinstance(log, dict) or not isinstance(log.get("runs", []), list):
        raise RunError(f"{path}: not a recipe log (expected an object with a list of runs)")
    return log


def _rank(row: dict[str, Any]) -> tuple[bool, int]:
    return row.get("status") == "finished", int(row.get("steps") or 0)


def _local(p: Point, path: Path) -> tuple[dict[str, Any], dict[str, list] | None]:
    """The row and curves of the point's run folder here (a "not started" row if it has none)."""
    got = run_row(path)
    row = {k: got.get(k) for k in ("status", "tau_paper", "tau_first_token", "plateau_paper", "plateau_ratio_paper",
                                    "plateau_first_token", "plateau_ratio_first_token", "steps", "wall_s")}
    if got["status"] not in ("finished", "running") or "error" in got:
        return row | {"source": None, "recorded_at": None}, None
    recs = Run(path).records()
    curve = {"step": [r["step"] for r in recs]} | {k: [r["metrics"].get(k) for r in recs] for k in CURVE_KEYS}
    return row | {"source": "here", "recorded_at": dt.datetime.now(dt.timezone.utc).date().isoformat()}, curve


def _recorded(p: Point, log: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list] | None] | None:
    """The point's usable record in the log: a started run whose config is the point's, or one
    the point only continues with a larger step cap (then it is a partial run). None otherwise."""
    row = next((r for r in log.get("runs", []) if isinstance(r, dict) and r.get("run") == p.name), None)
    if row is None or row.get("status") not in ("finished", "running"):
        return None
    row = dict(row)
    stored = (log.get("configs") or {}).get(p.name)
    if stored is not None:
        try:
            cfg = RunConfig.from_dict(stored)
        except (TypeError, ValueError, KeyError):
            return None
        if cfg.to_dict() != p.cfg.to_dict():
            if not extends(cfg, p.cfg):
                return None
            row["status"] = "running"  # stopped at the old cap: the point continues it
    row["source"] = "recorded"
    row.setdefault("recorded_at", None)
    return row, (log.get("curves") or {}).get(p.name)


def collect(sweep: Sweep, root: str | Path, docs: str | Path) -> tuple[list[dict[str, Any]], dict[str, dict], dict[str, dict]]:
    """One row per point (the swept settings, K, n_b, D, lr, batch size, len_z, both families'
    tau and plateau, steps, status, wall time, ``source``, ``recorded_at``), the loss curves of
    the started runs by run name, and the configs known to be theirs by run name (what the log
    keeps)."""
    log = read_log(docs, sweep)
    rows, curves, configs = [], {}, {}
    for p in sweep.points:
        path = sweep.folder(root) / p.name
        row, curve = _local(p, path)
        rec = _recorded(p, log) if status(path) != "finished" else None
        if rec is not None and (row["source"] is None or _rank(rec[0]) > _rank(row)):
            row, curve = {k: rec[0].get(k) for k in row}, rec[1]
        c = p.cfg
        rows.append({"run": p.name, **p.settings, "K": c.task.K, "n_b": c.task.n_b, "D": c.task.K * c.task.n_b,
                     "lr": c.train.lr, "batch_size": c.train.batch_size, "len_z": c.task.len_z, **row,
                     "tau_paper": _int(row["tau_paper"]), "tau_first_token": _int(row["tau_first_token"]),
                     "steps": _int(row["steps"])})
        if row["source"] == "here" or (row["source"] == "recorded" and p.name in (log.get("configs") or {})):
            configs[p.name] = c.to_dict()  # known to be the run's config (a record without one stays without)
        if row["source"] is not None and curve is not None:
            curves[p.name] = curve
    return rows, curves, configs


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and float(v) == float(v) else None
    except (TypeError, ValueError):
        return None
