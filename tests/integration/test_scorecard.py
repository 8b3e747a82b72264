"""docs/scorecard.md against the committed artifacts it is read from: the committed page equals its
rebuild, it has a row per paper artifact and headline claim, a changed artifact changes its cell,
a missing one reads "not run", and the verdict follows its stated rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mi_plateau.scorecard as sc
from mi_plateau.cli import main
from mi_plateau.scorecard import verdicts as vd

DOCS = Path(__file__).resolve().parents[2] / "docs"
REPRO = DOCS / "reproduction"
CLAIMS = (
    "Claim: plateau at log K",
    "Claim: 3.6x over 7x in lr",
    "Claim: ~50% lead",
    "Claim: 16x label noise",
    "Claim: 1.8x tokens",
)
VERDICTS = set(vd.VERDICTS)


def _page_rows(text: str) -> list[list[str]]:
    """The cells of the page's table rows (header and separator left out)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[1:]]


def _row(rows: list[dict[str, str]], artifact: str) -> dict[str, str]:
    return next(r for r in rows if r["artifact"].startswith(f"{artifact}:"))


def _write(folder: Path, name: str, rows) -> None:
    (folder / name).write_text(json.dumps(rows))


def test_committed_page_equals_its_rebuild_from_the_committed_artifacts(tmp_path):
    """Rebuilt from copies of the committed files it reads, the page and its rows equal the
    committed ones: the page cannot disagree with an artifact it quotes."""
    docs = tmp_path / "reproduction"
    docs.mkdir()
    for name in sc.SOURCES:
        if (REPRO / name).exists():
            shutil.copy(REPRO / name, docs)
    sc.write_scorecard(docs, static=False)
    hint = "(run `mi-plateau reproduce scorecard`)"
    assert (tmp_path / sc.PAGE).read_text() == (DOCS / sc.PAGE).read_text(), f"{sc.PAGE}: the rebuild differs {hint}"
    for name in (f"{sc.STEM}.csv", f"{sc.STEM}.json", sc.POINTS):
        assert (docs / name).read_text() == (REPRO / name).read_text(), f"{name}: the rebuild differs {hint}"


def test_the_page_has_a_row_per_artifact_and_claim():
    rows = _page_rows((DOCS / sc.PAGE).read_text())
    names = [r[0].split(":")[0] for r in rows]
    for n in range(1, 13):
        assert names.count(f"Table {n}") == 1, f"Table {n}"
    for n in range(1, 6):
        assert any(name == f"Figure {n}" or name.startswith(f"Figure {n}(") for name in names), f"Figure {n}"
    for claim in CLAIMS:
        assert sum(r[0].startswith(f"{claim}:") for r in rows) == 1, claim
    assert len(rows) == len(sc.ROWS) == 26
    assert {r[5] for r in rows} <= VERDICTS
    assert all(r[4].startswith(("yes", "our variant", "reduced budget")) for r in rows)


@pytest.fixture
def tiny(tmp_path):
    """A hand-built docs folder holding two artifacts: the lr sweep's ratio and Table 3's taus."""
    docs = tmp_path / "reproduction"
    docs.mkdir()
    _write(docs, "lr_sweep_ratio.json", [{"definition": "paper", "ratio": 3.59}])
    _write(docs, "table3.json", [{"K": 3, "tau_paper": 475, "plateau_ratio_paper": 1.1}])
    return docs


def test_a_changed_artifact_changes_its_cell_and_a_missing_one_reads_not_run(tiny):
    rows, paths = sc.write_scorecard(tiny, static=False)
    assert paths[0] == tiny.parent / "scorecard.md" and all(p.exists() for p in paths)
    lr = _row(rows, "Claim: 3.6x over 7x in lr")
    # one run per rate and no pooled spread of the width: no interval, so nothing decided
    assert (lr["ours"], lr["n"], lr["verdict"]) == ("largest over smallest lr: 3.59 (n = 1)", "1", "inconclusive")
    assert "K = 3: 475 (n = 1)" in _row(rows, "Table 3")["ours"]
    _write(tiny, "lr_sweep_ratio.json", [{"definition": "paper", "ratio": 2.4}])
    _write(tiny, "table3.json", [{"K": 3, "tau_paper": 500}])
    rows, _ = sc.write_scorecard(tiny, static=False)
    lr = _row(rows, "Claim: 3.6x over 7x in lr")
    assert (lr["ours"], lr["verdict"]) == ("largest over smallest lr: 2.4 (n = 1)", "inconclusive")
    assert "1 run and no pooled spread of width" in lr["why"]
    assert "K = 3: 500 (n = 1)" in _row(rows, "Table 3")["ours"]
    assert "largest over smallest lr: 2.4 (n = 1)" in (tiny.parent / "scorecard.md").read_text()
    # every other artifact is missing: its row reads "not run" (Figure 3(a), Table 12 and the
    # monotone claim have no case)
    for r in rows:
        if not r["artifact"].startswith(("Claim: 3.6x", "Table 3:", "Claim: plateau")):
            assert r["verdict"] == "not run", r["artifact"]
    (tiny / "lr_sweep_ratio.json").unlink()
    assert _row(sc.scorecard(tiny), "Claim: 3.6x over 7x in lr")["verdict"] == "not run"


