"""Figure 3 as the paper computed it: the displacement cosine (passes.descent) and the z-onset
lead (passes.lead) on hand-built weights and curves with known answers, and against a plain
torch reference."""

import math

import numpy as np
import pytest
import torch

from mi_plateau.checkpoints import RunError
from mi_plateau.passes.descent import component, descent_grid, displacement_rows, in_window, windows
from mi_plateau.passes.lead import (
    curve_rows,
    original_onsets,
    original_series,
    original_tau,
    sweep_lead,
    z_onsets,
)


def _sd(x: float, y: float) -> dict:
    return {
        "embed.weight": torch.full((2, 2), x),
        "blocks.0.attn.q.weight": torch.full((3,), y),
        "blocks.0.mlp.in.weight": torch.tensor([x, -y]),
        "unembed.bias": torch.tensor([1.0]),
        "blocks.0.ln1.weight": torch.tensor([1.0 + x]),
    }


def test_cosine_of_consecutive_displacements_known_values():
    # 0 -> a -> 2a: the same direction twice (cos 1); then back by a (cos -1)
    w = {0: _sd(0, 0), 200: _sd(1, 2), 400: _sd(2, 4), 600: _sd(1, 2)}
    rows = displacement_rows(w, [0, 200, 400, 600])
    assert [r["step"] for r in rows] == [200, 400, 600]
    assert math.isnan(rows[0]["cos"]) and rows[1]["cos"] == pytest.approx(1) and rows[2]["cos"] == pytest.approx(-1)
    # ||d|| over every parameter: embed 4 x 1, attn 3 x 4, mlp 1 + 4, ln 1, unembed 0
    assert rows[0]["disp"] == pytest.approx(math.sqrt(4 + 12 + 5 + 1))
    assert rows[0]["disp_attn"] == pytest.approx(math.sqrt(12)) and rows[0]["disp_unembed"] == 0
    assert rows[1]["rel_disp"] == pytest.approx(rows[1]["disp"] / math.sqrt(4 + 12 + 5 + 1 + 4))
    # the rolling mean is centred over the defined cosines: (1 - 1) / 2 at both ends
    assert [r["cos_smooth"] for r in rows] == pytest.approx([0.0, 0.0, 0.0])
    # per component: embed and attn move along their own lines (1, then -1); unembed never moves
    assert rows[1]["cos_embed"] == pytest.approx(1) and rows[2]["cos_attn"] == pytest.approx(-1)
    assert math.isnan(rows[0]["cos_mlp"]) and math.isnan(rows[1]["cos_unembed"])


def test_component_cosines_equal_a_plain_torch_reference():
    g = torch.Generator().manual_seed(1)
    names = ["embed.weight", "blocks.0.attn.q.weight", "blocks.0.mlp.in.weight", "unembed.weight", "ln_final.w"]
    w = {t: {n: torch.randn(4, 3, generator=g, dtype=torch.float64) for n in names} for t in (0, 100, 200, 300)}
    rows = displacement_rows(w, sorted(w))
    for r in rows[1:]:
        t = r["step"]
        for n in names:  # one parameter per component: its cosine is the component's
            d1, d0 = (w[t][n] - w[t - 100][n]).flatten(), (w[t - 100][n] - w[t - 200][n]).flatten()
            want = torch.nn.functional.cosine_similarity(d1, d0, dim=0).item()
            assert r[f"cos_{component(n)}"] == pytest.approx(want, rel=1e-9)


def test_displacements_equal_a_plain_torch_reference():
    g = torch.Generator().manual_seed(0)
    names = ["embed.weight", "pos_embed.weight", "blocks.0.attn.o.weight", "blocks.1.mlp.out.bias", "unembed.weight"]
    w = {t: {n: torch.randn(5, 3, generator=g) for n in names} for t in (0, 100, 200, 300, 400)}
    rows = displacement_rows(w, sorted(w))
    flat = {t: torch.cat([w[t][n].double().flatten() for n in sorted(names)]) for t in w}
    for r in rows[1:]:
        t = r["step"]
        d1, d0 = flat[t] - flat[t - 100], flat[t - 100] - flat[t - 200]
        assert r["cos"] == pytest.approx(torch.nn.functional.cosine_similarity(d1, d0, dim=0).item(), rel=1e-9)
        assert r["disp"] == pytest.approx(d1.norm().item(), rel=1e-9)


