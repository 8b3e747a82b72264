"""The sweep file each sweep recipe ships, ``mi_plateau/sweeps/recipes/<name>.toml``, and the
sweep it is read as."""

from __future__ import annotations

from pathlib import Path

import tomllib

from ..checkpoints import RunError
from ..sweeps import Sweep, load_sweep, parse_sweep
from .registry import SHIPPED, SWEEP_RECIPES


def recipe_file(name: str) -> Path:
    path = SHIPPED / f"{name}.toml"
    if name not in SWEEP_RECIPES or not path.is_file():
        raise RunError(f"unknown sweep recipe {name!r}: choose one of {', '.join(SWEEP_RECIPES)}")
    return path


def recipe_sweep(name: str, max_steps: int | None = None) -> Sweep:
    """The recipe's sweep; ``max_steps`` replaces its step budget (a smaller budget on a slow
    machine: runs that do not escape read as "no escape by max_steps"; raising it later
    continues them)."""
    if max_steps is None:
        return load_sweep(recipe_file(name))
    data = tomllib.loads(recipe_file(name).read_text())
    data.setdefault("overrides", {})["max_steps"] = max_steps
    for p in data.get("points", []):  # a point's own budget is capped too
        if "max_steps" in p:
            p["max_steps"] = min(p["max_steps"], max_steps)
    return parse_sweep(data)