def test_the_core_tables_and_documents_are_read(tiny):
    """Table 6 is read from reproduce core's tables.json, the label-noise split from its document."""
    row = {"run": "a", "K": 10, "definition": "paper", "target": "0.5 tau", "ge80_pct": 0, "eq100_pct": 0}
    _write(tiny, "tables.json", {"table6": [{**row, "mean_acc": 0.154}], "table9": []})
    kept = lambda p, tau: {"K": 10, "label_noise": p, "kept": {"tau": tau}}  # noqa: E731
    _write(tiny, "label_noise_split.json", {"runs": [kept(0.0, 1000), kept(0.2, 16000)]})
    rows = sc.scorecard(tiny)
    assert (
        "K = 10, 0.5 tau % >= 80: 0.0 (n = 1); K = 10, 0.5 tau % at 100: 0.0 (n = 1); "
        "K = 10, 0.5 tau mean acc: 0.154 (n = 1)" in _row(rows, "Table 6")["ours"]
    )
    assert _row(rows, "Claim: 16x label noise")["ours"] == "p = 0.2: 16.0 (n = 1)"


def test_the_16x_claim_reads_the_estimator_where_its_replays_are_committed(tiny):
    """The abstract's 16x is the original's estimator (SPEC 7): with its replays committed the claim
    row reads them, as Figure 2(b)'s row does, and keeps our exact-crossing variant in its text."""
    kept = lambda p, tau: {"K": 10, "label_noise": p, "kept": {"tau": tau}}  # noqa: E731
    _write(tiny, "label_noise_split.json", {"runs": [kept(0.0, 1000), kept(0.2, 1200)]})
    est = {"K": 10, "p": 0.2, "replays": 2000, "steps": 40000, "clean_tau_grid": 2000, "p_no_crossing": 0.4}
    est |= {"p_le_16x_paired": 0.45, "delay_paired_q50": 18.5, "delay_paired_q05": 2.3, "delay_paired_q95": None}
    _write(tiny, "label_noise_estimator.json", [est])
    claim, fig = _row(sc.scorecard(tiny), "Claim: 16x label noise"), _row(sc.scorecard(tiny), "Figure 2(b)")
    assert claim["same_quantity"] == fig["same_quantity"] and claim["same_quantity"].startswith("yes at K = 10")
    assert claim["ours"].startswith("K = 10, estimator median [5-95%; 95% past the run's end, shown at the end]: 18.5")
    assert "18.5 [2.3, 20.0] (n = 1)" in claim["ours"]  # 5% at 2.3x, the run's end at 40,000 / 2,000
    assert "45% at most 16x" in claim["ours"] and "noise left alone: 1.20" in claim["ours"]
    assert claim["verdict"] == "inconclusive"  # 2.3 to 20.0 spans more than a factor 2
    (tiny / "label_noise_estimator.json").unlink()
    claim = _row(sc.scorecard(tiny), "Claim: 16x label noise")
    assert claim["ours"] == "p = 0.2: 1.2 (n = 1)" and claim["same_quantity"].startswith("our variant")


def test_the_command_writes_the_page(tiny, capsys):
    assert main(["reproduce", "scorecard", "--docs", str(tiny)]) == 0
    assert "| Claim: 3.6x over 7x in lr" in (tiny.parent / "scorecard.md").read_text()
    assert main(["reproduce", "scorecard", "--docs", str(tiny), "--dry-run"]) == 0
    assert "| table10.json | False |" in capsys.readouterr().out


def test_every_row_shows_n_and_the_rule_is_printed_under_the_table():
    text = (DOCS / sc.PAGE).read_text()
    header = next(line for line in text.splitlines() if line.startswith("| artifact"))
    assert [c.strip() for c in header.strip("|").split("|")][:5] == ["artifact", "paper", "ours", "n", "same_quantity"]
    assert all(r[3] for r in _page_rows(text))
    assert text.rstrip().splitlines()[-1].startswith("**Verdict**, one rule for every point")


def test_a_run_recorded_without_its_curves_is_named_with_what_cannot_be_recomputed(tiny):
    """Bad input: a K-sweep log row kept without its curves (tau hidden) reads as a named gap."""
    rows = [{"K": 3, "tau_paper": 475, "status": "finished", "run": "K3_seed0"}]
    rows.append({"K": 25, "tau_paper": None, "status": "no curves", "run": "K25_seed0"})
    _write(tiny, "table3.json", rows)
    t3 = _row(sc.scorecard(tiny), "Table 3")
    assert "K25_seed0: recorded without its curves: tau cannot be recomputed" in t3["ours"]
    assert "K = 25: —" in t3["ours"]