def test_every_parameter_has_a_component_and_an_unknown_one_is_named():
    assert [component(n) for n in ("pos_embed.weight", "blocks.3.attn.v.bias", "ln_final.bias", "unembed.bias")] == [
        "embed",
        "attn",
        "ln",
        "unembed",
    ]
    with pytest.raises(RunError, match="'hooks.x'"):
        component("hooks.x")


def test_the_grid_refuses_a_delta_off_the_spacing_a_missing_step_and_too_few_points():
    steps = list(range(0, 1001, 50))
    assert descent_grid(steps, 200, 50) == [0, 200, 400, 600, 800, 1000]
    with pytest.raises(RunError, match="not a positive multiple of the checkpoint spacing"):
        descent_grid(steps, 120, 50)
    assert descent_grid([s for s in steps if s != 600], 200, 50) == [0, 200, 400]  # ends at the first gap
    with pytest.raises(RunError, match="no checkpoint at step 400"):
        descent_grid([s for s in steps if s != 400], 200, 50)
    with pytest.raises(RunError, match="needs 3"):
        descent_grid(list(range(0, 301, 50)), 200, 50)


def test_windows_split_at_half_tau_and_tau():
    rows = [{"step": s, "cos": c} for s, c in [(200, 0.1), (400, 0.3), (600, 0.5), (800, 0.7), (1000, 0.9)]]
    w = windows(rows, 800)
    assert w["cos_plateau"] == pytest.approx(0.1) and w["n_plateau"] == 1  # t < 400
    assert w["cos_pre"] == pytest.approx(0.4) and w["n_pre"] == 2  # 400 <= t < 800
    assert w["cos_post"] == pytest.approx(0.8) and w["post_end"] == 2400
    assert windows(rows, None)["cos_pre"] is None and windows(rows, None)["n_post"] == 0


def test_the_post_window_ends_at_tau_plus_the_span_both_ends_in():
    rows = [{"step": s, "cos": c, "cos_mlp": -c} for s, c in [(400, 0.2), (600, 0.4), (800, 0.6), (1000, 1.0)]]
    w = windows(rows, 400, span=400)  # post: 400 <= t <= 800
    assert w["cos_post"] == pytest.approx(0.4) and w["n_post"] == 3
    assert w["cos_post_to_end"] == pytest.approx(0.55) and w["n_post_to_end"] == 4
    assert w["cos_mlp_post"] == pytest.approx(-0.4) and w["cos_embed_post"] is None  # no such column: none
    assert [in_window(t, "post", 400, 400) for t in (399, 400, 800, 801)] == [False, True, True, False]
    assert windows([{"step": 400, "cos": float("nan")}], 400)["n_post"] == 0  # an undefined cosine is no point


def _curve(K, loss, gap):
    return [{"step": 50 * i, "Lc": a * math.log(K), "shuffle_gap": g} for i, (a, g) in enumerate(zip(loss, gap))]


def test_onsets_and_lead_known_values():
    rows = _curve(10, [1, 1, 1, 1, 0.95, 0.85, 0.3], [0, 0.01, 0.06, 0.2, 0.5, 1, 2])
    on = z_onsets(rows, 10)
    assert on["loss_onset"] == 250 and on["z_onset_0.1"] == 150 and on["z_onset_0.05"] == 100
    assert on["lead_0.1"] == 100 and on["lead_frac_0.1"] == pytest.approx(0.4) and on["lead_frac_0.05"] == 0.6
    assert curve_rows(rows, 10)[4] == {
        "step": 200,
        "Lc_over_logK": pytest.approx(0.95),
        "zgap_over_logK": 0.5 / math.log(10),
    }
    flat = z_onsets(_curve(10, [1, 1, 1], [0, 0, 0]), 10)
    assert flat["loss_onset"] is None and flat["lead_0.1"] is None and flat["lead_frac_0.1"] is None


