"""The Hessian pass over a trained tiny run: the plateau checkpoints, both estimators per
checkpoint, and Table 10's row."""

import math

import pytest

from mi_plateau.checkpoints import Run
from mi_plateau.estimators.hessian import hessian_pass, plateau_checkpoints, table10
from mi_plateau.settle import run_summary


@pytest.mark.long  # Lanczos to 1e-6 at five checkpoints: CI's second step
def test_hessian_pass_on_a_tiny_run(tiny_run):
    run = Run(tiny_run) if not isinstance(tiny_run, Run) else tiny_run
    tau = run_summary(run)["definitions"]["paper"]["tau"]
    df = hessian_pass(run, n_examples=64, k=2, tol=1e-6)
    steps = plateau_checkpoints(run.steps(), tau)
    assert sorted(set(df["step"])) == steps and len(df) == 2 * len(steps)
    assert set(df["estimator"]) == {"original_power", "lanczos"}
    lz = df[df["estimator"] == "lanczos"]
    assert lz["converged"].all() and (lz["residual_max"] <= 1e-6).all() and (lz["residual_min"] <= 1e-6).all()
    assert (lz["lambda_max"] > 0).all() and (lz["lambda_max"] >= lz["lambda_min"]).all()
    assert ((df["t_over_tau"] > 0.05) & (df["t_over_tau"] < 0.85)).all()
    # the original's lambda_max is a Rayleigh quotient, so at most the top eigenvalue; its
    # cosine rule stops it close below (here within 1%)
    both = df.pivot(index="step", columns="estimator", values="lambda_max")
    assert (both["original_power"] <= both["lanczos"] * (1 + 1e-9)).all()
    assert (both["original_power"] >= 0.99 * both["lanczos"]).all()
    (row,) = table10(df).to_dict("records")
    assert row["K"] == 4 and row["steps"] == steps and row["paper_anisotropy"] is None
    assert row["anisotropy_lanczos_min"] <= row["anisotropy_lanczos"] <= row["anisotropy_lanczos_max"]
    assert math.isfinite(row["anisotropy_original"])
