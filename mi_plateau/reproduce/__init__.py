"""Named recipes that rebuild the paper's artifacts: ``core`` (the per-run tables and figures,
``core.py``) and the sweep tables (``sweeps.py``)."""

from .core import RECIPES, plan, run_recipe, write_assets
from .cost import dry_run
from .sweeps import BUILDERS as SWEEP_RECIPES
from .sweeps import recipe_sweep, run_sweep_recipe

__all__ = [
    "RECIPES",
    "SWEEP_RECIPES",
    "dry_run",
    "plan",
    "recipe_sweep",
    "run_recipe",
    "run_sweep_recipe",
    "write_assets",
]
