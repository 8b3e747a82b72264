"""Table 12 from hand-built artifacts: each row's number read from its file, each verdict by its
stated rule, a missing artifact "not measured", a broken one refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mi_plateau import paper
from mi_plateau.checkpoints import RunError
from mi_plateau.cli import main
from mi_plateau.scorecard.controls import table12, write_controls


def _write(docs: Path, name: str, rows) -> None:
    (docs / name).write_text(json.dumps(rows))


def _table6(rows: list[dict]) -> str:
    """``reproduce core``'s tables.json holding ``rows`` as Table 6."""
    return json.dumps({"table3": [], "table6": rows, "table9": []})


@pytest.fixture
def docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    _write(d, "table12_beta.json", [{"beta": 0.03, "n_G": 2, "n_runs": 4, "paper_beta": 0.02}])
    _write(
        d, "lr_sweep_ratio.json", [{"definition": "paper", "ratio": 2.5}, {"definition": "first_token", "ratio": 0.5}]
    )
    _write(
        d,
        "table1_noclip.json",
        [
            {"definition": "paper", "B": 32, "tau_examples_k": None, "not_reached_by": 40000},
            {"definition": "paper", "B": 64, "tau_examples_k": 600.0, "not_reached_by": None},
            {"definition": "paper", "B": 128, "tau_examples_k": 400.0, "not_reached_by": None},
            {"definition": "first_token", "B": 32, "tau_examples_k": 1.0, "not_reached_by": None},
        ],
    )
    (d / "tables.json").write_text(
        _table6(
            [
                {"run": "a", "definition": "paper", "target": "0.5 tau", "ge80_pct": 0},
                {"run": "b", "definition": "paper", "target": "0.5 tau", "ge80_pct": 4.5},
                {"run": "b", "definition": "paper", "target": "1 tau", "ge80_pct": 60},
                {"run": "b", "definition": "first_token", "target": "0.5 tau", "ge80_pct": 90},
            ]
        )
    )
    _write(
        d,
        "fixed_d_fit.json",
        [{"fit": "tau ~ K^delta at fixed D, paper definition", "slope": 0.01, "ci_lo": -0.2, "ci_hi": 0.2, "n": 6}],
    )
    _write(d, "linear_control.json", {"table12": [{"K": 10, "ratio_to_logK": 1.003, "steps": 30000}]})
    return d


def _by_key(rows):
    return dict(zip(paper.TABLE12, rows))


def test_every_row_reads_its_artifact_and_applies_its_rule(docs):
    rows = _by_key(table12(docs))
    assert [r["hypothesis"] for r in rows.values()] == [v["hypothesis"] for v in paper.TABLE12.values()]
    assert (
        rows["cancellation"]["verdict"] == "falsified"
        and "beta = 0.0300 over 2 G (4 runs)" in rows["cancellation"]["ours"]
    )
    # lr: 2.5x slower at the larger lr; B = 32 no escape by 40,000 steps: >= 32 x 40000 / 1000 / 400 = 3.2x
    assert "2.50x" in rows["barrier"]["ours"] and ">= 3.20x" in rows["barrier"]["ours"]
    assert rows["barrier"]["verdict"] == "falsified"
    assert rows["coverage"]["ours"] == "a: 0% of groups >= 80% at tau / 2; b: 4.5% of groups >= 80% at tau / 2"
    assert rows["coverage"]["verdict"] == "falsified"
    assert rows["label_noise"]["verdict"] == "not measured"  # no label_noise.json
    assert (
        rows["k_effect"]["verdict"] == "falsified"
        and "delta = 0.010 [-0.200, 0.200] (n = 6)" == rows["k_effect"]["ours"]
    )
    assert rows["linear"]["verdict"] == "falsified"