def test_a_run_short_of_its_crossing_is_censored_not_a_gap(tiny):
    _write(tiny, "table3.json", [{"K": 36, "tau_paper": None, "status": "running", "run": "K36_seed0", "steps": 6000}])
    _, pts = sc.judged_rows(tiny)
    k36 = next(p for p in pts if p["artifact"] == "Table 3" and p["label"] == "K = 36")
    assert k36["verdict"] == "inconclusive" and k36["note"].startswith("censored: ours > 6,000")


def test_seeds_in_the_k_sweep_pool_into_every_tau_point(tiny):
    """Three seeds at two Ks give tau its pooled spread: a K with one run then has an interval."""
    rows = [
        {"K": k, "tau_paper": t, "status": "finished", "run": f"K{k}_seed{i}"}
        for k, ts in ((5, (950, 1000, 900)), (10, (2050, 1800, 1875)))
        for i, t in enumerate(ts)
    ]
    rows.append({"K": 20, "tau_paper": 4250, "status": "finished", "run": "K20_seed0"})
    _write(tiny, "table3.json", rows)
    sp = sc.spreads(tiny)["tau"]
    assert sp.df == 4 and sp.basis == "the K sweep at K = 5 (3 runs), the K sweep at K = 10 (3 runs)"
    _, pts = sc.judged_rows(tiny)
    k20 = next(p for p in pts if p["artifact"] == "Table 3" and p["label"] == "K = 20")
    assert k20["n"] == 1 and k20["lo"] < 4250 < k20["hi"] and "pooled sd of log tau" in k20["note"]
    assert k20["verdict"] == "consistent"  # the paper's 3,950 lies inside 4,250's interval at these spreads
    rows[-1]["tau_paper"] = 6000
    _write(tiny, "table3.json", rows)
    k20 = next(p for p in sc.judged_rows(tiny)[1] if p["artifact"] == "Table 3" and p["label"] == "K = 20")
    assert k20["verdict"] == "differs" and k20["note"].endswith("half-widths")


def test_undecided_seeds_read_censored_and_eta_star_reads_its_bracket(tiny):
    """Table 4: a condition with undecided seeds is censored, not "not run"; Table 8: eta* is judged
    against our bracket (max all-succeed to min any-fail), compared at the paper's two figures."""
    t4 = {"K": 10, "lr": 0.003, "definition": "paper", "widths": [5275], "undecided": 2, "runs": 3}
    _write(tiny, "phase_boundary_table4.json", [t4])
    t8 = {"K": 10, "max_all_succeed": 0.007, "min_any_fail": 0.01, "eta_star": 0.0084, "undecided": [0, 0]}
    _write(tiny, "phase_boundary_table8.json", [t8])
    _, pts = sc.judged_rows(tiny)
    cond = next(p for p in pts if p["artifact"] == "Table 4" and p["label"] == "K = 10, lr 0.003")
    assert cond["verdict"] == "inconclusive" and cond["note"].endswith("censored: 2 of 3 seeds undecided")
    eta = next(p for p in pts if p["artifact"] == "Table 8" and p["label"] == "K = 10 eta*")
    assert (eta["lo"], eta["hi"], eta["verdict"]) == (0.007, 0.01, "consistent")
    low = next(p for p in pts if p["artifact"] == "Table 8" and p["label"] == "K = 10 max all-succeed")
    assert low["verdict"] == "inconclusive"  # one bracket, no spread: no interval
    t8["undecided"] = [1, 0]
    _write(tiny, "phase_boundary_table8.json", [t8])
    eta = next(p for p in sc.judged_rows(tiny)[1] if p["artifact"] == "Table 8" and p["label"] == "K = 10 eta*")
    assert eta["verdict"] == "inconclusive" and eta["note"].endswith("censored: 1 lr(s) undecided")


def test_a_data_seed_counts_once_across_the_core_tables_and_the_seeds_log(tiny):
    row = {"K": 10, "definition": "paper", "target": "1 tau", "ge80_pct": 30, "eq100_pct": 2}
    core = [{**row, "run": "paper_K10_nb1000_s0", "mean_acc": 0.62}]
    _write(tiny, "tables.json", {"table6": core, "table9": []})
    more = [{**row, "table": "table6", "run": f"paper_K10_s{s}_auto", "seed": s, "mean_acc": a}
            for s, a in ((0, 0.9), (1, 0.68), (2, 0.64))]  # fmt: skip
    _write(tiny, "seeds_tables.json", more)
    _, pts = sc.judged_rows(tiny)
    acc = next(p for p in pts if p["artifact"] == "Table 6" and p["label"] == "K = 10, 1 tau mean acc")
    assert acc["n"] == 3 and acc["ours"] == pytest.approx((0.62 + 0.68 + 0.64) / 3)  # seed 0 once: the core's
