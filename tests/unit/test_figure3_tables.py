"""``reproduce figure3``'s tables from hand-built log entries with known onsets, leads and windows:
the original's quantity beside ours, the one-line notes for what an entry lacks, and the original
code's own K = 10 run (the committed reference data) read by the same windows."""

import json
import math
from pathlib import Path

import pytest

from mi_plateau.passes.lead import original_series
from mi_plateau.reproduce import figure3 as recipe

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproduction"


def _entry(run, K, first, gap, lc, shuffle, status="finished", every=100, cos=None):
    """A log entry as ``run_entry`` writes it: per checkpoint from ``every`` (step 0 has no
    training loss), the original's loss over log K and z-gap (nats), ours (Lc over log K and the
    z-shuffle gap), and (``cos``) displacement rows on the same steps."""
    logK = math.log(K)
    steps = [every * i for i in range(1, len(first) + 1)]
    recs = [{"step": 0, "train_first_loss": None}] + [
        {"step": s, "train_first_loss": f * logK, "train_first_loss_z_deranged": f * logK + g}
        for s, f, g in zip(steps, first, gap)
    ]
    a = [
        {"step": s, "Lc": c * logK, "shuffle_gap": z, "Lc_over_logK": c, "zgap_over_logK": z / logK}
        for s, c, z in zip(steps, lc, shuffle)
    ]
    e = {"run": run, "K": K, "steps": steps[-1], "status": status, "a": a, "a_original": original_series(recs, K)}
    e["onsets"] = recipe.lead.z_onsets(a, K)
    if cos is not None:
        e["b"] = [{"step": s, "cos": c, "cos_smooth": c, "cos_mlp": 2 * c} for s, c in zip(steps, cos)]
    return e


# K = 10: by the original's quantity loss onset 500, z onsets 400 (0.1) and 300 (0.05), tau 700;
# ours on Lc: loss onset 300, z onsets 200 (0.1) and 100 (0.05)
K10 = _entry(
    "K10_seed0",
    10,
    first=[1.6, 1.6, 1.6, 1.6, 0.85, 0.6, 0.45, 0.1],
    gap=[0.0, 0.02, 0.07, 0.2, 0.5, 1.0, 1.5, 2.0],
    lc=[1.0, 0.95, 0.8, 0.5, 0.3, 0.1, 0.05, 0.01],
    shuffle=[0.06, 0.2, 0.5, 1.0, 1.5, 2.0, 2.0, 2.0],
    cos=[float("nan"), 0.1, 0.3, 0.2, 0.4, 0.6, 0.8, 1.0],
)
# K = 20 by the original's: loss onset 800, z onset 200 (lead fraction 0.75; 0.05: 100, 0.875)
K20 = _entry(
    "K20_seed0",
    20,
    first=[1.6, 1.6, 1.6, 1.6, 1.6, 1.6, 1.6, 0.8],
    gap=[0.06, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0],
    lc=[1.0] * 7 + [0.5],
    shuffle=[0.0] * 7 + [0.2],
)


def test_the_lead_rows_give_both_quantities_and_no_note_where_all_is_reached():
    row = recipe.lead_rows({"K10_seed0": K10})[0]
    assert (row["loss_onset_original"], row["z_onset_original_0.1"], row["z_onset_original_0.05"]) == (500, 400, 300)
    assert row["lead_original_0.1"] == 100 and row["lead_frac_original_0.1"] == pytest.approx(0.2)
    assert row["lead_frac_original_0.05"] == pytest.approx(0.4)
    assert (row["loss_onset"], row["z_onset_0.1"], row["z_onset_0.05"]) == (300, 200, 100)  # ours, on Lc
    assert row["lead_frac_0.1"] == pytest.approx(1 / 3) and row["lead_frac_0.05"] == pytest.approx(2 / 3)
    assert row["note"] is None


def test_the_summary_is_the_mean_and_std_over_the_positive_leads_for_both_quantities():
    rows = recipe.summary_rows({"K10_seed0": K10, "K20_seed0": K20})
    by = {(r["quantity"], r["gap"]): r for r in rows}
    assert list(by) == [("original", 0.1), ("original", 0.05), ("ours (Lc)", 0.1), ("ours (Lc)", 0.05)]
    o = by["original", 0.1]
    assert o["n"] == 2 and o["Ks_positive"] == "10, 20" and o["paper_mean_lead_frac"] == 0.5
    assert o["mean_lead_frac"] == pytest.approx((0.2 + 0.75) / 2) and o["std_lead_frac"] == pytest.approx(0.275)
    assert o["lead_exponent"] == pytest.approx(math.log(600 / 100) / math.log(2))
    assert by["original", 0.05]["mean_lead_frac"] == pytest.approx((0.4 + 0.875) / 2)
    ours = by["ours (Lc)", 0.1]  # K = 20's Lc z onset comes with its loss onset: no positive lead
    assert ours["n"] == 1 and ours["mean_lead_frac"] == pytest.approx(1 / 3) and ours["std_lead_frac"] == 0
    assert ours["paper_mean_lead_frac"] is None and o["note"] is None