def test_verdicts_follow_the_numbers(docs):
    _write(docs, "table12_beta.json", [{"beta": -0.8, "n_G": 3, "n_runs": 6}])
    _write(docs, "lr_sweep_ratio.json", [{"definition": "paper", "ratio": 0.5}])
    _write(
        docs,
        "table1_noclip.json",
        [
            {"definition": "paper", "B": 32, "tau_examples_k": 300.0},
            {"definition": "paper", "B": 64, "tau_examples_k": 400.0},
        ],
    )
    _write(docs, "fixed_d_fit.json", [{"fit": "x, paper definition", "slope": 0.6, "ci_lo": 0.4, "ci_hi": 0.8, "n": 6}])
    _write(docs, "linear_control.json", {"table12": [{"K": 10, "ratio_to_logK": 1.0}, {"K": 20, "ratio_to_logK": 0.5}]})
    _write(
        docs,
        "label_noise.json",
        [{"K": 10, "label_noise": 0.2, "delay": 3.0}, {"K": 10, "label_noise": 0.0, "delay": 1.0}],
    )
    (docs / "tables.json").write_text(
        _table6([{"run": "a", "definition": "paper", "target": "0.5 tau", "ge80_pct": 30}])
    )
    rows = _by_key(table12(docs))
    assert rows["cancellation"]["verdict"] == "supported"
    assert rows["barrier"]["verdict"] == "supported"  # faster at the larger lr and at the smaller batch (0.75x)
    assert "0.75x" in rows["barrier"]["ours"]
    assert rows["coverage"]["verdict"] == "unclear"
    assert rows["k_effect"]["verdict"] == "supported"
    assert rows["linear"]["verdict"] == "supported"
    source = "label_noise.json (reproduce label_noise), label_noise_split.json (mi-plateau noise-split)"
    assert {k: rows["label_noise"][k] for k in ("ours", "verdict", "source")} == {
        "ours": "K = 10: 3.00x at p = 0.2",
        "verdict": "delay only",
        "source": source,
    }
    # the kept examples' clock decides: at K = 10 p = 0.2 crosses earlier than p = 0, at K = 20 never
    split = [
        {"K": 10, "label_noise": 0.0, "last_step": 2200, "kept": {"tau": 2000}},
        {"K": 10, "label_noise": 0.05, "last_step": 8000, "kept": {"tau": 2100}},
        {"K": 10, "label_noise": 0.2, "last_step": 6000, "kept": {"tau": 1500}},
        {"K": 20, "label_noise": 0.2, "last_step": 9000, "kept": {"tau": None}},
    ]
    _write(docs, "label_noise_split.json", {"runs": split})
    row = _by_key(table12(docs))["label_noise"]
    assert row["ours"] == (
        "K = 10: 3.00x at p = 0.2; on the examples the noise left alone: K = 10: 1.05x at p = 0.05, "
        "K = 10: 0.75x at p = 0.2"
    )  # K = 20 has no run without noise to compare with
    assert row["verdict"] == "supported"
    _write(
        docs,
        "label_noise_split.json",
        {"runs": [*split, {"K": 20, "label_noise": 0.0, "last_step": 3000, "kept": {"tau": 2500}}]},
    )
    row = _by_key(table12(docs))["label_noise"]
    assert row["ours"].endswith("K = 20: >= 3.60x at p = 0.2 (no tau by 9000)") and row["verdict"] == "unclear"
    split[2]["kept"]["tau"] = 2000  # as late as without noise: no speed-up
    _write(docs, "label_noise_split.json", {"runs": split})
    assert _by_key(table12(docs))["label_noise"]["verdict"] == "falsified"
    _write(docs, "table12_beta.json", [{"beta": 0.0, "n_G": 1, "n_runs": 1}])  # one G: no slope
    assert _by_key(table12(docs))["cancellation"]["verdict"] == "not measured"


def test_missing_artifacts_are_not_measured(tmp_path):
    rows = table12(tmp_path)
    assert {r["verdict"] for r in rows} == {"not measured"}
    assert all(r["paper_verdict"] for r in rows)


