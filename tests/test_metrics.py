import math

import numpy as np
import pytest
import torch

from mi_plateau.config import preset, with_overrides
from mi_plateau.metrics import candidate_losses, evaluate, plateau_height, summarize, tau
from mi_plateau.model import build_model
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
    cfg = preset("paper")
    recs = [{"step": s, "metrics": {"Lc": v, "swap_gap": 0.0}} for s, v in [(0, 2.4), (400, 2.31), (800, 2.3), (1000, 0.5), (1100, 0.01)]]
    s = summarize(cfg, recs)
    for key in ("K", "log_K", "plateau_Lc", "plateau_ratio", "tau", "alpha", "converged", "last_step", "n_checkpoints"):
        assert key in s
    assert s["tau"] == 1000 and s["tau_examples"] == 128000 and s["converged"] and s["n_checkpoints"] == 5
    assert s["plateau_ratio"] == pytest.approx(np.median([2.31, 2.3]) / math.log(10))


@pytest.mark.parametrize("overrides", [{"len_z": 1}, {"len_z": 2}, {"len_z": 3}, {"direction": "az_b"},
                                       {"direction": "b_a"}, {"direction": "forward"}])
def test_packed_evaluate_equals_two_plain_forwards(overrides):
    """evaluate() reads clean and swapped metrics from prefix packs; the same numbers as plain
    forwards of every clean and every swapped row, in every direction."""
    from mi_plateau.metrics import evaluate_reference

    cfg = with_overrides(preset("tiny"), overrides)
    torch.manual_seed(len(str(overrides)))
    model = build_model(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    a, b = evaluate(model, ev), evaluate_reference(model, ev)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-5, nan_ok=True), k
    if cfg.task.has_selector:
        assert abs(a["swap_gap"]) > 0.01  # the swap really changes something here
