"""The transition width (the original's clock for Tables 4 and 8 and the learning-rate sweep), the
"floor" stopping rule, and the phase boundary's success rule, on hand-built curves and rows."""

import math

import pytest

from mi_plateau.config import ConfigError, preset, validate, with_overrides
from mi_plateau.reproduce.boundary import boundary, lr_ratio_rows, outcome, width_panels, width_stats
from mi_plateau.summaries import summarize, transition_width
from mi_plateau.train import should_stop

LOG5 = math.log(5)


def curve(*fracs):
    """Steps 0, 100, 200, ... with loss = frac * log 5."""
    return [100 * i for i in range(len(fracs))], [f * LOG5 for f in fracs]


def test_width_runs_from_the_last_evaluation_above_the_top_to_the_first_below_the_bottom():
    steps, loss = curve(1.1, 1.0, 0.97, 0.9, 0.96, 0.5, 0.2, 0.04, 0.02)
    # t_end: 700 (first < 0.05); t_start: 400, the last > 0.95 before it (0.96 after a dip)
    assert transition_width(steps, loss, LOG5) == (400, 700, 300)


def test_width_counts_from_step_zero_when_the_loss_never_sat_above_the_top():
    steps, loss = curve(0.9, 0.8, 0.3, 0.01)
    assert transition_width(steps, loss, LOG5) == (0, 300, 300)


def test_no_width_before_the_loss_reaches_the_bottom_and_nan_is_never_below():
    steps, loss = curve(1.0, 0.5, 0.06)
    assert transition_width(steps, loss, LOG5) == (None, None, None)
    assert transition_width([0, 50], [1.0, float("nan")], LOG5) == (None, None, None)


def test_thresholds_are_settings():
    steps, loss = curve(1.0, 0.85, 0.5, 0.15, 0.04)
    assert transition_width(steps, loss, LOG5, hi=0.8, lo=0.2) == (100, 300, 200)


def test_summary_reports_both_clocks_for_both_families():
    cfg = with_overrides(preset("tiny"), {"K": 5})
    steps, seq = curve(1.0, 0.97, 0.6, 0.3, 0.04)
    _, lc = curve(1.0, 1.0, 0.97, 0.4, 0.03)
    recs = [{"step": s, "metrics": {"L_seq": a, "Lc": b}} for s, a, b in zip(steps, seq, lc)]
    s = summarize(cfg, recs)
    assert (s["tau"], s["t_start"], s["t_end"], s["tau_width"]) == (300, 100, 400, 300)
    ft = s["definitions"]["first_token"]
    assert (ft["tau"], ft["t_start"], ft["t_end"], ft["tau_width"]) == (300, 200, 400, 200)


def test_floor_stop_waits_for_the_named_family_below_the_floor():
    cfg = with_overrides(preset("tiny"), {"K": 5, "stop": "floor", "tau_on": "paper"})
    rec = lambda seq, lc: [{"step": 100, "metrics": {"L_seq": seq * LOG5, "Lc": lc * LOG5}}]
    assert not should_stop(cfg, rec(0.011, 0.0))
    assert should_stop(cfg, rec(0.009, 0.5))  # only L_seq counts under tau_on = paper
    both = with_overrides(cfg, {"tau_on": "both"})
    assert not should_stop(both, rec(0.009, 0.5)) and should_stop(both, rec(0.009, 0.005))


@pytest.mark.parametrize(
    "key,value", [("train.stop_floor", 0.0), ("train.stop_floor", 1.0), ("eval.width_lo", 0.0), ("eval.width_lo", 0.96)]
)
def test_bad_thresholds_fail_with_the_name(key, value):
    with pytest.raises(ConfigError, match=key.split(".")[1]):
        validate(with_overrides(preset("tiny"), {key: value}))