def test_a_broken_artifact_is_refused_in_one_line_and_nothing_is_written(docs):
    (docs / "fixed_d_fit.json").write_text("{not json")
    with pytest.raises(RunError, match=r"fixed_d_fit.json: not readable as JSON") as e:
        write_controls(docs)
    assert "\n" not in str(e.value)
    assert not (docs / "table12.md").exists()


def test_the_command_writes_table12(docs, capsys):
    assert main(["reproduce", "controls", "--docs", str(docs)]) == 0
    written = json.loads((docs / "table12.json").read_text())
    assert [r["verdict"] for r in written] == [r["verdict"] for r in table12(docs)]
    assert "Verdict rules" in (docs / "table12.md").read_text()
    assert main(["reproduce", "controls", "--docs", str(docs), "--dry-run"]) == 0
    assert "| label_noise.json | False |" in capsys.readouterr().out
    assert main(["reproduce", "controls", "--docs", str(docs), "--only", "x"]) == 2
    assert "reproduce controls: --only does not apply (it applies to: the sweep recipes" in capsys.readouterr().err


def test_edge_cases_read_not_measured_rather_than_a_verdict(docs):
    rows = lambda: _by_key(table12(docs))  # noqa: E731
    # the smallest batch is the only one that escaped: nothing to compare it with
    _write(docs, "lr_sweep_ratio.json", [])
    _write(docs, "table1_noclip.json", [{"definition": "paper", "B": 32, "tau_examples_k": 300.0}])
    assert rows()["barrier"]["verdict"] == "not measured"
    # no width at an end of the lr range: the rates that have one decide, and say so
    partial = [
        {"definition": "paper", "range": "all rates", "lr_range": "0.0003 to 0.002", "ratio": None},
        {"definition": "paper", "range": "rates with a width", "lr_range": "0.001 to 0.002", "ratio": 1.5},
    ]
    _write(docs, "lr_sweep_ratio.json", partial)
    got = rows()["barrier"]
    assert got["verdict"] == "falsified" and "(0.001 and 0.002) = 1.50x" in got["ours"]
    _write(docs, "lr_sweep_ratio.json", partial[:1])
    assert rows()["barrier"]["verdict"] == "not measured"
    # a smallest batch stopped before it saw the examples the larger batch needed: no bound
    _write(
        docs,
        "table1_noclip.json",
        [
            {"definition": "paper", "B": 32, "tau_examples_k": None, "not_reached_by": 1000},
            {"definition": "paper", "B": 128, "tau_examples_k": 400.0},
        ],
    )
    assert rows()["barrier"]["verdict"] == "not measured"
    assert "too few to compare" in rows()["barrier"]["ours"]
    # a smallest batch recorded without its curves is named, not silently dropped
    _write(
        docs,
        "table1_noclip.json",
        [
            {"definition": "paper", "B": 32, "tau_examples_k": None, "not_reached_by": None, "status": "no curves"},
            {"definition": "paper", "B": 128, "tau_examples_k": 400.0},
        ],
    )
    assert rows()["barrier"]["ours"].endswith("BS: not measured (B = 32: no curves)")
    # a linear-control K without its ratio: no verdict
    _write(
        docs, "linear_control.json", {"table12": [{"K": 10, "ratio_to_logK": 1.0}, {"K": 20, "ratio_to_logK": None}]}
    )
    assert rows()["linear"]["verdict"] == "not measured"
    # beta between the bands
    _write(docs, "table12_beta.json", [{"beta": -0.3, "n_G": 3, "n_runs": 3}])
    assert rows()["cancellation"]["verdict"] == "unclear"


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("table12_beta.json", '{"beta": 0.1}', "expected a table"),
        ("fixed_d_fit.json", "[1, 2]", "expected a table"),
        ("linear_control.json", "[]", "expected a JSON object"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused_in_one_line(docs, name, text, message):
    (docs / name).write_text(text)
    with pytest.raises(RunError, match=message) as e:
        table12(docs)
    assert name in str(e.value) and "\n" not in str(e.value)
