"""The linear-network control of Table 12 (``mi_plateau.control.linear``): the candidate loss by
hand, seeds, the closed-form MSE gradient against autograd, a short run, the row and the artifact."""

import json
import math

import numpy as np
import pytest
import torch

from mi_plateau.config import ConfigError
from mi_plateau.control.linear import (
    COLUMNS,
    LinearConfig,
    candidate_losses,
    eval_examples,
    forward,
    init_weights,
    inputs,
    make_embeddings,
    mse_and_grads,
    oracle_candidate_loss,
    table12_row,
    train_linear,
    verdict,
)
from mi_plateau.task import make_task

TINY = LinearConfig(K=4, n_b=2, d_embed=16, d_hidden=16, lr=1e-2, batch_size=8, steps=300, eval_every=100)


def test_candidate_loss_by_hand_on_two_candidates():
    """y = 0, D = 2, a_0 = (1, 0), a_1 = (0, 2): logits -1/2 and -4/2, so the loss of the true
    candidate 0 is log(1 + e^-1.5), that of candidate 1 is log(1 + e^1.5)."""
    y = torch.zeros(2, 2, dtype=torch.float64)
    cands = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]] * 2, dtype=torch.float64)
    loss, ok = candidate_losses(y, cands, torch.tensor([0, 1]))
    assert loss.tolist() == pytest.approx([math.log1p(math.exp(-1.5)), math.log1p(math.exp(1.5))], abs=1e-12)
    assert ok.tolist() == [1.0, 0.0]


def test_equidistant_prediction_scores_log_K():
    K, D = 5, 8
    cands = torch.eye(D, dtype=torch.float64)[:K][None].expand(3, K, D)  # unit vectors: all at distance 1 from 0
    loss, _ = candidate_losses(torch.zeros(3, D, dtype=torch.float64), cands, torch.tensor([0, 2, 4]))
    assert loss.tolist() == pytest.approx([math.log(K)] * 3, abs=1e-12)


def test_embeddings_init_and_eval_examples_are_fixed_by_their_seeds():
    cfg = LinearConfig(K=5, n_b=40, d_embed=8, d_hidden=6, n_eval=64)
    task = make_task(cfg.task)
    e1, e2 = make_embeddings(task, cfg), make_embeddings(task, cfg)
    assert all(torch.equal(getattr(e1, k), getattr(e2, k)) for k in ("b", "z", "a"))
    assert (e1.b.shape, e1.z.shape, e1.a.shape) == ((40, 8), (5, 8), (40, 5, 8))
    other = make_embeddings(task, LinearConfig(K=5, n_b=40, d_embed=8, d_hidden=6, embed_seed=9))
    assert not torch.equal(e1.a, other.a)
    W1, W2 = init_weights(cfg)
    assert torch.equal(W1, init_weights(cfg)[0]) and torch.equal(W2, init_weights(cfg)[1])
    assert W1.shape == (6, 16) and W2.shape == (8, 6)
    assert W1.abs().max() <= math.sqrt(6 / 22) and W2.abs().max() <= math.sqrt(6 / 14)  # Xavier-uniform bounds
    g, s = eval_examples(task, cfg)
    g2, s2 = eval_examples(task, cfg)
    assert torch.equal(g, g2) and torch.equal(s, s2)
    assert len(set(zip(g.tolist(), s.tolist()))) == 64  # distinct examples
    small = LinearConfig(K=5, n_b=4)
    assert len(eval_examples(make_task(small.task), small)[0]) == 20  # all of a smaller task
    # the data are the task's own: same data seed, same task
    assert np.array_equal(make_task(cfg.task).targets, task.targets)


def test_mse_gradient_matches_autograd():
    torch.manual_seed(0)
    x, a = torch.randn(7, 6, dtype=torch.float64), torch.randn(7, 3, dtype=torch.float64)
    W1 = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    W2 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.mse_loss(forward(W1, W2, x), a)
    loss.backward()
    mse, dW1, dW2 = mse_and_grads(W1.detach(), W2.detach(), x, a)
    assert mse == pytest.approx(loss.item(), rel=1e-12)
    assert torch.allclose(dW1, W1.grad, rtol=1e-12, atol=1e-12)
    assert torch.allclose(dW2, W2.grad, rtol=1e-12, atol=1e-12)


