import math

import numpy as np
import pytest
import torch

from mi_plateau.config import preset, with_overrides
from mi_plateau.metrics import candidate_losses, evaluate
from mi_plateau.model import build_model
from mi_plateau.summaries import plateau_height, summarize, tau
from mi_plateau.task import make_eval_set, make_task


def test_candidate_loss_known_values():
    logits = torch.full((2, 40), -5.0)
    cands = torch.tensor([[4, 5, 6], [7, 8, 9]])
    logits[0, [4, 5, 6]] = torch.tensor([1.0, 1.0, 1.0])  # uniform over candidates
    logits[1, [7, 8, 9]] = torch.tensor([math.log(2), 0.0, 0.0])  # p = 1/2, 1/4, 1/4
    Lc, mass = candidate_losses(logits, cands, torch.tensor([2, 0]))
    assert Lc[0].item() == pytest.approx(math.log(3))
    assert Lc[1].item() == pytest.approx(math.log(2))
    expected_mass0 = 3 * math.e / (3 * math.e + 37 * math.exp(-5))
    assert mass[0].item() == pytest.approx(expected_mass0)


def test_z_blind_model_sits_at_exactly_log_K():
    """A model that ignores z spreads its candidate mass evenly: Lc = log K, swap gap 0.

    With every weight zero the logits are the same for every input, so the model is z-blind
    (and B-blind); Lc must be log K to float precision whatever K is.
    """
    for K in (3, 10):
        cfg = with_overrides(preset("tiny"), {"K": K})
        model = build_model(cfg)
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        ev = make_eval_set(make_task(cfg.task), cfg.eval)
        m = evaluate(model, ev)
        assert m["Lc"] == pytest.approx(math.log(K), abs=1e-6)
        assert m["swap_gap"] == pytest.approx(0.0, abs=1e-6)
        assert m["cand_mass"] == pytest.approx(K / 40, abs=1e-6)
        assert m["L1"] == pytest.approx(math.log(40), abs=1e-5)


def test_tau_on_synthetic_curves():
    steps = [0, 50, 100, 150, 200, 250]
    log_K = math.log(10)
    Lc = [log_K, log_K, 2.0, 1.16, 1.0, 0.01]  # 1.16 > 0.5 log K = 1.151
    assert tau(steps, Lc, log_K, 0.5) == 200
    assert tau(steps, Lc, log_K, 0.7) == 150  # 0.7 log K = 1.61
    assert tau(steps, [log_K] * 6, log_K) is None


def test_plateau_height_ignores_warmup_and_transition():
    steps = list(range(0, 2000, 50))
    log_K = math.log(10)
    Lc = [4.0 if s < 300 else (2.32 if s < 1500 else 0.01) for s in steps]
    assert plateau_height(steps, Lc, log_K, start=300) == pytest.approx(2.32)


def test_summary_keys():
    """Records without L_seq (runs written before the paper family): the first-token family."""
    cfg = preset("tl4")
    recs = [
        {"step": s, "metrics": {"Lc": v, "swap_gap": 0.0}}
        for s, v in [(0, 2.4), (400, 2.31), (800, 2.3), (1000, 0.5), (1100, 0.01)]
    ]
    s = summarize(cfg, recs)
    for key in (
        "K",
        "log_K",
        "plateau_loss",
        "plateau_ratio",
        "tau",
        "alpha",
        "converged",
        "last_step",
        "n_checkpoints",
    ):
        assert key in s
    assert s["definition"] == "first_token"
    assert s["tau"] == 1000 and s["tau_examples"] == 128000 and s["converged"] and s["n_checkpoints"] == 5
    assert s["plateau_ratio"] == pytest.approx(np.median([2.31, 2.3]) / math.log(10))
    assert s["definitions"]["paper"]["tau"] is None


