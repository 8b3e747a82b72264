"""Tracker logging (``train.log``, ``train.tracking``): what TensorBoard's event files hold is the
run's checkpoint records and the summary's crossings, step for step; a run logged (and resumed
after a kill) trains the same weights and records as one that is not; a missing tracker package
or an unknown tracker is refused in one line before any work; the trackers' packages are not
imported until a run asks for one."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from mi_plateau.checkpoints import Run
from mi_plateau.cli import main
from mi_plateau.config import extends, preset, run_name, with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.summaries import family_summary

# L_seq on 12 of the 48 groups: its crossings are estimates with intervals; 260 steps pass both taus
TRAIN = ("train", "--preset", "tiny", "--max-steps", "260", "--set", "eval.live_groups=12", "--quiet")
KILL_AT = "step:150"  # the logged run is killed here and resumed


def expected_scalars(cfg, records) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] as the records say, written out here from the records themselves:
    train/<key> for the top-level numbers, eval/<key> for the metrics, crossing/<family>/<key> for
    the summary's crossings (tau, t_start, t_end, tau_width and their _lo, _hi) as known at each
    checkpoint."""
    out: dict[str, list[tuple[int, float]]] = {}

    def add(tag, step, v):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.setdefault(tag, []).append((step, float(v)))

    for i, r in enumerate(records):
        for k, v in r.items():
            if k != "step":
                add(f"train/{k}", r["step"], v)
        for k, v in r["metrics"].items():
            add(f"eval/{k}", r["step"], v)
        for fam in ("paper", "first_token"):
            s = family_summary(cfg, records[: i + 1], fam)
            for name in ("tau", "t_start", "t_end", "tau_width"):
                for key in (name, f"{name}_lo", f"{name}_hi"):
                    add(f"crossing/{fam}/{key}", r["step"], s[key])
    return out