def test_short_run_learns_and_is_deterministic():
    """With 2 groups the selector embedding alone predicts much of the target, so even a linear
    network leaves log K; the run is the same twice."""
    df = train_linear(TINY)
    assert tuple(df.columns) == COLUMNS
    assert df.step.tolist() == [0, 100, 200, 300]
    assert df.mse.is_monotonic_decreasing and df.candidate_loss.is_monotonic_decreasing
    assert df.candidate_loss.iloc[-1] < 0.6 * math.log(4)
    assert np.allclose(df.candidate_loss_over_logK, df.candidate_loss / math.log(4))
    assert df.equals(train_linear(TINY))
    assert train_linear(LinearConfig(K=4, n_b=2, d_embed=16, d_hidden=16, steps=250, eval_every=100)).step.tolist() == [
        0,
        100,
        200,
        250,
    ]  # the last step is always evaluated


def test_inputs_concatenate_base_and_selector_embeddings():
    task = make_task(TINY.task)
    emb = make_embeddings(task, TINY)
    x = inputs(emb, torch.tensor([1]), torch.tensor([3]))
    assert torch.equal(x[0], torch.cat([emb.b[1], emb.z[3]]))


def test_table12_row_and_verdict():
    import pandas as pd

    cfg = LinearConfig(K=10)
    curve = pd.DataFrame({"step": [0, 30000], "candidate_loss": [2.4, 2.2], "cand_acc": [0.1, 0.12]})
    row = table12_row(curve, cfg)
    assert row["K"] == 10 and row["steps"] == 30000
    assert row["ratio_to_logK"] == pytest.approx(2.2 / math.log(10))
    assert row["verdict"] == "stays at log K" and row["paper"] == "stays at log K permanently"
    assert verdict(0.89 * math.log(10), math.log(10)) == "escapes"


@pytest.mark.parametrize(
    "over, message",
    [
        ({"lr": 0.0}, "linear.lr=0.0: must be positive"),
        ({"K": 40}, "linear.K=40: must be in 2..36"),
        ({"init_seed": -1}, "linear.init_seed=-1: seeds"),
    ],
)
def test_bad_settings_fail_naming_the_value(over, message):
    with pytest.raises(ConfigError, match="^" + message.replace(".", r"\.")):
        LinearConfig(**over)


def test_command_writes_the_same_artifact_twice(tmp_path, capsys):
    from mi_plateau.cli import main

    args = ["--K", "3", "--steps", "40", "--eval-every", "20"]
    for name in ("a.json", "b.json"):
        assert main(["linear-control", "--out", str(tmp_path / name), *args]) == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a["runs"] == b["runs"] and a["table12"] == b["table12"]
    assert a["command"] == f"mi-plateau linear-control --out {tmp_path / 'a.json'} {' '.join(args)}"
    assert [r["step"] for r in a["runs"][0]["curve"]] == [0, 20, 40]
    assert a["table12"][0]["K"] == 3 and a["runs"][0]["config"]["steps"] == 40
    assert "K= 3" in capsys.readouterr().out


def test_least_squares_limit_fits_exactly_when_z_alone_decides():
    """One group: the target depends on z only, and a linear map fits the K targets exactly
    (K <= 2D inputs), so the limit's MSE is 0 and its candidate accuracy 1."""
    from mi_plateau.control.linear import least_squares_limit

    cfg = LinearConfig(K=4, n_b=1, d_embed=16, d_hidden=16)
    lim = least_squares_limit(cfg)
    assert lim["limit_mse"] < 1e-20 and lim["limit_cand_acc"] == 1.0
    # a perfect prediction still has a candidate loss: the oracle's, log(1 + 3 e^-2) give or take
    assert lim["limit_candidate_loss"] == pytest.approx(oracle_candidate_loss(cfg), abs=1e-9)
    assert 0.5 * math.log1p(3 * math.exp(-2)) < oracle_candidate_loss(cfg) < 2 * math.log1p(3 * math.exp(-2))


def test_least_squares_limit_is_below_training_and_rank_limited():
    from mi_plateau.control.linear import least_squares_limit

    cfg = LinearConfig(K=4, n_b=6, d_embed=16, d_hidden=16, n_eval=24, lr=1e-2, batch_size=8, steps=300, eval_every=100)
    lim = least_squares_limit(cfg)  # evaluated on all 24 examples = the training set
    assert lim["limit_mse"] <= train_linear(cfg).mse.min() + 1e-9
    narrow = least_squares_limit(LinearConfig(K=4, n_b=6, d_embed=16, d_hidden=2, n_eval=24))
    assert narrow["limit_mse"] > lim["limit_mse"]  # rank 2 cannot do what rank 16 does