def test_summary_paper_family_on_a_synthetic_curve():
    """tau on L_seq, the paper's plateau (mean L_seq over steps 100-500) and examples seen under
    epoch batching (D = 10,000, batch 128: 79 batches an epoch, the last one of 16)."""
    cfg = preset("paper")
    curve = [
        (0, 3.0, 3.0),
        (100, 2.40, 2.31),
        (300, 2.38, 2.30),
        (500, 2.36, 2.30),
        (600, 2.2, 2.29),
        (800, 1.2, 2.0),
        (850, 0.9, 1.5),
        (900, 0.5, 1.1),
        (1000, 0.1, 0.3),
    ]
    recs = [{"step": s, "metrics": {"L_seq": a, "Lc": b}} for s, a, b in curve]
    s = summarize(cfg, recs)
    log_K = math.log(10)
    assert s["definition"] == "paper"
    assert s["tau"] == 850  # first L_seq < 0.5 log K = 1.151
    assert s["definitions"]["first_token"]["tau"] == 900
    assert s["plateau_loss"] == pytest.approx((2.40 + 2.38 + 2.36) / 3)
    assert s["plateau_ratio"] == pytest.approx(s["plateau_loss"] / log_K)
    # 850 steps = 10 epochs (790 steps, 100,000 examples) + 60 batches of 128
    assert s["tau_examples"] == 100000 + 60 * 128
    assert cfg.examples_seen(79) == 10000 and cfg.examples_seen(78) == 78 * 128


@pytest.mark.parametrize(
    "overrides",
    [{"len_z": 1}, {"len_z": 2}, {"len_z": 3}, {"direction": "az_b"}, {"direction": "b_a"}, {"direction": "forward"}],
)
def test_packed_evaluate_equals_two_plain_forwards(overrides, perturbed_tiny):
    """evaluate() reads clean and swapped metrics from prefix packs; the same numbers as plain
    forwards of every clean and every swapped row, in every direction."""
    from mi_plateau.metrics import evaluate_reference

    cfg, model, ev = perturbed_tiny(overrides, seed=len(str(overrides)))
    a, b = evaluate(model, ev), evaluate_reference(model, ev)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-5, nan_ok=True), k
    if cfg.task.has_selector:
        assert abs(a["swap_gap"]) > 0.01  # the swap really changes something here


def test_every_way_of_asking_the_packed_forward_reads_the_same_logits(perturbed_tiny):
    """One packed forward, asked for less or more: the lean last block (only the nodes read),
    the packs cut at fp (no tail), and the full forward with attention and kept activations
    give the same logits at fp, clean and swapped, and the same candidate scores on the rows
    asked for (NaN on the others); asking for scores without the tail is an error."""
    from mi_plateau.metrics import packed_forward
    from mi_plateau.model.forward import Weights

    cfg, model, ev = perturbed_tiny({}, seed=3)
    W = Weights.of(model.state_dict(), model.cfg)
    half = np.arange(len(ev.tokens)) % 2 == 0
    lean = packed_forward(W, ev, (1, 2), chunk=7, sequence=True, score=half)
    full = packed_forward(W, ev, (1, 2), sequence=True, attention=True, keep=True)
    short = packed_forward(W, ev, (1, 2), chunk=5, tail=False)
    assert short.clean is None and lean.sel_attn is None and full.sel_attn is not None
    assert len(full.resid[0]) == full.pk.n_packs and len(lean.resid[0]) == 0
    for run in (lean, short):
        torch.testing.assert_close(run.clean_fp, full.clean_fp, atol=1e-5, rtol=0)
        for a, b in zip(run.swapped_fp, full.swapped_fp):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert not torch.equal(full.swapped_fp[0], full.swapped_fp[1])  # two shifts, two inputs
    # the lean tail runs as a continuation of the prompt, the full one inside the pack: the same
    # logits summed in another order (logits up to 14 here; both within 1e-4 of the bridge's forward)
    torch.testing.assert_close(lean.clean, full.clean, atol=2e-4, rtol=0)
    fp, P = ev.task.layout.first_pred, full.clean.shape[1]
    with torch.no_grad():
        torch.testing.assert_close(lean.clean[:, fp:], model(ev.tokens)[:, fp:P], atol=2e-4, rtol=0)
    torch.testing.assert_close(lean.scores[half], full.scores[half], atol=2e-4, rtol=0)
    assert torch.isnan(lean.scores[~half]).all() and not torch.isnan(full.scores).any()
    with pytest.raises(ValueError, match="need the tail"):
        packed_forward(W, ev, (1,), tail=False, sequence=True)
    # tails on some rows only (the live groups): those rows' tails and scores, every row's fp
    some = np.isin(ev.g, ev.groups[::3])
    part = packed_forward(W, ev, (1, 2), chunk=7, tails=some, sequence=True, score=some & half)
    assert torch.equal(part.tail_rows, torch.as_tensor(np.flatnonzero(some))) and lean.tail_rows is None
    torch.testing.assert_close(part.clean_fp, full.clean_fp, atol=1e-5, rtol=0)
    torch.testing.assert_close(part.clean, full.clean[some], atol=2e-4, rtol=0)
    torch.testing.assert_close(part.scores[some & half], full.scores[some & half], atol=2e-4, rtol=0)
    assert torch.isnan(part.scores[~(some & half)]).all()
    with pytest.raises(ValueError, match="score outside tails"):
        packed_forward(W, ev, (1,), tails=some, sequence=True, score=half)


