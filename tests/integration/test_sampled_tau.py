"""The original's tau estimator replayed on a trained tiny run: its per-example losses average
to the checkpoint records' L_seq, its exact tau on the grid is the records', and the CLI."""

import json
import math
import shutil

import numpy as np
import pytest
import torch

from mi_plateau.api import sampled_tau, sampled_width
from mi_plateau.metrics import evaluate, example_losses, sequence_losses, sequence_scores_reference
from mi_plateau.replays.sampled import estimator_grid


def test_per_example_losses_average_to_evaluate(tiny_run):
    run = tiny_run
    ev, step = run.eval_set(), run.steps()[len(run.steps()) // 2]
    model = run.load_model(step)
    rows, means = example_losses(model, ev), evaluate(model, ev)
    assert rows["L_seq"].shape == rows["Lc"].shape == (len(ev.tokens),)
    assert float(rows["L_seq"].mean()) == pytest.approx(means["L_seq"], rel=1e-5)
    assert float(rows["Lc"].mean()) == pytest.approx(means["Lc"], rel=1e-5)
    # row by row against the plain way (every candidate string through the bridge), in the
    # group-major order the replay reshapes by: row K * i + k is group i with selector k
    K = run.config().task.K
    np.testing.assert_array_equal(ev.s, np.tile(np.arange(K), ev.n_groups))
    np.testing.assert_array_equal(ev.g, np.repeat(ev.groups, K))
    plain = sequence_losses(sequence_scores_reference(model, ev), torch.from_numpy(ev.s))[0].numpy()
    np.testing.assert_allclose(rows["L_seq"], plain, rtol=1e-4, atol=1e-5)


def test_replayed_estimator_on_a_run(tiny_run):
    run = tiny_run
    every = run.steps()[1] - run.steps()[0]
    out = sampled_tau(run, every=every, draws=400, n_sample=8)
    grid = [r for r in run.records() if r["step"] in estimator_grid(run.steps(), every)]
    thr = 0.5 * math.log(run.config().task.K)
    first = next(r["step"] for r in grid if r["metrics"]["L_seq"] < thr)
    assert out["tau_exact_grid"] == first and out["tau_recorded"] <= first  # the tiny preset scores every group
    assert out["recorded_groups"] == out["eval_groups"]
    taus = np.array([t for t in out["taus"] if t is not None])
    assert len(out["taus"]) == 400 and out["p_none"] == 0 and len(taus) == 400
    assert out["min"] <= out["q05"] <= out["q50"] <= out["q95"] <= out["max"] and out["mean"] == pytest.approx(
        taus.mean()
    )
    assert set(taus) <= {r["step"] for r in grid}
    again = sampled_tau(run, every=every, draws=400, n_sample=8)
    assert again["taus"] == out["taus"]  # seeded: the same replays
    if len(set(taus)) > 1:  # replays that differ under one seed differ under another
        assert sampled_tau(run, every=every, draws=400, n_sample=8, seed=1)["taus"] != out["taus"]


def out_steps(records):
    return [r["step"] for r in records]


def test_replayed_width_on_a_run(tiny_run):
    from mi_plateau.summaries import transition_width

    run = tiny_run
    every = run.steps()[1] - run.steps()[0]
    out = sampled_width(run, every=every, draws=300, n_sample=8)
    grid = [r for r in run.records() if r["step"] in estimator_grid(run.steps(), every)]
    log_K = run.config().task.log_K
    want = transition_width([r["step"] for r in grid], [r["metrics"]["L_seq"] for r in grid], log_K)
    assert want[2] is not None and tuple(out["width_exact_grid"]) == want  # the tiny preset scores every group
    widths = [w for w in out["widths"] if w is not None]
    assert len(out["widths"]) == 300 and widths and out["tau_width"]["mean"] == pytest.approx(np.mean(widths))
    assert set(widths) <= {b - a for a in [0, *out_steps(grid)] for b in out_steps(grid)}  # grid differences
    assert out["t_end"]["min"] <= want[1]  # some noisy estimate is below the line no later than the mean
    assert out["dense_from"] == run.steps()[0] and out["t_start_before_dense"] == 0.0
    assert sampled_width(run, every=every, draws=300, n_sample=8)["widths"] == out["widths"]  # seeded


def test_shared_losses_score_each_checkpoint_once_and_change_nothing(tiny_run, tmp_path):
    from mi_plateau.checkpoints import Run
    from mi_plateau.replays.sampled import ExampleLosses

    run = tiny_run
    every = run.steps()[1] - run.steps()[0]
    settings = {"every": every, "draws": 200, "n_sample": 8}
    alone = sampled_tau(run, **settings), sampled_width(run, **settings)
    shared = ExampleLosses(run)
    both = sampled_tau(run, **settings, shared=shared), sampled_width(run, **settings, shared=shared)
    assert both[0]["taus"] == alone[0]["taus"] and both[1]["widths"] == alone[1]["widths"]
    for a, b in zip(alone, both):
        assert a["checkpoints_scored"] == b["checkpoints_scored"]  # what each replay read
    assert len(shared.scored) == len(set(shared.scored))  # no step scored twice
    read = max(b["checkpoints_scored"] for b in both)
    assert len(shared.scored) == read < alone[0]["checkpoints_scored"] + alone[1]["checkpoints_scored"]
    copy = Run(shutil.copytree(run.path, tmp_path / "copy"))
    with pytest.raises(ValueError, match="the shared losses belong to"):
        sampled_tau(copy, **settings, shared=shared)  # another run's losses are refused


def test_kept_losses_are_read_back_exactly_and_only_new_checkpoints_are_scored(tiny_run, tmp_path, monkeypatch):
    """With a ``keep`` folder each checkpoint's scores go to disk: a second scorer reads them
    back equal to the float64 values the first computed, without computing; a checkpoint
    rewritten with other weights (another checksum) is scored again."""
    import mi_plateau.metrics as metrics
    from mi_plateau.replays.example_losses import ExampleLosses

    run, keep = tiny_run, tmp_path / "kept"
    steps = run.steps()[:3]
    first = ExampleLosses(run, keep=keep)
    want = {s: first.at(s) for s in steps}
    assert len(list(keep.glob("step_*.safetensors"))) == 3

    def refuse(*a, **k):
        raise AssertionError("scored again")

    monkeypatch.setattr(metrics, "example_losses", refuse)
    again = ExampleLosses(run, keep=keep)
    for s in steps:
        for k, v in want[s].items():
            np.testing.assert_array_equal(again.at(s)[k], v)
            assert again.at(s)[k].dtype == np.float64
    monkeypatch.setattr(type(run), "weights_sha256", lambda self, st: {x: "0" * 64 for x in st})
    with pytest.raises(AssertionError, match="scored again"):
        ExampleLosses(run, keep=keep).at(steps[0])  # another checksum: not the kept file


@pytest.mark.long
def test_cli_sampled_tau(tiny_run, run_cli):
    every = tiny_run.steps()[1]
    p = run_cli("summary", str(tiny_run.path), "--sampled-tau", "--every", str(every), "--draws", "50", "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["sampled_tau"]["draws"] == 50 and s["sampled_tau"]["every"] == every and s["tau"] is not None
    p = run_cli("summary", str(tiny_run.path), "--sampled-tau", "--every", str(every), "--draws", "50")
    assert p.returncode == 0 and "tau by the original's estimator" in p.stdout and "50 replays" in p.stdout
    p = run_cli("summary", str(tiny_run.path), "--sampled-width", "--every", str(every), "--draws", "50", "--json")
    assert p.returncode == 0, p.stderr
    w = json.loads(p.stdout)["sampled_width"]
    assert w["draws"] == 50 and len(w["widths"]) == 50 and "sampled_tau" not in json.loads(p.stdout)
    p = run_cli("summary", str(tiny_run.path), "--sampled-width", "--every", str(every), "--draws", "50")
    assert p.returncode == 0 and "transition width by the original's estimator" in p.stdout
    p = run_cli(
        "summary",
        str(tiny_run.path),
        "--sampled-tau",
        "--sampled-width",
        "--every",
        str(every),
        "--draws",
        "50",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    both = json.loads(p.stdout)  # one scoring serves both replays, and changes neither
    assert both["sampled_tau"]["taus"] == s["sampled_tau"]["taus"] and both["sampled_width"]["widths"] == w["widths"]
    p = run_cli("summary", str(tiny_run.path), "--sampled-tau", "--every", "1000000")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "fewer than two checkpoints" in p.stderr
    steps = tiny_run.steps()
    fine = min(b - a for a, b in zip(steps, steps[1:]))  # the transition's denser checkpoints
    assert 2 * fine <= every  # the tiny preset has them, so a grid at that spacing has holes on the plateau
    p = run_cli("summary", str(tiny_run.path), "--sampled-tau", "--every", str(fine))
    assert (
        p.returncode == 2
        and len(p.stderr.strip().splitlines()) == 1
        and f"too sparse for an estimate every {fine}" in p.stderr
    )
    p = run_cli("summary", str(tiny_run.path), "--sampled-width", "--every", str(fine))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "where the width's start" in p.stderr
    p = run_cli("summary", str(tiny_run.path), "--sampled-width", "--every", "1000000")
    assert p.returncode == 2 and "fewer than two checkpoints" in p.stderr
    p = run_cli("summary", str(tiny_run.path), "--draws", "50")
    assert p.returncode == 2 and p.stderr.strip().endswith("--draws applies to --sampled-tau and --sampled-width only")