def test_an_old_log_entry_says_in_one_line_what_cannot_be_recomputed():
    old = {k: v for k, v in K10.items() if k != "a_original"} | {"run": "K13_seed0", "K": 13}
    row = recipe.lead_rows({"K13_seed0": old})[0]
    assert row["loss_onset_original"] is None and row["lead_frac_original_0.1"] is None
    assert row["note"] == (
        "K13_seed0: its log entry keeps no train_first_loss series: the lead by the original's quantity "
        "cannot be recomputed, retrain it (docs/sweeps/lead_sweep.toml)"
    )
    assert row["loss_onset"] == K10["onsets"]["loss_onset"]  # ours is still read from the log
    s = recipe.summary_rows({"K13_seed0": old, "K20_seed0": K20})[0]
    assert s["n"] == 1 and s["runs"] == 1 and "K13_seed0" in s["note"]
    d = recipe.descent_rows({"K10_seed0": {k: v for k, v in K10.items() if k != "a_original"}}, None)[1]
    assert d["cos_plateau"] is None and "\n" not in d["note"] and "cannot be recomputed" in d["note"]


def test_a_run_before_its_onsets_says_by_how_many_steps():
    early = _entry("K36_seed0", 36, [1.6] * 4, [0.0, 0.0, 0.2, 0.3], [1.0] * 4, [0.0] * 4, "running", cos=[0.1] * 4)
    row = recipe.lead_rows({"K36_seed0": early})[0]
    assert row["z_onset_original_0.1"] == 300 and row["lead_original_0.1"] is None
    assert row["note"] == (
        "K36_seed0: no loss onset by 400 steps (train_first_loss < 0.9 log K); "
        "no loss onset by 400 steps (Lc < 0.9 log K)"
    )
    d = recipe.descent_rows({"K36_seed0": early}, None)[1]
    assert d["status"] == "not reached by 400 steps" and d["cos_plateau"] is None and d["n_post"] is None


def test_the_descent_row_windows_against_the_original_tau():
    d = recipe.descent_rows({"K10_seed0": K10}, None)[1]
    assert d["source"] == "ours" and d["tau"] == 700 and d["post_end"] == 2300 and d["grid_end"] == 800
    assert d["cos_plateau"] == pytest.approx(0.2) and d["n_plateau"] == 2  # 200, 300 (100's cosine is undefined)
    assert d["cos_pre"] == pytest.approx(0.4) and d["n_pre"] == 3  # 400, 500, 600
    assert d["cos_post"] == pytest.approx(0.9) and d["n_post"] == 2  # 700, 800
    assert d["cos_mlp_pre"] == pytest.approx(0.8) and d["cos_attn_pre"] is None and d["note"] is None


@pytest.fixture(scope="module")
def reference():
    return recipe.read_reference(DOCS)


def test_the_original_codes_own_run_reproduces_its_summary(reference):
    """The committed reference csv, read by our windows, gives the original's own window means."""
    row = recipe.reference_row(reference)
    assert row["source"] == "the original code, its own run" and row["K"] == 10 and row["tau"] == 2600
    assert (round(row["cos_plateau"], 3), round(row["cos_pre"], 3), round(row["cos_post"], 3)) == (0.211, 0.159, 0.062)
    assert row["post_end"] == 4200 and (row["n_plateau"], row["n_pre"], row["n_post"]) == (4, 6, 9)
    summary = json.loads((DOCS / recipe.REFERENCE / "k10_summary.json").read_text())["windows"]
    assert row["cos_post_to_end"] == pytest.approx(summary["post"]["cos"])  # its post runs to step 5,000
    for ours, theirs in zip(recipe.COMPONENTS, ("embed", "attention", "mlp", "unembed", "other")):
        for w in ("plateau", "pre"):
            assert row[f"cos_{ours}_{w}"] == pytest.approx(summary[w][f"cos_{theirs}"])


def test_a_missing_reference_is_a_row_that_says_so(tmp_path):
    assert recipe.read_reference(tmp_path) is None
    row = recipe.descent_rows({}, None)[0]
    assert row["source"] == "the original code, its own run" and row["cos_post"] is None
    assert row["note"] == "reference/original_fig3b_k10/: not found, not shown"


