"""Sweep files: a base preset, overrides for every point, a grid and/or a list of points.

A sweep file is TOML (readable, comments allowed, one table per part)::

    name = "k_sweep"          # the sweep folder: checkpoints/<name>/
    preset = "paper"          # the base configuration of every point
    stop = "tau"              # optional: "converge" (the preset's rule) or "tau" (stop soon after tau)
    order = "listed"          # optional: start the runs in the file's order ("longest_first", the
                              # default, starts the largest D first: the shortest wall time overall)

    [overrides]               # settings every point gets (any `--set` key or short alias)
    max_steps = 30000

    [grid]                    # the cartesian product of these lists
    K = [3, 5, 10]
    seed = [0, 1]

    [[points]]                # and/or explicit points (a table each; `name` is optional)
    K = 36
    seed = 0

    [[points]]                # a point may start from another preset (the overrides still apply)
    preset = "tl4"
    K = 10

Everything is validated before any work: unknown keys, wrong types, empty lists, values outside
a config's valid range, duplicate points and conflicting run names each fail with one line that
names the key (or the points).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomllib

from ..config import STOPS, ConfigError, RunConfig, check_depth, preset, validate, with_overrides

TOP_KEYS = {"name", "preset", "stop", "order", "recipe", "overrides", "grid", "points"}
RECIPE_KEYS = {"shows": str, "builder": str, "reads": dict}  # a shipped recipe's [recipe] table (reproduce.registry)
# every name that becomes a folder (the sweep's, each point's): one path component, never ".." or
# absolute, so a sweep file cannot make the runner write (or skip, or resume) outside its folder
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=-]{0,99}")
MAX_POINTS = 10_000  # a sweep's runs: the paper's whole grid is 61; a typo in a grid should not hang the reader
ORDERS = ("longest_first", "listed")  # the order the unfinished runs start in


@dataclass(frozen=True)
class Point:
    name: str  # the run folder's name inside the sweep folder
    settings: dict[str, Any]  # the swept keys and their values (the table's config columns)
    cfg: RunConfig


@dataclass(frozen=True)
class Sweep:
    name: str
    preset: str
    stop: str | None
    overrides: dict[str, Any]
    points: tuple[Point, ...]
    order: str = "longest_first"

    def folder(self, root: str | Path = "checkpoints") -> Path:
        return Path(root) / self.name

    def to_dict(self) -> dict[str, Any]:
        """The resolved sweep (what ``sweep.json`` in the sweep folder holds)."""
        return {
            "name": self.name,
            "preset": self.preset,
            "stop": self.stop,
            "overrides": self.overrides,
            "order": self.order,
            "points": [{"name": p.name, "settings": p.settings, "config": p.cfg.to_dict()} for p in self.points],
        }


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (TOML); errors are one line naming the file and the key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such sweep file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot be read ({' '.join(str(e).split())})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from None
    try:
        check_depth(data, "the file")
        return parse_sweep(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def folder_name(name: Any, key: str, what: str) -> str:
    """``name`` where it is safe as one folder inside the sweep's (``FOLDER_NAME``); else a one-line
    ``ConfigError`` naming ``key`` and the value."""
    if not isinstance(name, str) or not FOLDER_NAME.fullmatch(name):
        raise ConfigError(
            f"{key}={name!r}: give {what} a name of letters, digits, '_', '.', '=' or '-' starting with a letter or "
            "digit (it names a folder inside the sweep's; no '/' or '..')"
        )
    return name


def _point_name(settings: dict[str, Any]) -> str:
    """K3_seed0 from {"K": 3, "seed": 0}: the swept keys in order, file-name safe."""
    # "+" of an exponent is dropped, not replaced: lr 1e+30 is lr1e30, never lr1e-30 (another run)
    parts = [f"{k.split('.')[-1]}{v}".replace("+", "") for k, v in settings.items()]
    name = "_".join(parts) or "base"
    return re.sub(r"[^A-Za-z0-9_.=-]", "-", name)


def check_recipe_table(recipe: Any) -> None:
    """A sweep file's ``[recipe]`` table (what makes a shipped file a ``reproduce`` recipe:
    ``reproduce.registry``): a table of ``RECIPE_KEYS``, each of its type, ``builder`` a
    "module.function" and ``reads`` names to names; else a one-line ``ConfigError``."""
    if not isinstance(recipe, dict):
        raise ConfigError("recipe: expected a table ([recipe])")
    for key, value in recipe.items():
        if key not in RECIPE_KEYS:
            raise ConfigError(f"recipe.{key}: unknown key (a [recipe] table has {', '.join(RECIPE_KEYS)})")
        if not isinstance(value, RECIPE_KEYS[key]):
            raise ConfigError(f"recipe.{key}={value!r}: expected a {'table' if key == 'reads' else 'string'}")
    if recipe and not {"shows", "builder"} <= set(recipe):
        raise ConfigError("recipe: give shows and builder")
    if "builder" in recipe and not re.fullmatch(r"\w+\.\w+", recipe["builder"]):
        raise ConfigError(f"recipe.builder={recipe['builder']!r}: expected module.function")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in recipe.get("reads", {}).items()):
        raise ConfigError("recipe.reads: expected names = recipe names")


def _from_preset(name: Any, common: dict[str, Any]) -> RunConfig:
    """The preset ``name`` with the sweep's overrides ``common``: the sweep's base, or the base
    of a point that names its own (``preset = "tl4"``)."""
    if not isinstance(name, str):
        raise ConfigError(f"preset={name!r}: expected a preset name")
    start = preset(name)
    try:
        return with_overrides(start, common, typed=True)
    except ConfigError as e:
        raise ConfigError(f"overrides: {e}") from None


def _swept(s: dict[str, Any]) -> dict[str, Any]:
    """A point's settings less its ``preset`` (not a config key)."""
    return {k: v for k, v in s.items() if k != "preset"}


