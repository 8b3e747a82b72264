"""A recipe's runs as recorded in its log, so that its tables outlive the machine that trained them.

Run folders stay on the machine that made them, so a rebuild elsewhere would lose every row it
cannot see. The recipe's log (``docs/reproduction/<sweep>_log.json``, committed) therefore keeps a record per
run: its table row, the config it was trained with and its curves (step, L_seq, Lc, L1 and the
evaluation groups scored at every checkpoint: what Table 5, Table 2's forward clock, the figures
and the sweep page read). ``collect`` merges the run folders here with those records, one row per point:

- a run folder here and no usable record, or a record that got no further: the folder's row
  (``source`` "here");
- otherwise the record (``source`` "recorded"), if it is usable: its config is the point's, or
  the point only raises the step cap (``config.extends``; then a record the old cap stopped reads
  as a partial run, one its own rule stopped stays finished); a record kept before configs were
  (the logs of 2026-12-01 and earlier) is matched by run name, which encodes the swept settings,
  and only while the recipe's preset, stop rule and overrides are the ones the log was last
  written with;
- neither: a "not started" row.

"Further" is finished before running, then more steps. Training is deterministic for a given
config and torch thread count, so a record and a folder of one point agree on every step they
share; where a row came from is kept in ``source`` and ``trained_at`` (the UTC date of its last
checkpoint). Rewriting the log never drops a record: one no point uses stays under its name, or in
``superseded`` where a new run of that name replaces it. A run retrained here for the curves its
record lacks replaces the record and is checked against it (``same_run``, kept in ``retrained``
with both thread counts): equal taus and steps where the counts agree; another count rounds the
reductions differently (docs/reproduction_sweeps.md), so it may differ."""

from __future__ import annotations

import datetime as dt
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from ..checkpoints import Run, RunError, atomic_write_json, read_json
from ..config import RunConfig, extends, same_training
from ..definitions import DEFINITIONS, FAMILIES, NO_CURVES
from ..settle import run_summary
from ..summaries import nan_to_none, num, transition_width
from ..sweeps import Point, Sweep, train_wall

FAMILY_KEYS = {f: DEFINITIONS[f].loss for f in FAMILIES}  # each family's loss: paper L_seq, first_token Lc
CURVE_KEYS = ("L_seq", "Lc", "L1", "groups_scored")  # per checkpoint, with "step": what the builders and docs read
ROW_KEYS = (
    "status",
    "tau_paper",
    "tau_first_token",
    "tau_paper_lo",
    "tau_paper_hi",
    "tau_paper_exact",
    "tau_first_token_lo",
    "tau_first_token_hi",
    "tau_first_token_exact",
    "plateau_paper",
    "plateau_ratio_paper",
    "plateau_first_token",
    "plateau_ratio_first_token",
    "steps",
    "wall_s",
    "dissipation_Q",
    "dissipation_window_start",
    "dissipation_window_end",
)


def log_path(docs: str | Path, sweep: Sweep) -> Path:
    return Path(docs) / f"{sweep.name}_log.json"


def read_log(docs: str | Path, sweep: Sweep) -> dict[str, Any]:
    """The recipe's last log, or {} where there is none (an unreadable one is an error: it holds
    the only record of runs trained elsewhere, and rewriting it would lose them)."""
    path = log_path(docs, sweep)
    if not path.exists():
        return {}
    log = read_json(path)
    if (
        not isinstance(log, dict)
        or not isinstance(log.get("runs", []), list)
        or not isinstance(log.get("records", {}), dict)
    ):
        raise RunError(f"{path}: not a recipe log (expected an object with a list of runs and a table of records)")
    return log


def settings(sweep: Sweep) -> dict[str, Any]:
    """What a recipe's points share (the run name says the rest): preset, stop rule, overrides."""
    return {"preset": sweep.preset, "stop": sweep.stop, "overrides": sweep.overrides}


