"""The one loop of a recipe that passes over runs (``hessian``, ``figure3``, ``noise_estimator``):
a pass per run, its result (the run's entry) kept in the recipe's log, and the tables and
figures built from the log alone.

The log (``<docs>/<recipe>_log.json``, or the name the recipe gives) holds one entry per run
under ``runs``. A run computed here replaces its logged entry the moment it is done, so a
rebuild on another machine, without the run folders, writes the same tables from the log; a
pass that costs hours is not paid again for a run whose entry is current. Every
read-merge-write of the log holds the docs folder's lock (``checkpoints.RunLock``, waiting for
it), so processes sharing a log keep each other's entries.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..checkpoints import RunError, RunLock, atomic_write_json, read_json
from ..checkpoints.files import provenance
from ..summaries import nan_to_none
from ..sweeps import status
from .registry import DryRun
from .writer import Built, write_built

# a run's pass: its logged entry (None: none) -> its new entry, or None where the logged one stands
Pass = Callable[[Any], "dict[str, Any] | None"]


def started(folder: Path) -> list[Path]:
    """The run folders under ``folder`` that have started (finished or running), by name."""
    found = sorted(folder.iterdir()) if folder.is_dir() else []
    return [p for p in found if status(p) in ("finished", "running")]


def runs_dry(runs: Iterable[Path]) -> DryRun:
    """A pass recipe's dry run: the runs it reads and the state of each."""
    return DryRun([{"run": str(p), "status": status(p)} for p in runs])


def each_run(recipe: str, runs: Iterable[Path], entry: Callable[[Path], dict], doing: str, progress: bool):
    """(name, pass) per run of ``runs``, the pass computing ``entry(run folder)`` every time (the
    passes cache their own work under ``analyses/``), saying ``doing`` on standard error."""

    def fresh(p: Path) -> Pass:
        def compute(_logged: Any) -> dict:
            if progress:
                print(f"{recipe} {p.name}: {doing}", file=sys.stderr)
            return entry(p)

        return compute

    return ((p.name, fresh(p)) for p in runs)


def read_log(path: Path, recipe: str, sound: Callable[[Any], bool] = lambda e: True) -> dict[str, Any]:
    """The recipe's log, {} where there is none; one that is not an object with a table of runs,
    each ``sound``, is refused (it may hold the only copy of entries computed elsewhere)."""
    log = read_json(path) if path.exists() else {}
    runs = log.get("runs", {}) if isinstance(log, dict) else None
    if not isinstance(runs, dict) or not all(sound(e) for e in runs.values()):
        raise RunError(f"{path}: not the {recipe} recipe's log (expected an object with a table of runs)")
    return log


def run_logged(
    recipe: str,
    docs: str | Path,
    passes: Iterable[tuple[str, Pass]],
    build: Callable[[dict[str, Any]], Built],
    missing: str,
    static: bool | None,
    *,
    log: str | None = None,
    sound: Callable[[Any], bool] = lambda e: True,
    extra: Callable[[dict[str, Any]], dict[str, Any]] = lambda entries: {},
) -> dict[str, Any]:
    """Run each pass of ``passes`` ((run name, pass), read one by one: a run is looked at when its
    turn comes) on the run's logged entry; each new entry goes into the log at once. Then
    ``build`` the tables and figures from every entry the log holds, write them (``static`` as
    in ``writer.write_built``) and the log: the entries, ``extra(entries)`` beside them, the
    tables, a provenance stamp. ``log``: the log's file name (default ``<recipe>_log.json``);
    ``sound``: what a logged entry must be; ``missing``: the one-line error where no entry is
    logged or computed ("{log}" in it: the log's path). Returns the log without the entries."""
    docs = Path(docs)
    path = docs / (log or f"{recipe}_log.json")
    logged = read_log(path, recipe, sound).get("runs") or {}  # an unsound log is refused before any work
    lock = RunLock(docs, what="recipe log", wait=True)
    for name, compute in passes:
        entry = compute(logged.get(name))
        if entry is not None:
            with lock:  # another process may have logged runs since: keep them
                now = read_log(path, recipe, sound)
                runs = {**(now.get("runs") or {}), name: entry}
                atomic_write_json(path, nan_to_none({**now, "recipe": recipe, "runs": runs}))
    entries = read_log(path, recipe, sound).get("runs") or {}
    if not entries:
        raise RunError(missing.replace("{log}", str(path)))
    built = build(entries)  # a build that refuses leaves the docs folder untouched
    with lock:
        now = read_log(path, recipe, sound)["runs"]
        if now != entries:  # another process logged runs meanwhile: build with them
            entries, built = now, build(now)
        written, note = write_built(docs, built, static)
        out = {"recipe": recipe, **extra(entries), "runs": entries, "tables": built.rows()}
        out |= provenance(f"mi-plateau reproduce {recipe}", [])
        atomic_write_json(path, nan_to_none({**out, "written": [str(w) for w in [*written, path]]}))
    short = {k: v for k, v in out.items() if k != "runs"}
    return nan_to_none({**short, "written": [str(w) for w in written], "static_note": note})