def test_figure3b_draws_the_original_codes_run_as_a_labelled_reference(reference):
    built = recipe.build_figure3({"K10_seed0": K10, "K20_seed0": K20}, reference)
    b = built.figures["Figure 3(b)"].fig
    ref = [t for t in b.data if t.name.startswith("the original code, its own run")]
    assert len(ref) == 1 and ref[0].line.dash == "dash" and list(ref[0].x)[-1] == 5000
    assert 2600 in [s.x0 for s in b.layout.shapes] and 700 in [s.x0 for s in b.layout.shapes]
    a = built.figures["Figure 3(a)"].fig
    assert "K=10: loss onset (original) 500" in [t.name for t in a.data] and "K=10: loss onset 300" in [
        t.name for t in a.data
    ]


def test_a_run_without_a_loss_onset_on_lc_pays_for_no_passes():
    """Lc below 0.9 log K at some checkpoint is our loss onset; a run that never gets there has no
    lead on Lc, and the recipe does not score its z-shuffle gap."""
    from mi_plateau.reproduce.figure3 import has_loss_onset

    rec = lambda lc: {"step": 0, "metrics": {"Lc": lc}}  # noqa: E731
    log10 = math.log(10)
    assert not has_loss_onset([rec(log10), rec(0.91 * log10), rec(None)], 10)
    assert has_loss_onset([rec(log10), rec(0.89 * log10)], 10)


def _seed(e: dict, seed: int, cos_shift: float) -> dict:
    """``e`` as another data seed's run writes it: the original's lead and the windows only (no
    passes: ``a`` empty, ``onsets`` None), its cosines shifted by ``cos_shift``."""
    b = [{**r, "cos": r["cos"] + cos_shift} for r in e["b"]]
    run = e["run"].replace("seed0", f"seed{seed}")
    return e | {"run": run, "seed": seed, "a": [], "onsets": None, "b": b}


def test_other_seeds_add_lead_and_descent_rows_but_not_to_the_summary():
    entries = {"K10_seed0": K10, "K10_seed2": _seed(K10, 2, 0.1), "K10_seed1": _seed(K10, 1, -0.1)}
    lead_rows = recipe.lead_rows(entries)
    assert [(r["K"], r["seed"]) for r in lead_rows] == [(10, 0), (10, 1), (10, 2)]
    other = lead_rows[1]
    assert other["lead_frac_original_0.1"] == pytest.approx(0.2) and other["loss_onset"] is None
    assert other["note"] is None  # our Lc onsets are not read on another seed: nothing is missing
    summary = recipe.summary_rows(entries)[0]
    assert summary["n"] == 1 and summary["runs"] == 1  # seed 0's run at each K only
    d = recipe.descent_rows(entries, None)
    assert [(r["source"], r["seed"]) for r in d] == [
        (recipe.REFERENCE_SOURCE, None),
        ("ours", 0),
        ("ours", 1),
        ("ours", 2),
    ]
    assert [r["cos_pre"] for r in d[1:]] == pytest.approx([0.4, 0.3, 0.5])


def test_three_seeds_judge_a_window_by_the_prediction_interval_over_seeds():
    from mi_plateau.scorecard import claims
    from mi_plateau.scorecard import verdicts as vd

    runs = [
        {"K": 10, "cos_pre": v, "n_pre": 9, "cos_pre_lo": v - 0.01, "cos_pre_hi": v + 0.01} for v in (0.3, 0.4, 0.5)
    ]
    p = claims._window_point("K = 10 pre", 0.8, runs, "pre")
    assert p["vals"] == [0.3, 0.4, 0.5] and p["iv"] is None and p["n"] == 3
    j = vd.judge(p)
    half = vd.t975(2) * 0.1 * math.sqrt(1 + 1 / 3)  # the sd of 0.3, 0.4, 0.5 is 0.1
    assert (j["lo"], j["hi"]) == pytest.approx((0.4 - half, 0.4 + half)) and j["verdict"] == vd.CONSISTENT
    one = claims._window_point("K = 10 pre", 0.8, runs[:1], "pre")  # one run: its window mean's own interval
    assert one["vals"] == [0.3] and one["iv"] == (pytest.approx(0.29), pytest.approx(0.31))
    ref = {"cos_pre": 0.35, "cos_pre_lo": 0.34, "cos_pre_hi": 0.36}
    assert claims.agree(p, ref, "pre") and not claims.agree(one, ref, "pre")
