"""Replays: a run's checkpoints read again under another rule than the one it was trained and
measured with, to ask what that rule would have reported.

``sampled`` replays the original's 32-example tau estimator (``conditions``: per Table 4
condition, paired replay by replay), ``spacing`` a widening checkpoint spacing, ``noise`` a
label-noise run on the examples its noise left alone, ``exact_check`` the settlement against
every checkpoint scored exactly; ``example_losses`` scores every example once per step, which
the replays share.
"""
