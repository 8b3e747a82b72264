"""Analysis passes over a run's checkpoints (SPEC section 5).

``compute`` runs every pass on one checkpoint and returns tidy rows; ``analyze_run`` does it
over a run and writes the tables; ``tables`` turns tidy rows into Tables 6 and 9 and the data of
Figure 3. Definitions live in the docstrings of ``probes`` and in docs/analyses.md.
"""
