"""The LLC pass (optional ``llc`` extra): the loss devinterp sees is the training loss, the
table's shape, seeding, and a positive LLC at a trained tiny checkpoint. Short chains: these
check the plumbing, not the calibration (docs/mechanisms.md, "The learning coefficient")."""

import math

import pytest
import torch

pytest.importorskip("devinterp")

from mi_plateau.checkpoints import Run  # noqa: E402
from mi_plateau.estimators.llc import (  # noqa: E402
    TINY,
    SGLDSettings,
    TargetLossModel,
    llc_at,
    llc_examples,
    llc_pass,
    spread_steps,
    target_loss,
)
from mi_plateau.model import training_forward  # noqa: E402
from mi_plateau.settle import run_summary
from mi_plateau.train import batch_loss  # noqa: E402

# the tests' larger step and weaker pull (TINY), short chains
SHORT = dict(
    lr=TINY.lr, localization=TINY.localization, nbeta=TINY.nbeta, n_chains=2, n_draws=20, n_burnin=10, n_batches=4
)


@pytest.fixture(scope="module")
def run(tiny_run):
    return tiny_run if isinstance(tiny_run, Run) else Run(tiny_run)


def test_adapter_loss_and_gradient_equal_batch_loss(run):
    """devinterp averages ``target_loss`` over the batch and the positions; that average and its
    gradient are the trainer's ``batch_loss`` on the bridge's own forward."""
    cfg, step = run.config(), run.steps()[len(run.steps()) // 2]
    bridge = run.load_model(step)
    tokens = llc_examples(cfg, 2, 32, seed=0)
    model = TargetLossModel.from_bridge(cfg, bridge)
    per_token = target_loss(model, tokens)
    assert per_token.shape == (64, tokens.shape[1] - 1)
    reference = batch_loss(cfg, training_forward(cfg, bridge)(tokens[:, :-1]), tokens)
    torch.testing.assert_close(per_token.mean(), reference, rtol=1e-6, atol=0)

    per_token.mean().backward()
    reference.backward()
    ours = dict(zip(model.keys, (getattr(model, f"p{i}") for i in range(len(model.keys)))))
    for k, p in bridge.state_dict(keep_vars=True).items():
        if isinstance(p, torch.nn.Parameter):
            torch.testing.assert_close(ours[k].grad, p.grad, rtol=1e-5, atol=1e-8)
        else:  # a fixed buffer (tiny's zero b_U) stays fixed for the sampler too
            assert not isinstance(ours[k], torch.nn.Parameter)


def test_pass_returns_one_row_per_step_with_the_columns(run):
    steps = [0, run.steps()[-1]]
    df = llc_pass(run, steps, **SHORT)
    assert list(df["step"]) == steps
    for col in (
        "step",
        "t_over_tau",
        "llc_mean",
        "llc_std",
        "llc_drift",
        "init_loss",
        "chains_failed",
        "lr",
        "localization",
        "nbeta",
        "n_chains",
        "n_draws",
        "n_burnin",
        "batch_size",
        "n_batches",
        "seed",
        "seconds",
    ):
        assert col in df.columns, col
    tau = run_summary(run)["tau"]
    assert df["t_over_tau"].tolist() == pytest.approx([s / tau for s in steps])
    assert (df["batch_size"] == run.config().train.batch_size).all() and (df["n_chains"] == 2).all()


def test_same_seed_same_numbers(run):
    step, s = run.steps()[-1], SGLDSettings(**SHORT)
    a, ca = llc_at(run, step, s, seed=3)
    b, cb = llc_at(run, step, s, seed=3)
    c, cc = llc_at(run, step, s, seed=4)
    assert (ca.trace == cb.trace).all() and ca.init_loss == cb.init_loss
    assert {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}
    assert not (ca.trace == cc.trace).all()


def test_llc_at_a_trained_checkpoint_is_finite_and_positive(run):
    row, chains = llc_at(run, run.steps()[-1], SGLDSettings(**SHORT))
    assert row["chains_failed"] == 0 and chains.trace.shape == (2, 30)
    assert math.isfinite(row["llc_mean"]) and row["llc_mean"] > 0
    assert math.isfinite(row["llc_std"]) and row["init_loss"] < 0.1  # trained: the loss is near 0


def test_spread_steps_cover_zero_to_past_tau(run):
    tau = run_summary(run)["tau"]
    steps = spread_steps(run, n=6, upto=1.2)
    assert steps[0] == 0 and steps == sorted(set(steps)) and 4 <= len(steps) <= 6
    assert abs(steps[-1] - 1.2 * tau) <= 20  # the nearest checkpoint (tiny: every 10-20 steps)


def test_calibration_sweeps_the_step_at_a_fixed_pull(run):
    from mi_plateau.estimators.llc import PULL, calibrate

    short = {k: v for k, v in SHORT.items() if k not in ("lr", "localization", "nbeta")}
    rows = calibrate(run, fractions=(0.5, 1.2), lrs=(1e-5, 3e-5), **short)
    tau = run_summary(run)["tau"]
    steps = sorted({run.nearest_step(f * tau) for f in (0.5, 1.2)})
    assert [(r["lr"], r["step"]) for r in rows] == [(lr, s) for lr in (1e-5, 3e-5) for s in steps]
    assert all(r["lr"] * r["localization"] == pytest.approx(PULL) for r in rows)
