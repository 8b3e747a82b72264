"""Named recipes that rebuild the paper's artifacts: ``core`` (the per-run tables and figures,
``core.py``) and the sweep recipes (``sweeps.py``: train, collect the runs once with
``records.collect``, build, write).

The sweep builders are data in, tables out, one module per family of tables: ``scaling`` (tau
against D, K, len_z, B: Tables 3, 5, 7, 1), ``seeds`` (Tables 4 and 8 by the crossing tau, our variants),
``boundary`` (by the transition width), ``mechanisms`` (Table 11, Figure 2b) and ``direction``
(Table 2). Each returns a ``writer.Built``; ``writer.write_built`` writes its tables, then its
figures. The paper's reference numbers come from ``mi_plateau.paper``; ``cost`` estimates what a
recipe has left to train; ``registry`` holds every recipe (these and the ones built from
committed tables) as one kind of thing, with its dry run and its run. What a recipe is asked
(device, precision, jobs, ...) is one ``RunOptions``, passed whole."""

from ..sweeps import RunOptions
from .core import RECIPES, plan, run_recipe, write_assets
from .cost import dry_run
from .sweeps import BUILDERS as SWEEP_RECIPES
from .sweeps import recipe_sweep, run_sweep_recipe

__all__ = [
    "RECIPES",
    "RunOptions",
    "SWEEP_RECIPES",
    "dry_run",
    "plan",
    "recipe_sweep",
    "run_recipe",
    "run_sweep_recipe",
    "write_assets",
]