def events(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def same_float32(a: float, b: float) -> bool:
    """Event files hold float32: ``b`` (a record's value) as TensorBoard stores it is ``a``."""
    return (math.isnan(a) and math.isnan(b)) or a == float(np.float32(b))


@pytest.fixture(scope="module")
def logged_and_plain(tmp_path_factory, run_cli):
    """The same tiny run trained twice: with --log tensorboard (killed at ``KILL_AT``, then resumed
    with its stored config) and without."""
    pytest.importorskip("tensorboard")
    root = tmp_path_factory.mktemp("tracking")
    logged, plain = root / "logged", root / "plain"
    p = run_cli(*TRAIN, "--log", "tensorboard", "--out", logged, env={"MI_PLATEAU_CRASH": KILL_AT})
    assert p.returncode == 137, p.stderr
    p = run_cli("train", "--out", logged, "--resume", "--quiet")
    assert p.returncode == 0, p.stderr
    p = run_cli(*TRAIN, "--out", plain)
    assert p.returncode == 0, p.stderr
    return Run(logged), Run(plain)


def test_event_files_hold_the_records_and_crossings(logged_and_plain):
    run, _ = logged_and_plain
    cfg, records = run.config(), run.records(settled=False)
    assert len(list((run.path / "tb").glob("events.out.tfevents.*"))) == 2  # one per process: the kill, the resume
    want = expected_scalars(cfg, records)
    ea = events(run.path / "tb")
    assert set(ea.Tags()["scalars"]) == set(want)
    for tag, series in want.items():
        got = [(e.step, e.value) for e in ea.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in series], tag  # every checkpoint once, in order
        assert all(same_float32(a, b) for (_, a), (_, b) in zip(got, series)), tag
    # what was asked for is there: both families' losses, the candidate accuracy, the swap gap,
    # the training loss and gradient norms, and both taus with intervals that are not one point
    for tag in ("eval/L_seq", "eval/Lc", "eval/L1", "eval/cand_acc", "eval/swap_gap"):
        assert len(want[tag]) == len(records), tag
    assert len(want["train/train_loss"]) == len(records) - 1  # step 0 has no training loss yet
    assert {"train/grad_norm_mean", "train/train_first_loss", "crossing/first_token/tau"} <= set(want)
    s = run_summary(run)
    for fam in ("paper", "first_token"):
        last = s["definitions"][fam]
        for key in ("tau", "tau_lo", "tau_hi"):
            assert ea.Scalars(f"crossing/{fam}/{key}")[-1].value == last[key], (fam, key)
    assert any(lo != hi for (_, lo), (_, hi) in zip(want["crossing/paper/tau_lo"], want["crossing/paper/tau_hi"]))


def test_the_config_is_logged_once_as_text(logged_and_plain):
    run, _ = logged_and_plain
    texts = events(run.path / "tb").Tensors("config/text_summary")
    assert [t.step for t in texts] == [0]  # the resume added no second copy
    text = texts[0].tensor_proto.string_val[0].decode()
    assert text.startswith("```json\n") and text.endswith("\n```")
    assert json.loads(text.removeprefix("```json\n").removesuffix("\n```")) == run.config().to_dict()


def test_logging_changes_no_weight_and_no_record(logged_and_plain):
    logged, plain = logged_and_plain
    assert logged.records(settled=False) == plain.records(settled=False)
    ma, mb = logged.manifest()["checkpoints"], plain.manifest()["checkpoints"]
    assert [c["sha256"] for c in ma] == [c["sha256"] for c in mb]  # bit-identical weights at every checkpoint
    for a, b in zip(ma, mb):
        ra, rb = (json.loads((r.path / c["record_file"]).read_text()) for r, c in ((logged, a), (plain, b)))
        assert {k: v for k, v in ra.items() if k not in ("wall_s", "eval_s")} == {
            k: v for k, v in rb.items() if k not in ("wall_s", "eval_s")
        }
    ca, cb = logged.config().to_dict(), plain.config().to_dict()
    assert ca["train"].pop("log") == "tensorboard" and cb["train"].pop("log") == "none" and ca == cb


def test_logging_switched_on_at_a_resume_logs_only_the_new_checkpoints(tmp_path, run_cli):
    pytest.importorskip("tensorboard")
    out = tmp_path / "r"
    assert run_cli("train", "--preset", "tiny", "--max-steps", "40", "--out", out, "--quiet").returncode == 0
    p = run_cli("train", "--out", out, "--resume", "--max-steps", "80", "--log", "tensorboard", "--quiet")
    assert p.returncode == 0, p.stderr
    run = Run(out)
    assert run.config().train.log == "tensorboard"
    steps = [r["step"] for r in run.records(settled=False)]
    ea = events(out / "tb")
    assert [e.step for e in ea.Scalars("eval/Lc")] == [s for s in steps if s > 40]
    assert [t.step for t in ea.Tensors("config/text_summary")] == [40]  # the log begins at the resume


def test_batched_runs_each_log_into_their_own_folder(tmp_path, run_cli):
    pytest.importorskip("tensorboard")
    cfg = with_overrides(preset("tiny"), {"max_steps": 40, "log": "tensorboard"})
    items = [{"out": str(tmp_path / f"K{k}"), "config": with_overrides(cfg, {"K": k}).to_dict()} for k in (3, 4)]
    (tmp_path / "runs.json").write_text(json.dumps(items))
    p = run_cli("train-batch", tmp_path / "runs.json", "--quiet")
    assert p.returncode == 0, p.stderr
    for k in (3, 4):
        run = Run(tmp_path / f"K{k}")
        lc = [(r["step"], r["metrics"]["Lc"]) for r in run.records(settled=False)]
        got = [(e.step, e.value) for e in events(run.path / "tb").Scalars("eval/Lc")]
        assert [s for s, _ in got] == [s for s, _ in lc]
        assert all(same_float32(a, b) for (_, a), (_, b) in zip(got, lc))


def test_an_unknown_tracker_is_refused_in_one_line(tmp_path, capsys):
    assert main(["train", "--preset", "tiny", "--log", "nonsense", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "train.log='nonsense'" in err[0] and "none, tensorboard, wandb" in err[0], err
    assert not (tmp_path / "r").exists()


def test_wandb_without_its_package_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails as it does where it is not installed
    assert main(["train", "--preset", "tiny", "--log", "wandb", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the wandb package is not installed" in err[0] and "mi-plateau[wandb]" in err[0], err
    assert not (tmp_path / "r").exists()


def test_wandb_logs_the_records_offline_in_the_run_folder(tmp_path, capsys, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    seen: dict = {"init": [], "log": []}
    real_init = wandb.init

    def spy(**kw):
        seen["init"].append(kw)
        r = real_init(**kw)
        real_log = r.log
        r.log = lambda data, step=None, **k: (seen["log"].append((step, dict(data))), real_log(data, step=step, **k))
        return r

    monkeypatch.setattr(wandb, "init", spy)
    out = tmp_path / "r"
    assert main(["train", "--preset", "tiny", "--max-steps", "40", "--log", "wandb", "--out", str(out), "--quiet"]) == 0
    assert main(["train", "--out", str(out), "--resume", "--max-steps", "60", "--quiet"]) == 0
    run = Run(out)
    records = run.records(settled=False)
    assert [s for s, _ in seen["log"]] == [r["step"] for r in records]  # the resume logged only its own
    assert all(d["eval/Lc"] == r["metrics"]["Lc"] for (_, d), r in zip(seen["log"], records))
    a, b = seen["init"]
    assert a["mode"] == "offline" and a["dir"] == str(out) and a["id"] == b["id"]  # the resume continues it
    assert b["config"] == run.config().to_dict()
    assert len(list((out / "wandb").glob("offline-run-*"))) == 2


def test_the_setting_leaves_the_run_name_and_resumes_alone():
    cfg = preset("tiny")
    logged = with_overrides(cfg, {"log": "wandb"})
    assert run_name(logged) == run_name(cfg)
    assert extends(cfg, logged) and extends(logged, cfg)


def test_the_tracker_packages_are_imported_only_when_asked():
    code = (
        "import sys; import mi_plateau.train, mi_plateau.train.batched; from mi_plateau.cli import build_parser; "
        "build_parser(); print(*(m in sys.modules for m in ('tensorboard', 'torch.utils.tensorboard', 'wandb')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False", "False"], out.stderr


@pytest.mark.long  # a process per point
def test_a_sweeps_runs_each_log_into_their_own_folder(tmp_path):
    pytest.importorskip("tensorboard")
    from mi_plateau.sweeps import RunOptions, load_sweep, run_sweep

    f = tmp_path / "s.toml"
    f.write_text(
        'name = "logged"\npreset = "tiny"\n[overrides]\nmax_steps = 30\nlog = "tensorboard"\n[grid]\nK = [3, 4]\n'
    )
    sweep = load_sweep(f)
    run_sweep(sweep, RunOptions(root=tmp_path, jobs=1, progress=False))
    for p in sweep.points:
        run = Run(tmp_path / "logged" / p.name)
        assert run.config().train.log == "tensorboard"
        lc = [(r["step"], r["metrics"]["Lc"]) for r in run.records(settled=False)]
        got = [(e.step, e.value) for e in events(run.path / "tb").Scalars("eval/Lc")]
        assert [s for s, _ in got] == [s for s, _ in lc] and all(same_float32(a, b) for (_, a), (_, b) in zip(got, lc))


def test_every_choice_of_the_setting_is_a_tracker():
    from mi_plateau.config import settings
    from mi_plateau.train.tracking import TRACKERS

    choices = next(s.choices for k, _, s in settings() if k == "train.log")
    assert set(choices) == {"none", *TRACKERS}
