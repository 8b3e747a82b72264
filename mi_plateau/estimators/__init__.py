"""Estimators of the loss landscape at a run's checkpoints: ``hessian`` (the Hessian spectrum of
the training loss on the plateau, Table 10; its two eigenvalue estimators in ``spectrum``) and
``llc`` (the local learning coefficient, with devinterp's SGLD; optional).
"""