def test_a_live_checkpoint_reads_every_rows_first_token_and_the_live_rows_l_seq(perturbed_tiny):
    """A live evaluation (one packed forward, tails on the live groups only) gives the
    first-token family over every row as the full evaluation does, the target loss and exact
    match of the live groups as an evaluation of those groups alone, and L_seq as the mean over
    the live groups of each one's mean over its live rows (per-example L_seq of the full set)."""
    from mi_plateau.metrics import example_losses, live_subset

    cfg, model, ev = perturbed_tiny({"K": 6, "eval.n_groups": 12}, seed=11)
    live = live_subset(4, ev.groups, 6, 3)
    got, whole = evaluate(model, ev, live=live), evaluate(model, ev)
    for k in ("Lc", "L1", "cand_mass", "swap_gap"):
        assert got[k] == pytest.approx(whole[k], abs=1e-5), k
    alone = evaluate(model, ev.subset(live.groups))
    for k in ("full_loss", "acc_mean", "groups_ge80", "groups_100"):
        assert got[k] == pytest.approx(alone[k], abs=1e-5), k
    per = example_losses(model, ev)["L_seq"][np.isin(ev.g, live.groups)][live.rows]
    assert got["L_seq"] == pytest.approx(per.reshape(4, live.m).mean(1).mean(), abs=1e-5)
    assert got["groups_scored"] == 4 and got["rows_scored"] == 4 * live.m and got["L_seq_se"] > 0


def test_z_blind_uniform_model_scores_log_K_exactly():
    """A model whose logits are all equal gives every candidate string the same score: L_seq is
    log K exactly (and Lc too); the argmax of K equal scores is the first candidate, so the
    candidate accuracy is 1/K."""
    from mi_plateau.metrics import sequence_losses

    cfg = with_overrides(preset("tiny"), {"model.train_b_U": True})
    model = build_model(cfg)
    with torch.no_grad():
        model.state_dict(keep_vars=True)["unembed.weight"].zero_()
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    m = evaluate(model, ev)
    K = cfg.task.K
    assert m["L_seq"] == pytest.approx(math.log(K), abs=1e-6) and m["Lc"] == pytest.approx(math.log(K), abs=1e-6)
    assert m["cand_acc"] == pytest.approx(1 / K)
    scores = torch.full((6, K), -7.3)
    L, ok = sequence_losses(scores, torch.arange(6) % K)
    assert torch.allclose(L, torch.full((6,), math.log(K)))