def _row(K, lr, width, status="finished", final=0.0, low=0.0, steps=1000, seed=0):
    log_K = math.log(K)
    return {
        "run": f"K{K}_lr{lr}_seed{seed}",
        "K": K,
        "D": 1000 * K,
        "lr": lr,
        "seed": seed,
        "status": status,
        "steps": steps,
        "final_L_seq": final * log_K,
        "min_L_seq": low * log_K,
        "tau_paper": width,
        "tau_first_token": width,
        "t_start_paper": 0,
        "t_end_paper": width,
        "tau_width_paper": width,
        "t_start_first_token": 0,
        "t_end_first_token": width,
        "tau_width_first_token": width,
    }


def test_success_rule_is_the_originals():
    assert outcome(_row(5, 1e-2, 100, low=0.009)) == "escaped"  # minimum below 0.01 log K
    assert outcome(_row(5, 1e-2, 100, status="finished", final=0.04, low=0.02)) == "escaped"  # final below 0.05
    assert outcome(_row(5, 1e-2, None, status="finished", final=0.06, low=0.02)) == "no escape"
    assert outcome(_row(5, 1e-2, None, status="running", final=0.9, low=0.9)) == "undecided"


def test_table4_uses_ddof_zero_and_table8_the_geometric_mean():
    rows = [_row(5, 5e-3, w, seed=s) for s, w in enumerate((1000, 2000, 3000))]
    rows += [_row(5, 1e-2, 500, seed=0), _row(5, 1e-2, None, final=1.0, low=0.9, steps=20000, seed=1)]
    rows += [_row(5, 2e-2, None, status="running", final=1.0, low=1.0, seed=0)]
    rows += [_row(5, 2e-2, 4000, status="running", final=0.06, low=0.02, seed=1)]  # in its tail: a width, undecided
    t4 = {(r["lr"], r["definition"]): r for r in width_stats(rows)}
    c = t4[(2e-2, "paper")]
    assert c["escaped"] == 0 and c["widths"] == [] and c["mean_width"] is None
    assert c["undecided"] == 2 and c["widths_undecided"] == [4000]  # shown, not in the mean
    assert t4[(5e-3, "paper")]["widths_undecided"] == []
    a = t4[(5e-3, "paper")]
    assert a["mean_width"] == 2000 and a["std_width"] == pytest.approx(math.sqrt(2e6 / 3))  # ddof 0
    assert a["cv_width"] == pytest.approx(math.sqrt(2e6 / 3) / 2000) and a["paper_mean"] == 2850
    b = t4[(1e-2, "paper")]
    assert b["escaped"] == 1 and b["widths"] == [500] and b["no_escape_by"] == [20000] and b["std_width"] == 0
    (t8,), cells = boundary(rows)
    assert (t8["max_all_succeed"], t8["min_any_fail"], t8["no_escape_by"]) == (5e-3, 1e-2, 20000)
    assert t8["eta_star"] == pytest.approx(math.sqrt(5e-3 * 1e-2)) and t8["undecided"] == [0, 0, 2]
    assert {c["lr"]: c["outcome"] for c in cells} == {
        5e-3: "all escaped",
        1e-2: "some did not escape",
        2e-2: "undecided",
    }


def _lr_row(lr, width, fam="paper"):
    return {"definition": fam, "lr": lr, "tau_width": width}


def test_lr_ratio_over_the_rates_with_a_width_beside_the_papers_same_rates():
    rows = [_lr_row(3e-4, None), _lr_row(5e-4, 2000), _lr_row(1e-3, 3000), _lr_row(2e-3, None)]
    rows += [_lr_row(r["lr"], None, "first_token") for r in rows]
    got = lr_ratio_rows(rows)
    paper_rows = [r for r in got if r["definition"] == "paper"]
    assert [(r["range"], r["lr_range"], r["ratio"]) for r in paper_rows] == [
        ("all rates", "0.0003 to 0.002", None),
        ("rates with a width", "0.0005 to 0.001", 1.5),
    ]
    assert paper_rows[0]["paper_ratio"] == 3.6 and paper_rows[1]["paper_ratio"] == pytest.approx(3400 / 2200)
    # a family with fewer than two widths has no partial range; with both ends, no second row
    assert [r["range"] for r in got if r["definition"] == "first_token"] == ["all rates"]
    full = lr_ratio_rows([_lr_row(3e-4, 1000), _lr_row(2e-3, 4000)])
    assert [(r["range"], r["ratio"]) for r in full if r["definition"] == "paper"] == [("all rates", 4.0)]


