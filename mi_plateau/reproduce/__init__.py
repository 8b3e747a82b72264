"""Named recipes that rebuild the paper's artifacts, each declared once in ``registry.RECIPES``
(its name, what it rebuilds, the options it reads, its module): ``core`` (the per-run tables and
figures, ``core.py``), the sweep recipes (``sweeps.py``: train, collect the runs once with
``records.collect``, build, write), the passes over another recipe's runs (``hessian``,
``figure3``, ``noise_estimator``) and the pages read from the committed tables (``pages``).

The sweep builders are data in, tables out, one module per family of tables: ``scaling`` (tau
against D, K, len_z, B: Tables 3, 5, 7, 1), ``seeds`` (Tables 4 and 8 by the crossing tau, our variants),
``boundary`` (by the transition width), ``mechanisms`` (Table 11, Figure 2b) and ``direction``
(Table 2). Each returns a ``writer.Built``; ``writer.write_built`` writes its tables, then its
figures. The paper's reference numbers come from ``mi_plateau.paper``; ``cost`` estimates what a
recipe has left to train; ``shipped`` reads a sweep recipe's file. What a recipe is asked
(device, precision, jobs, ...) is one ``RunOptions``, passed whole.

Only the registry is imported here: the command line reads it at start-up."""

from .registry import RECIPES, SWEEP_RECIPES, Recipe, recipe

__all__ = ["RECIPES", "SWEEP_RECIPES", "Recipe", "recipe"]
