"""What a sweep has left to train, and in which order: the run folders of its points (a point
whose config changed since its run started is refused), their status, the units of work a
backend starts (single runs or batches, longest first or as listed) and the waves that let a
run start from another run's weights."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from ..checkpoints import Run, RunError
from ..checkpoints.files import file_sha256
from ..config import RunConfig, config_diff, extends
from .spec import ORDERS, Sweep


def select(sweep: Sweep, only: Sequence[str]) -> list[str]:
    """The points named in ``only``, checked: an unknown name or an empty list is refused in one line."""
    names = [p.name for p in sweep.points]
    unknown = [n for n in only if n not in names]
    if unknown:
        raise RunError(f"{sweep.name}: no point named {unknown[0]!r}; the points are {', '.join(names)}")
    if not only:
        raise RunError(f"{sweep.name}: the list of points to train is empty")
    return list(dict.fromkeys(only))


def status(path: Path) -> str:
    """finished / running (a partial run) / not started, from the run folder's manifest, read
    with every check a reader makes (``Run.manifest``; for a finished run also its config.json and
    its last weights file against their checksum); "damaged" where those checks refuse it,
    so that a sweep retries the run (whose resume then names the damage) instead of counting an
    edited manifest that says "finished" as done."""
    f = Path(path) / "manifest.json"
    if not (f.exists() or f.is_symlink()):
        return "not started"
    try:
        run = Run(path)
        m = run.manifest()
        if m["status"] == "finished":  # what a finished run's readers need is still there and whole
            run.config()  # config.json present, and the config the manifest vouches for
            last = m["checkpoints"][-1]
            if last.get("sha256") and file_sha256(run.inside(last["weights"])) != last["sha256"]:
                return "damaged"
        return m["status"]
    except (RunError, OSError):
        return "damaged"


def plan(
    sweep: Sweep, root: str | Path = "checkpoints", names: Collection[str] | None = None
) -> list[tuple[Path, RunConfig]]:
    """The run folders of the sweep's points (of those named ``names`` only, where given, in the
    sweep's order); refuses (before any work) a point whose run folder holds a different config,
    naming the settings that differ. A sweep file that only raises ``max_steps`` (``config.extends``)
    continues its runs, as ``train --resume`` does."""
    folder = sweep.folder(root)
    out, bad = [], []
    for p in sweep.points:
        if names is not None and p.name not in names:
            continue
        path = folder / p.name
        if (path / "config.json").exists():
            stored = Run(path).config()
            if stored.to_dict() != p.cfg.to_dict() and not extends(stored, p.cfg):
                bad.append(f"{p.name}: {config_diff(stored.to_dict(), p.cfg.to_dict())}")
        out.append((path, p.cfg))
    if bad:
        raise RunError(
            f"{folder}: points whose config changed since their runs started (move the runs away or restore "
            f"the sweep file): {' | '.join(bad)}"
        )
    return out


def _raised_cap(path: Path, cfg: RunConfig) -> bool:
    """A finished run whose point now only has a larger ``max_steps``: the trainer continues it
    if the old cap stopped it (one its own rule stopped it leaves as it is)."""
    try:
        stored = Run(path).config()
    except RunError:
        return False
    return extends(stored, cfg) and cfg.train.max_steps > stored.train.max_steps


def work_units(
    runs: Sequence[tuple[Path, RunConfig]], batch_runs: int, order: str = "longest_first"
) -> list[list[tuple[Path, RunConfig]]]:
    """The unfinished runs as units of work: single runs, or with ``batch_runs`` > 1 batches of up
    to that many batchable runs (``train.batched.group_batches``) trained in one process as one stacked
    model. ``order`` "longest_first" starts the largest D = K n_b first (tau grows with D, so the
    last to start is a short one: the shortest sweep); "listed" keeps the given order (a recipe
    listed by value gets its most wanted runs first when it cannot finish in one go)."""
    todo = [(Path(p), c) for p, c in runs if status(p) != "finished" or _raised_cap(Path(p), c)]
    if order == "longest_first":
        todo.sort(key=lambda r: -r[1].task.K * r[1].task.n_b)  # stable: ties keep the listed order
    elif order != "listed":
        raise RunError(f"order={order!r}: must be one of {', '.join(ORDERS)}")
    if batch_runs < 1:
        raise RunError(f"batch_runs={batch_runs}: must be at least 1")
    if batch_runs == 1:
        return [[r] for r in todo]
    from ..train.batched import group_batches  # here, not at the top: torch (sweeps import without it)

    return group_batches(todo, batch_runs)


def waves(runs: Sequence[tuple[Path, RunConfig]]) -> list[list[tuple[Path, RunConfig]]]:
    """The runs in the order their starts allow: first those that start from their own init, then
    those that start from another run's weights (``train.init_from``), which has finished by
    then if it is in the sweep. Empty waves are left out."""
    own = [r for r in runs if not r[1].train.init_from]
    borrowed = [r for r in runs if r[1].train.init_from]
    return [w for w in (own, borrowed) if w]
