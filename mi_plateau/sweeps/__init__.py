"""Sweeps (docs/reproduction_sweeps.md): a grid or list of run configs, each an ordinary run folder.

``load_sweep`` reads and validates a sweep file; ``run_sweep`` trains it on a local process pool
or on Ray, as its ``RunOptions`` ask, and returns its table; ``sweep_table`` reads the table of a
sweep folder."""

from ..config import RunOptions
from .pool import train_local
from .ray_tasks import train_ray
from .runner import BACKENDS, run_sweep
from .schedule import plan, select, status
from .spec import Point, Sweep, load_sweep, parse_sweep, sweep_in_precision
from .table import run_row, sweep_table, train_wall

__all__ = [
    "BACKENDS",
    "Point",
    "RunOptions",
    "Sweep",
    "sweep_in_precision",
    "load_sweep",
    "parse_sweep",
    "plan",
    "run_row",
    "run_sweep",
    "select",
    "status",
    "sweep_table",
    "train_local",
    "train_ray",
    "train_wall",
]
