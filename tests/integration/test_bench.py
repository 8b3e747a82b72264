"""Smoke test of ``mi-plateau bench`` on the tiny preset: every benchmark runs, the references
compute the same numbers as the toolkit, the report renders. No timing assertions."""

import math

import pytest


@pytest.mark.long
def test_bench_smoke(tiny_cfg, tiny_run, tmp_path):
    from mi_plateau import bench

    res = bench.run_benchmarks(quick=True, cfg=tiny_cfg, e2e_run=None)
    train = res["train"]["candidates"]
    assert set(train) == set(bench.QUICK_CANDIDATES)
    for row in train.values():
        assert row["ms_per_step"] > 0 and math.isfinite(row["gflops"])
        assert row["max_abs_loss_diff"] < 1e-4  # fast path and plain module train like the bridge
    for row in res["passes"]["rows"].values():
        assert row["max_abs_diff"] < 1e-4  # TransformerLens loop reference == batched passes
    assert res["overhead"]["evaluate_plain_max_abs_diff"] < 1e-4
    assert 0 < res["overhead"]["share_every_20"] < 1

    e2e = bench.bench_end_to_end(tiny_run.path)
    assert e2e["n_checkpoints"] == len(tiny_run.records()) and e2e["train_wall_s"] > 0
    assert "skipped" in bench.bench_end_to_end(tmp_path / "missing")

    res["end_to_end"] = e2e
    md = bench.to_markdown(res)
    assert "| toolkit |" in md and "End to end" in md


def test_bench_one_section(tiny_cfg):
    from mi_plateau import bench

    res = bench.run_benchmarks(quick=True, cfg=tiny_cfg, e2e_run=None, only="passes")
    assert "passes" in res and "train" not in res and "overhead" not in res
    md = bench.to_markdown(res)
    assert "Analysis passes" in md and "Training step" not in md

    with pytest.raises(ValueError, match="bench section"):
        bench.run_benchmarks(quick=True, cfg=tiny_cfg, only="everything")


def test_the_precision_section_splits_each_step_into_matmuls_and_the_rest(tiny_cfg):
    """Every candidate's profiled step is its matmuls plus the rest, each positive; the table
    prints them beside the plain step's."""
    from mi_plateau import bench

    res = bench.run_benchmarks(quick=True, cfg=tiny_cfg, e2e_run=None, only="precision")
    rows = res["train"]["candidates"]
    assert set(rows) == {"toolkit", "toolkit+fp32", "plain"}
    assert all(r["matmul_ms"] > 0 and r["other_ms"] > 0 for r in rows.values())
    md = bench.to_markdown(res)
    assert "| plain |" in md and "matmul ms/step" in md and "| 1.00 | 1.00 |" in md


@pytest.mark.long
def test_bench_sweep_section_on_tiny():
    """The batched-trainer throughput table: every configuration runs in its own processes, the
    ratios are taken against the rows they name. No timing assertions."""
    from mi_plateau.bench.sweep import bench_sweep, sweep_lines

    res = bench_sweep(True, "tiny", ms=(1, 2))
    rows = {r["configuration"]: r for r in res["rows"]}
    assert "batched M=2, 1 process, 1 thread" in rows and rows["batched M=2, 1 process, 1 thread"]["runs"] == 2
    assert rows["single run, 1 thread"]["vs_single_1_thread"] == 1.0
    singles = [r for k, r in rows.items() if "single" in k]
    assert max(r["vs_best_single_config"] for r in singles) == 1.0
    for r in res["rows"]:
        assert r["run_steps_per_s"] > 0
        assert math.isclose(
            r["vs_single_1_thread"], r["run_steps_per_s"] / rows["single run, 1 thread"]["run_steps_per_s"]
        )
    assert len(sweep_lines(res)) == 5 + len(res["rows"])  # blank, title, blank, header, rule, rows


def test_eval_share_section_on_a_small_K():
    """The evaluation-share section at one small K: every kind timed, shares positive, the
    guarded checkpoint's first-token losses cheaper than the whole first-token family."""
    from mi_plateau.bench.evaluation import KINDS, bench_eval_share
    from mi_plateau.bench.runner import _eval_lines

    rows = bench_eval_share(Ks=(3,), subset=5, reps=1)
    (r,) = rows
    assert r["K"] == 3 and r["strings_full"] == 200 * 3 * 2
    assert all(r[f"{k}_share"] > 0 for k in KINDS)
    text = "\n".join(_eval_lines(rows))
    assert "first-token losses (A1 only)" in text and text.count("|") > 20


def test_bench_command_writes_the_markdown_and_with_json_the_numbers_beside_it(tmp_path, monkeypatch, capsys):
    import argparse
    import json

    from mi_plateau import bench
    from mi_plateau.commands.recipes import cmd_bench

    monkeypatch.setattr(bench, "run_benchmarks", lambda **kw: {"only": kw["only"], "x": float("nan")})
    monkeypatch.setattr(bench, "to_markdown", lambda res: "| table |")
    out = tmp_path / "eval.md"
    args = argparse.Namespace(quick=False, only="eval", device="cpu", out=str(out), json=True)
    assert cmd_bench(args) == 0
    assert out.read_text() == "| table |"
    assert json.loads(out.with_suffix(".json").read_text()) == {"only": "eval", "x": None}
    assert json.loads(capsys.readouterr().out) == {"only": "eval", "x": None}
    (tmp_path / "eval.json").unlink()
    assert cmd_bench(argparse.Namespace(**{**vars(args), "json": False})) == 0
    assert not (tmp_path / "eval.json").exists() and "| table |" in capsys.readouterr().out
    with pytest.raises(ValueError, match="names the Markdown file"):  # the JSON would overwrite it
        cmd_bench(argparse.Namespace(**{**vars(args), "out": str(out.with_suffix(".json"))}))


def test_price_section_prices_a_run_by_its_probe(monkeypatch):
    """The price section trains a run, probes its shape and compares: the estimate is the probe's
    seconds per step and per evaluation times the run's own steps and evaluations."""
    import mi_plateau.bench.price as price
    from mi_plateau.bench import run_benchmarks, to_markdown

    monkeypatch.setattr(price, "QUICK_SHAPES", (("tiny", 3, 100),))
    res = run_benchmarks(quick=True, only="price")
    (r,) = res["price"]
    assert r["steps"] <= 100 and r["evaluations"] >= 2 and r["measured_s"] > 0
    assert r["estimate_s"] == pytest.approx(r["steps"] * r["s_step"] + r["evaluations"] * r["s_eval"])
    assert r["estimate_over_measured"] == pytest.approx(r["estimate_s"] / r["measured_s"])
    assert "The dry run's prices against measured runs" in to_markdown(res)