def test_sequence_loss_on_hand_built_scores():
    from mi_plateau.metrics import sequence_losses

    scores = torch.tensor([[0.0, math.log(3.0), -1e9], [-1.0, -2.0, -3.0]])
    L, ok = sequence_losses(scores, torch.tensor([1, 2]))
    assert L[0].item() == pytest.approx(-math.log(3 / 4)) and ok.tolist() == [True, False]
    assert L[1].item() == pytest.approx(3 + math.log(math.exp(-1) + math.exp(-2) + math.exp(-3)))


def test_group_accuracy_numbers_count_a_group_at_exactly_80_percent():
    """Per-group accuracies k / K, as tensors (the passes) and as arrays (evaluate, the bootstrap):
    a group with 4 of its 5 examples right is at >= 80%, and both kinds agree."""
    from mi_plateau.metrics import accuracy_shares, accuracy_stats, group_means

    correct = torch.tensor([1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=torch.float32)
    acc = group_means(correct, 5)  # 0.8, 0.6, 1.0, 0.0
    for a in (acc, acc.numpy(), acc.double().numpy()):
        mean, ge80, eq100 = (float(v) for v in accuracy_shares(a))
        assert (ge80, eq100) == (0.5, 0.25) and mean == pytest.approx(0.6)
    assert accuracy_stats(acc, "paper") == {
        "cand_acc": pytest.approx(0.6),
        "cand_groups_ge80": 0.5,
        "cand_groups_100": 0.25,
    }
    assert list(accuracy_stats(None, "first_token")) == ["acc_mean", "groups_ge80", "groups_100"]
    assert all(math.isnan(v) for v in accuracy_stats(None, "first_token").values())


def test_paper_init_std_per_matrix_and_b_U_gets_gradients():
    """GPT-2 init: every weight matrix N(0, (0.8 / sqrt(d_model))^2), biases 0, LN weights 1; the
    unembedding bias is a Parameter that training moves."""
    cfg = preset("paper")
    model = build_model(cfg)
    std = 0.8 / math.sqrt(cfg.model.d_model)
    sd = model.state_dict(keep_vars=True)
    for name, p in sd.items():
        if name.split(".")[-2] in ("ln1", "ln2", "ln_final"):
            assert torch.all(p == (1.0 if name.endswith("weight") else 0.0)), name
        elif name.endswith("bias"):
            assert torch.all(p == 0), name
        else:
            assert p.std().item() == pytest.approx(std, rel=0.05), name  # W_O and W_out too (tl4 scales them down)
    assert isinstance(sd["unembed.bias"], torch.nn.Parameter)
    tl4 = build_model(preset("tl4")).state_dict()
    assert tl4["blocks.0.attn.o.weight"].std().item() == pytest.approx(std / math.sqrt(8), rel=0.05)
    tokens = make_eval_set(make_task(cfg.task), cfg.eval).tokens[:8]
    model(tokens).logsumexp(-1).sum().backward()
    assert sd["unembed.bias"].grad is not None and sd["unembed.bias"].grad.abs().sum() > 0
    # the same init seed gives the same weights, whatever the data seed
    other = build_model(with_overrides(cfg, {"seed": 5})).state_dict()
    assert torch.equal(other["blocks.1.mlp.in.weight"], sd["blocks.1.mlp.in.weight"].detach())


def test_a_one_value_interval_says_why():
    from mi_plateau.frames import lead

    assert lead({"x": 0.13, "x_lo": 0.13, "x_hi": 0.13}, "x") == "0.13 [0.13: every resample, the same checkpoint]"
    assert lead({"x": 0.5, "x_lo": 0.4, "x_hi": 0.6}, "x") == "0.50 [0.40, 0.60]"
    assert lead({"x": 0.5}, "x") == "0.50"