def parse_sweep(data: dict[str, Any]) -> Sweep:
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} (a sweep file has {', '.join(sorted(TOP_KEYS))})")
    check_recipe_table(data.get("recipe", {}))
    name = folder_name(data.get("name"), "name", "the sweep")
    base_name = data.get("preset", "paper")
    stop = data.get("stop")
    if stop is not None and stop not in STOPS:
        raise ConfigError(f"stop={stop!r}: must be one of {', '.join(STOPS)}")
    order = data.get("order", "longest_first")
    if order not in ORDERS:
        raise ConfigError(f"order={order!r}: must be one of {', '.join(ORDERS)}")
    overrides = data.get("overrides", {})
    grid = data.get("grid", {})
    points = data.get("points", [])
    for key, v, kind in (("overrides", overrides, dict), ("grid", grid, dict), ("points", points, list)):
        if not isinstance(v, kind):
            raise ConfigError(f"{key}: expected {'a table' if kind is dict else 'an array of tables ([[points]])'}")
    common = {**overrides, **({"stop": stop} if stop else {})}
    base = _from_preset(base_name, common)
    for key, values in grid.items():
        if not isinstance(values, list):
            raise ConfigError(f"grid.{key}={values!r}: expected a list of values")
        if not values:
            raise ConfigError(f"grid.{key}: empty list (a grid over nothing has no points)")
    size = math.prod(len(v) for v in grid.values()) if grid else 0
    if size + len(points) > MAX_POINTS:
        raise ConfigError(f"{size + len(points):,} points: a sweep holds at most {MAX_POINTS:,} runs (split it)")
    settings_list: list[tuple[str, dict[str, Any]]] = []
    if grid:
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            s = dict(zip(keys, combo))
            settings_list.append((f"grid point {s}", s))
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            raise ConfigError(f"points[{i}]: expected a table")
        settings_list.append((f"points[{i}]", dict(p)))
    if not settings_list:
        raise ConfigError("no points: give a [grid] or [[points]]")
    out: list[Point] = []
    seen_cfg: dict[str, str] = {}
    seen_name: dict[str, str] = {}
    for where, s in settings_list:
        explicit = s.pop("name", None)
        if explicit is not None:
            folder_name(explicit, f"{where}: name", "the point")
        try:
            start = base if "preset" not in s else _from_preset(s["preset"], common)
            cfg = validate(with_overrides(start, _swept(s), typed=True))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        key = cfg.to_json()
        if key in seen_cfg:
            raise ConfigError(f"{where} and {seen_cfg[key]} are the same run (duplicate points)")
        seen_cfg[key] = where
        pname = explicit or _point_name(s)
        if pname in seen_name:
            raise ConfigError(f"{where} and {seen_name[pname]} would both be the run {pname!r} (conflicting run names)")
        seen_name[pname] = where
        out.append(Point(pname, s, cfg))
    return Sweep(name, base_name, stop, dict(overrides), tuple(out), order)


def sweep_in_precision(sweep: Sweep, precision: str | None) -> Sweep:
    """``sweep`` with every run in ``precision`` (``train.precision``), in its own folder
    (``<name>_<precision>``) so that it never meets the runs of another precision; None, or the
    precision every point already has: ``sweep`` as it is."""
    if precision is None or all(p.cfg.train.precision == precision for p in sweep.points):
        return sweep
    points = tuple(
        replace(p, cfg=replace(p.cfg, train=replace(p.cfg.train, precision=precision))) for p in sweep.points
    )
    overrides = {**sweep.overrides, "train.precision": precision}
    return replace(sweep, name=f"{sweep.name}_{precision}", overrides=overrides, points=points)