def test_onsets_refuse_rows_without_a_shuffle_gap():
    with pytest.raises(RunError, match="no z-shuffle gap"):
        z_onsets([{"step": 0, "Lc": 1.0}], 10)
    with pytest.raises(RunError, match="no checkpoint has a z-shuffle gap"):
        z_onsets([{"step": 0, "Lc": 1.0, "shuffle_gap": float("nan")}], 10)


def test_sweep_lead_mean_std_over_positive_leads_and_the_exponent():
    onsets = [
        {"K": 5, "lead_0.1": 100, "lead_frac_0.1": 0.4},
        {"K": 20, "lead_0.1": 400, "lead_frac_0.1": 0.6},
        {"K": 10, "lead_0.1": -50, "lead_frac_0.1": -0.1},  # not positive: out of the mean
        {"K": 36, "lead_0.1": None, "lead_frac_0.1": None},
    ]
    s = sweep_lead(onsets)
    assert s["n"] == 2 and s["Ks_positive"] == [5, 20] and s["runs"] == 4
    assert s["mean_lead_frac"] == pytest.approx(0.5) and s["std_lead_frac"] == pytest.approx(0.1)  # ddof 0
    assert s["lead_exponent"] == pytest.approx(np.log(4) / np.log(4))


def _records(K, first, deranged, every=100):
    """Checkpoint records as the trainer writes them: none of the first-token losses at step 0."""
    recs = [{"step": 0, "train_first_loss": None, "train_first_loss_z_deranged": None, "metrics": {}}]
    for i, (f, d) in enumerate(zip(first, deranged), 1):
        recs.append(
            {"step": every * i, "train_first_loss": f * math.log(K), "train_first_loss_z_deranged": d, "metrics": {}}
        )
    return recs


def test_the_original_quantity_onsets_lead_and_tau_from_records():
    # the loss over log K and the deranged loss (nats): the gap is deranged - loss
    K, logK = 10, math.log(10)
    first = [1.6, 1.6, 1.6, 1.6, 0.85, 0.6, 0.45, 0.1]
    gap = [0.0, 0.02, 0.07, 0.2, 0.5, 1.0, 1.5, 2.0]
    series = original_series(_records(K, first, [f * logK + g for f, g in zip(first, gap)]), K)
    assert [r["step"] for r in series] == [100 * i for i in range(1, 9)]  # step 0 has none
    assert series[3]["train_gap"] == pytest.approx(0.2) and series[3]["zgap_over_logK"] == pytest.approx(0.2 / logK)
    assert series[0]["first_loss_over_logK"] == pytest.approx(1.6)
    on = original_onsets(series, K)
    assert on["loss_onset"] == 500 and on["z_onset_0.1"] == 400 and on["z_onset_0.05"] == 300
    assert on["lead_0.1"] == 100 and on["lead_frac_0.1"] == pytest.approx(0.2) and on["lead_frac_0.05"] == 0.4
    assert original_tau(series, K) == 700  # train_first_loss < 0.5 log K
    assert original_tau(series[:5], K) is None  # not reached


def test_records_without_the_first_token_loss_give_no_series_and_no_onsets():
    old = [{"step": s, "metrics": {"Lc": 1.0}} for s in (0, 50, 100)]  # written before the trainer kept it
    assert original_series(old, 10) == [] and original_onsets([], 10) is None and original_tau([], 10) is None
    no_z = original_series(_records(10, [1.0, 0.5], [None, None]), 10)  # a task without a selector
    assert [r["train_gap"] for r in no_z] == [None, None] and original_onsets(no_z, 10) is None
