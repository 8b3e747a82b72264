"""Analysis passes over a run's checkpoints (docs/analyses.md).

``per_checkpoint.checkpoint_passes`` runs every pass on one checkpoint and returns tidy rows: one
packed forward (``metrics.packed``), then one function per pass (``per_checkpoint``; the
interventions are defined in ``mi_plateau.interventions``, and their fast twins, which restart
from the forward's activations, live in ``packed_twins``).
``analyze.analyze_run`` does it over a run and caches the rows; ``table6_9`` turns tidy rows into
Tables 6 and 9, ``routing`` into the routing summary and the data of Figure 3. Definitions live in
the docstrings of ``per_checkpoint`` and in docs/analyses.md.
"""