def _records(log: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The log's records by run name; a log from before records (rows only) gives each started
    row as a record without config or curve."""
    if "records" in log:
        return log["records"]
    return {
        r["run"]: {"row": r, "config": None, "curve": None}
        for r in log.get("runs", [])
        if isinstance(r, dict) and isinstance(r.get("run"), str) and r.get("status") in ("finished", "running")
    }


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and float(v) == float(v) else None
    except (TypeError, ValueError, OverflowError):
        return None


def _rank(row: dict[str, Any]) -> tuple[bool, int]:
    return row.get("status") == "finished", _int(row.get("steps")) or 0


def _for_curves(here: dict[str, Any], seen: dict[str, Any] | None, rec: Any) -> bool:
    """A finished run here retrained for the curves its finished record lacks: it replaces the
    record even where it stopped earlier (another thread count, another stop), and the check
    names the difference."""
    # a run carried on under another stopping rule is the point's as soon as it has the tau
    done = here["row"].get("status") == "finished" or (here.get("carried_on") and here["row"].get("tau_paper"))
    return bool(done) and (seen or {}).get("status") == "finished" and isinstance(rec, dict) and not rec.get("curve")


class _ReadOnce(Run):
    """A run folder whose manifest and config are read at first use and kept: its status,
    records, summary and recorded config all come from those reads."""

    @cached_property
    def _manifest(self) -> dict[str, Any]:
        return super().manifest()

    @cached_property
    def _config(self) -> RunConfig:
        return super().config()

    def manifest(self) -> dict[str, Any]:
        return self._manifest

    def config(self) -> RunConfig:
        return self._config


def _local(path: Path) -> dict[str, Any] | None:
    """The record of the run folder here (row, its own config, curve), None if it has not started
    or cannot be read. One read of the folder: the manifest, config.json and the last checkpoint's
    record file (its training wall time) once each; the row's values are ``sweeps.run_row``'s,
    from the same ``settle.run_summary``."""
    run = _ReadOnce(path)
    try:
        s, cfg, recs = run_summary(run), run.config(), run.records()
    except RunError:  # not started (no manifest), or unreadable: no record of it here
        return None
    fams = s["definitions"]
    row = {"status": s["status"]}
    for fam in fams:
        row |= {
            f"tau_{fam}": fams[fam]["tau"],
            f"tau_{fam}_lo": fams[fam].get("tau_lo"),
            f"tau_{fam}_hi": fams[fam].get("tau_hi"),
            f"tau_{fam}_exact": fams[fam].get("tau_exact"),
            f"plateau_{fam}": fams[fam]["plateau_loss"],
            f"plateau_ratio_{fam}": fams[fam]["plateau_ratio"],
        }
    row |= {"steps": s["last_step"], "wall_s": train_wall(run)} | {
        k: v for k, v in s.items() if k.startswith("dissipation_")
    }
    when = dt.datetime.fromtimestamp((path / "manifest.json").stat().st_mtime, dt.timezone.utc).date().isoformat()
    row = {k: row.get(k) for k in ROW_KEYS} | {"trained_at": when}
    curve = {"step": [r["step"] for r in recs]} | {k: [r["metrics"].get(k) for r in recs] for k in CURVE_KEYS}
    # Table 11 by the original's z-gap (the training batch's): kept beside the row, read by that table only
    original = {k: s.get(f"dissipation_train_{k}") for k in ("Q", "window_start", "window_end", "missing")}
    return {
        "row": row,
        "config": cfg.to_dict(),
        "curve": curve,
        "threads": _threads(run),
        "dissipation_original": original,
    }


def _threads(run: Run) -> int | None:
    """The torch thread count the run's last training call ran with (``command.json``), None
    where it is not recorded: the same config trains bit-identically only on the same count."""
    try:
        cmd = read_json(run.own_file("command.json"))
    except (RunError, OSError, ValueError):
        return None
    return _int(cmd.get("torch_threads")) if isinstance(cmd, dict) else None


def _trained_by(s: Any) -> Any:
    """A recipe's settings without its evaluation overrides (``eval.*``): what decides the
    weights its runs train (the evaluation reads them; a changed live subset is the same run)."""
    if not isinstance(s, dict) or not isinstance(s.get("overrides"), dict):
        return s
    return {**s, "overrides": {k: v for k, v in s["overrides"].items() if not str(k).startswith("eval.")}}


# a recipe -> the sweep that carries its runs on under another stopping rule: the K sweep's points
# stop at 1.2 x the L_seq tau, the lead sweep's (docs/sweeps/lead_sweep.toml) train the same runs on
# past the first-token tau; where the recipe has no run of its own (here, or recorded with its
# curves), the carried-on one is its run
CARRIED_ON = {"paper_k_sweep": "paper_lead_sweep"}


def _carried_on(sweep: Sweep, root: str | Path, p: Point) -> dict[str, Any] | None:
    """The run of ``p``'s training that ``CARRIED_ON`` trains on under another stopping rule, or None."""
    other = CARRIED_ON.get(sweep.name)
    got = _local(Path(root) / other / p.name) if other else None
    if got is None or not same_training(got["config"], p.cfg.to_dict()):
        return None
    return got | {"carried_on": other}


def _as_point_row(rec: dict[str, Any], p: Point, legacy_ok: bool) -> dict[str, Any] | None:
    """The record's row as the point sees it, or None where the record is not the point's run (a
    carried-on record: the point's training under another stopping rule)."""
    row = rec.get("row")
    if not isinstance(row, dict) or row.get("status") not in ("finished", "running"):
        return None
    row = dict(row)
    if rec.get("config") is None:
        return row if legacy_ok else None
    try:
        cfg = RunConfig.from_dict(rec["config"])
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    if cfg.to_dict() == p.cfg.to_dict() or (rec.get("carried_on") and same_training(cfg.to_dict(), p.cfg.to_dict())):
        return row
    if not extends(cfg, p.cfg):
        return None
    raised = p.cfg.train.max_steps > cfg.train.max_steps  # not only another checkpoint spacing
    if raised and row["status"] == "finished" and (_int(row.get("steps")) or 0) >= cfg.train.max_steps:
        row["status"] = "running"  # the old cap stopped it: under the new one it is partial
    return row


def curve_columns(curve: dict[str, list] | None, cfg: RunConfig) -> dict[str, Any]:
    """What a row reads off a run's loss curves: each family's transition width (``t_start``,
    ``t_end``, ``tau_width``, ``summaries.transition_width`` with the run's thresholds) and the
    paper family's final and smallest L_seq (the phase boundary's success rule). None where the
    run's curves are not kept."""
    out: dict[str, Any] = {}
    for fam, key in FAMILY_KEYS.items():
        got = (
            transition_width(curve["step"], curve[key], cfg.task.log_K, cfg.eval.width_hi, cfg.eval.width_lo)
            if curve
            else (None, None, None)
        )
        out |= dict(zip((f"t_start_{fam}", f"t_end_{fam}", f"tau_width_{fam}"), got))
    seq = [v for v in (num(x) for x in (curve or {}).get("L_seq", [])) if v == v]
    out["final_L_seq"] = seq[-1] if seq else None
    out["min_L_seq"] = min(seq) if seq else None
    return out


class Collected(NamedTuple):
    """A recipe's runs as one ``collect`` read them: one row per point, the rows' loss curves by
    run name, and the log's records as they should be written back."""

    rows: list[dict[str, Any]]
    curves: dict[str, dict]
    kept: dict[str, Any]


def collect(sweep: Sweep, root: str | Path, docs: str | Path) -> Collected:
    """One row per point (the swept settings, K, n_b, D, lr, batch size, len_z, both families'
    tau and plateau, steps, status, wall time, ``source``, ``trained_at``), the loss curves of the
    rows' runs by run name, and the log's records as they should be written back (every old
    record kept; the runs here added or replacing their own). Reads each run folder once and the
    log once: a recipe's build collects once and hands the result to its builder, its log and its
    sweep page."""
    log = read_log(docs, sweep)
    old = _records(log)
    legacy_ok = log.get("settings") is None or _trained_by(log["settings"]) == _trained_by(settings(sweep))
    records = dict(old)
    superseded = list(log.get("superseded") or [])
    retrained = dict(log.get("retrained") or {})
    rows, curves = [], {}
    for p in sweep.points:
        here = _local(sweep.folder(root) / p.name)
        rec = old.get(p.name)
        seen = _as_point_row(rec, p, legacy_ok) if isinstance(rec, dict) else None
        if here is None and (seen is None or not rec.get("curve")):  # no run of its own: one carried on
            here = _carried_on(sweep, root, p)
        if here is not None and (mine := _as_point_row(here, p, legacy_ok)) is not None:
            here = here | {"row": mine}  # a folder the old cap stopped reads as partial, as its record would
        if here is not None and (seen is None or _rank(here["row"]) >= _rank(seen) or _for_curves(here, seen, rec)):
            row, curve, source = here["row"], here["curve"], "here"
            pending = retrained.get(p.name)
            if isinstance(rec, dict) and seen is None:
                superseded.append({"run": p.name, **rec})  # another config's run of this name: kept aside
                retrained.pop(p.name, None)  # a check of that run no longer applies
            elif (
                seen is not None and not rec.get("curve") and pending is None and not here.get("carried_on")
            ):  # retrained for its curves
                retrained[p.name] = same_run(seen, here["row"]) | {"threads": [rec.get("threads"), here["threads"]]}
            elif isinstance(pending, dict) and pending.get("equal") is None and "recorded" in pending:
                threads = [(pending.get("threads") or [None])[0], here["threads"]]  # not comparable yet: again
                retrained[p.name] = same_run(pending["recorded"], here["row"]) | {"threads": threads}
            records[p.name] = here
        elif seen is not None:
            row, curve, source = seen, rec.get("curve"), "recorded"
        else:
            row, curve, source = {"status": "not started"}, None, None
        c = p.cfg
        rows.append(
            {
                "run": p.name,
                **p.settings,
                "K": c.task.K,
                "n_b": c.task.n_b,
                "D": c.task.K * c.task.n_b,
                "lr": c.train.lr,
                "batch_size": c.train.batch_size,
                "len_z": c.task.len_z,
                **{k: row.get(k) for k in ROW_KEYS},
                "source": source,
                "carried_on": (here if source == "here" else rec or {}).get("carried_on"),
                "trained_at": row.get("trained_at"),
                "tau_paper": _int(row.get("tau_paper")),
                "tau_first_token": _int(row.get("tau_first_token")),
                "steps": _int(row.get("steps")),
                **curve_columns(curve if source else None, c),
            }
        )
        if source is not None and curve is not None:
            curves[p.name] = curve
    kept = {"settings": settings(sweep), "records": records, "superseded": superseded}
    return Collected(rows, curves, kept | ({"retrained": retrained} if retrained else {}))


def without_curves(collected: Collected) -> list[str]:
    """The runs of ``collected`` that started somewhere but whose curves no one keeps (recorded
    before the logs kept them): the log names them, the tables show them without numbers."""
    return [r["run"] for r in collected.rows if r["source"] and r["run"] not in collected.curves]


IDENTITY_KEYS = ("run", "K", "n_b", "D", "lr", "batch_size", "len_z", "source", "trained_at")


def traceable(collected: Collected, settings_keys: tuple[str, ...] = ()) -> Collected:
    """The runs as the tables show them: a recorded run whose log keeps no curves (recorded
    before the logs kept them) keeps its name and settings, but its measured numbers are left out
    and its status reads ``NO_CURVES``, since nothing committed would recompute them; retraining
    the run (``reproduce NAME --only RUN``) brings them back, checked against the record. The
    log itself keeps every record whole (``write_log`` is given ``collected``)."""
    keep = set(IDENTITY_KEYS) | set(settings_keys)
    blind = set(without_curves(collected))
    rows = [
        {k: (v if k in keep else None) for k, v in r.items()} | {"status": NO_CURVES} if r["run"] in blind else r
        for r in collected.rows
    ]
    return Collected(rows, collected.curves, collected.kept)


EXACT_KEYS = ("steps", "tau_paper", "tau_first_token")
CLOSE_KEYS = ("plateau_paper", "plateau_ratio_paper", "plateau_first_token", "plateau_ratio_first_token")
CLOSE_REL = 1e-4  # evaluation arithmetic (packing, summation order) moves a plateau mean in the 5th digit


def same_run(recorded: dict[str, Any], here: dict[str, Any]) -> dict[str, Any]:
    """Does a run retrained here (its curves were not recorded) equal its recorded row? Training
    is deterministic for a given thread count, so there the steps and both families' taus must be
    equal; the plateau heights,
    means of evaluated losses, within a relative ``CLOSE_REL`` (the evaluation's arithmetic may
    have changed since). Returns ``equal`` and the ``differences`` (key: [recorded, here]). Two
    finished runs that stopped at different steps differ; where either is still running at
    another step than the other, ``equal`` is None and the recorded row is kept (``recorded``)
    for the next build to compare again."""
    diff = {k: [recorded.get(k), here.get(k)] for k in EXACT_KEYS if recorded.get(k) != here.get(k)}
    for k in CLOSE_KEYS:
        a, b = num(recorded.get(k)), num(here.get(k))
        if (a == a or b == b) and not abs(a - b) <= CLOSE_REL * max(abs(a), abs(b)):
            diff[k] = [recorded.get(k), here.get(k)]
    if _int(recorded.get("steps")) != _int(here.get("steps")) and not (
        recorded.get("status") == here.get("status") == "finished"
    ):
        return {"equal": None, "differences": {"steps": diff["steps"]}, "recorded": recorded}
    return {"equal": not diff, "differences": diff}


def write_log(
    docs: str | Path,
    sweep: Sweep,
    root: str | Path,
    extra: dict[str, Any] | None = None,
    collected: Collected | None = None,
) -> dict[str, Any]:
    """Rewrite the recipe's log with its runs as they stand (``collected``, else ``collect`` now),
    keeping the other entries of the last log unless ``extra`` gives them anew (the tables, the
    wall time)."""
    extra = extra or {}
    collected = collected if collected is not None else collect(sweep, root, docs)
    rows, _, kept = collected
    blind = without_curves(collected)
    log = {k: v for k, v in read_log(docs, sweep).items() if k not in ("configs", "curves")}  # drafts' keys
    log.update({"runs": rows, "without_curves": blind, **kept, **extra})
    Path(docs).mkdir(parents=True, exist_ok=True)
    atomic_write_json(log_path(docs, sweep), nan_to_none(log))
    return log
