"""Which ``RunOptions`` each command reads, declared once, and the one check that refuses any
other: a flag that a command would ignore is an error, in one line, before any work.

``USES``: command -> mode -> the options it reads there. A mode is how the command was asked to
run: "" plainly (a recipe trains, then builds; a sweep trains on the local pool), "--no-train"
(a recipe builds from what exists), "--dry-run" (lists what would run), "--backend ray" (with
"--address": on a Ray cluster), "status" (``sweep status FOLDER``). The mode's flag is itself an
option of it (``train`` for --no-train, ``dry_run``, ``backend``)."""

from __future__ import annotations

from ..config.options import FLAGS, RunOptions
from ..reproduce.registry import RECIPES

SWEEP_RECIPES_KIND = "the sweep recipes"  # every recipe of reproduce.registry with a builder


def reproduce_kind(recipe: str) -> str:
    """The entry of ``USES`` that declares what ``reproduce RECIPE`` reads."""
    return SWEEP_RECIPES_KIND if RECIPES[recipe].is_sweep else f"reproduce {recipe}"


USES: dict[str, dict[str, str]] = {
    **{reproduce_kind(name): r.uses for name, r in RECIPES.items()},  # each recipe's, from its declaration
    "sweep": {
        "": "device threads precision jobs batch_runs progress root",
        "--backend ray": "backend device threads precision jobs batch_runs progress root",
        "--backend ray --address": "backend address device threads precision batch_runs progress root",  # its CPUs
        "--dry-run": "dry_run device precision batch_runs root",
        "status": "",
    },
}


def mode_of(command: str, options: RunOptions) -> str:
    """The mode of ``command`` that ``options`` ask for (the first that applies, in this order:
    --dry-run, --no-train, --backend ray [--address]; else "")."""
    modes = USES[command]
    if options.dry_run and "--dry-run" in modes:
        return "--dry-run"
    if not options.train and "--no-train" in modes:
        return "--no-train"
    if options.backend == "ray" and "--backend ray" in modes:
        return "--backend ray --address" if options.address else "--backend ray"
    return ""


def applies_to(name: str) -> str:
    """Where the option ``name`` applies, in words: each command that reads it, with the modes
    in which it does where that is not all of them."""
    out = []
    for command, modes in USES.items():
        where = [m for m, names in modes.items() if name in names.split()]
        if where:
            every = len(where) == sum(1 for names in modes.values() if names)
            out.append(command if every else f"{command} ({', '.join(m or 'a plain run' for m in where)})")
    return ", ".join(out)


def refuse_unused(command: str, options: RunOptions, head: str, mode: str | None = None) -> str:
    """The one check: ValueError naming the first option ``options`` set (``RunOptions.given``)
    that ``command`` does not read in ``mode`` (default ``mode_of``), as
    "HEAD: --FLAG does not apply (it applies to: ...)"; returns the mode."""
    mode = mode_of(command, options) if mode is None else mode
    uses = USES[command][mode].split()
    for name in options.given():
        if name not in uses:
            where = f"{head} {mode}".strip()
            raise ValueError(f"{where}: {FLAGS[name]} does not apply (it applies to: {applies_to(name)})")
    return mode