def test_width_panels_scale_by_log_K_order_by_value_and_skip_runs_without_curves():
    rows = [
        {"run": "a", "K": 10, "lr": 0.007, "seed": 42, "t_start_paper": None, "t_end_paper": None},
        {"run": "b", "K": 5, "lr": 0.005, "seed": 42, "t_start_paper": 100, "t_end_paper": 200},
        {"run": "c", "K": 5, "lr": 0.005, "seed": 7, "t_start_paper": None, "t_end_paper": None},
    ]
    curves = {
        "a": {"step": [0, 100], "L_seq": [math.log(10), float("nan")]},
        "b": {"step": [0, 100, 200], "L_seq": [LOG5, 0.96 * LOG5, 0.01 * LOG5]},
    }
    got = width_panels(rows, curves, lambda r: (("K", r["K"]), ("lr", r["lr"])), lambda r: f"seed {r['seed']}")
    assert list(got) == ["K = 5, lr = 0.005", "K = 10, lr = 0.007"]  # by value, not as text
    b = got["K = 5, lr = 0.005"]
    assert list(b) == ["seed 42"] and (b["seed 42"]["t_start"], b["seed 42"]["t_end"]) == (100, 200)
    assert b["seed 42"]["y"] == pytest.approx([1.0, 0.96, 0.01])
    assert got["K = 10, lr = 0.007"]["seed 42"]["y"] == [pytest.approx(1.0), None]


def test_dissipation_sums_lr_times_squared_norm_times_spacing_over_the_window():
    from mi_plateau.summaries import dissipation

    log_K = math.log(10)
    gaps = [
        0.0,
        0.05,
        0.2,
        1.0,
        2.5,
        3.0,
    ]  # window: the 0.2 record (first > 0.1) to the 2.5 one (first > 0.9 log K = 2.07)
    recs = [
        {"step": 50 * i, "lr": 1e-3, "grad_norm_sq_mean": float(i), "metrics": {"swap_gap": g}}
        for i, g in enumerate(gaps)
    ]
    d = dissipation(recs, log_K)
    assert (d["window_start"], d["window_end"]) == (100, 200)
    assert d["Q"] == pytest.approx(1e-3 * 50 * (2 + 3 + 4))
    recs[3]["grad_norm_sq_mean"] = None  # recorded before the trainer kept the squared norm
    assert dissipation(recs, log_K)["Q"] is None
    assert dissipation(recs[:4], log_K)["Q"] is None  # the window never closes


def test_spacing_widens_on_a_quiet_plateau_and_returns_when_the_gap_moves():
    from mi_plateau.train import next_interval

    cfg = with_overrides(
        preset("tiny"), {"K": 5, "train.ckpt_every": 50, "train.ckpt_every_max": 400, "eval.plateau_start": 100}
    )
    rec = lambda step, frac, gap=0.0: {
        "step": step,
        "metrics": {"Lc": frac * LOG5, "L_seq": 1.02 * LOG5, "swap_gap": gap},
    }
    assert next_interval(cfg, [rec(800, 1.0), rec(850, 1.0)]) == 100  # doubles
    assert next_interval(cfg, [rec(3000, 1.0), rec(3200, 1.0)]) == 400  # up to the maximum
    assert next_interval(cfg, [rec(4000, 1.0), rec(4400, 1.0)]) == 400
    # and to an eighth of the step reached, in whole ckpt_every: 1,000 / 8 = 125 -> 100
    assert next_interval(cfg, [rec(800, 1.0), rec(1000, 1.0)]) == 100
    assert next_interval(cfg, [rec(100, 1.0), rec(150, 1.0)]) == 50  # 150 / 8 < 50: never below ckpt_every
    assert next_interval(cfg, [rec(4000, 1.0), rec(4400, 1.0, gap=0.05)]) == 50  # the z-dependence moves: dense
    assert next_interval(cfg, [rec(4000, 1.0), rec(4400, 0.9)]) == cfg.train.ckpt_every_transition  # the loss moves
    off = with_overrides(cfg, {"train.ckpt_every_max": 0})
    assert next_interval(off, [rec(3000, 1.0), rec(3200, 1.0)]) == 50  # the default never widens


def test_spacing_replay_keeps_the_checkpoints_a_wider_run_would_write():
    """``kept_records`` walks dense records as the widening rule would: hand-built records with a
    quiet plateau to 4,000, the swap gap up from 3,000, the loss down from 3,600; the kept steps
    are the rule's, dense again from the gap's rise, so the width is the dense run's."""
    from mi_plateau.replays.spacing import kept_records
    from mi_plateau.summaries import transition_width

    cfg = with_overrides(
        preset("tiny"),
        {
            "K": 5,
            "train.ckpt_every": 50,
            "train.ckpt_every_transition": 50,
            "train.ckpt_every_max": 800,
            "eval.plateau_start": 100,
        },
    )

    def rec(step):
        loss = LOG5 * (1.02 if step < 3600 else max(0.01, 1.02 - (step - 3550) / 400))
        return {"step": step, "metrics": {"Lc": loss, "L_seq": loss, "swap_gap": 0.0 if step < 3000 else 0.1}}

    dense = [rec(s) for s in range(0, 5001, 50)]
    kept, shifted = kept_records(cfg, dense)
    steps = [r["step"] for r in kept]
    # 50-step spacing to 800 (an eighth of the step, in whole 50s, is 50), then the eighth caps
    # the doubling: 100 from 800, 150 from 1,200
    assert steps[:17] == list(range(0, 801, 50))
    assert steps[17:22] == [900, 1000, 1100, 1200, 1350]
    assert shifted == 0 and set(steps) <= {r["step"] for r in dense}
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    assert max(gaps) <= 800 and all(g <= max(50, a // 8) for a, g in zip(steps, gaps))
    assert [s for s in steps if s >= 3200] == [s for s in range(3200, 5001, 50)]  # dense after the gap rose
    assert len(kept) < len(dense)
    curve = lambda rs: ([r["step"] for r in rs], [r["metrics"]["L_seq"] for r in rs])
    assert transition_width(*curve(kept), LOG5) == transition_width(*curve(dense), LOG5) == (3550, 3950, 400)


def test_table11_splits_the_original_q_into_window_and_mean_squared_gradient():
    """Q = lr x sum of g^2 x spacing over inclusive blocks: a window 1,000-2,000 at spacing 200
    covers 1,200 steps; Q 6 at lr 1e-3 is a mean g^2 of 5, at which the paper's Q 3 needs 600
    steps. Without a closed window the split is empty."""
    from mi_plateau.reproduce.mechanisms import table11

    run = {"run": "r", "K": 10, "lr": 1e-3, "train.ckpt_every": 200, "tau_paper": 1500, "status": "finished"}
    rec = {"r": {"dissipation_original": {"Q": 6.0, "window_start": 1000, "window_end": 2000}}}
    (row,) = table11([{**run, "steps": 2800}], rec)
    assert row["window_original_steps"] == 1200
    assert row["mean_grad_sq_original"] == pytest.approx(5.0)
    assert row["paper_window_steps"] == round(7.42 / (1e-3 * 5.0))  # the paper's Q at K = 10, lr 1e-3
    (empty,) = table11([{**run, "steps": 900}], {})
    assert empty["window_original_steps"] is None and empty["mean_grad_sq_original"] is None
