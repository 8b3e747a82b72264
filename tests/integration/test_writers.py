"""Writers touch only their own files inside their own folder; a run without checkpoints and bad
values on the command line give one-line errors before any work; a boolean setting is stored as
the boolean given."""

import json
import os
import shutil

import pytest

from mi_plateau.checkpoints import Run, RunError, manifest_digest
from mi_plateau.config import with_overrides
from mi_plateau.train import train


@pytest.fixture
def partial(tmp_path, tiny_cfg):
    """A tiny run stopped at step 40 (resumable), in a folder of its own."""
    return train(with_overrides(tiny_cfg, {"max_steps": 40}), tmp_path / "run", progress=False)


def test_symlinked_resume_folder_is_refused_and_nothing_outside_is_deleted(partial, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    keep = outside / "precious.safetensors"
    keep.write_bytes(b"not yours")
    shutil.rmtree(partial.path / "resume")
    os.symlink(outside, partial.path / "resume")
    with pytest.raises(RunError, match="resume: is a symbolic link"):
        train(None, partial.path, resume=True, progress=False)
    assert keep.read_bytes() == b"not yours"


def test_symlinked_lock_is_refused_and_its_target_untouched(partial, tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("important")
    (partial.path / ".lock").unlink()
    os.symlink(target, partial.path / ".lock")
    with pytest.raises(RunError, match=r"\.lock: is a symbolic link"):
        train(None, partial.path, resume=True, progress=False)
    assert target.read_text() == "important"


def test_report_and_analyze_refuse_to_write_into_a_run_folder(tiny_run, run_cli, tmp_path):
    manifest = (tiny_run.path / "manifest.json").read_bytes()
    p = run_cli("report", str(tiny_run.path), "--out", str(tiny_run.path / "manifest.json"), cwd=tmp_path)
    assert p.returncode == 2 and "is inside the run folder" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("analyze", str(tiny_run.path), "--out", str(tiny_run.path / "an"))
    assert p.returncode == 2 and "is inside the run folder" in p.stderr
    assert (tiny_run.path / "manifest.json").read_bytes() == manifest and not (tiny_run.path / "an").exists()
    assert not (tmp_path / "analyses").exists()  # refused before any pass ran


def test_symlinked_ckpt_folder_is_refused(tmp_path, tiny_cfg):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    os.symlink(elsewhere, tmp_path / "run" / "ckpt")
    with pytest.raises(RunError, match="ckpt: is a symbolic link"):
        train(with_overrides(tiny_cfg, {"max_steps": 20}), tmp_path / "run", progress=False)
    assert not any(elsewhere.iterdir())


def test_resume_of_a_missing_run_says_there_is_nothing_to_resume(tmp_path, run_cli):
    p = run_cli("train", "--out", str(tmp_path / "TYPO"), "--resume", "--max-steps", "60")
    assert p.returncode == 2 and "nothing to resume" in p.stderr and not (tmp_path / "TYPO").exists()


def test_a_run_without_checkpoints_gives_one_line(partial, tmp_path, run_cli):
    m = json.loads((partial.path / "manifest.json").read_text())
    m["checkpoints"] = []
    m["digest"] = manifest_digest(m)
    (partial.path / "manifest.json").write_text(json.dumps(m))
    p = run_cli("analyze", str(partial.path), "--out", str(tmp_path / "an"), "--quiet")
    assert p.returncode == 2 and "no checkpoints" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["analyze", "RUN", "--shifts", "0"], "multiple of K=4"),
        (["analyze", "RUN", "--shifts", "4"], "multiple of K=4"),
        (["analyze", "RUN", "--max-checkpoints", "0"], "must be at least 1"),
        (["train", "--preset", "tiny", "--out", ""], "--out ''"),
        (["train", "--preset", "tiny", "--seed", str(2**64)], "seeds must be in [0, 2^63)"),
    ],
)
def test_bad_values_are_refused_before_any_work(tiny_run, tmp_path, run_cli, args, message):
    args = [str(tiny_run.path) if a == "RUN" else a for a in args]
    if args[0] == "analyze":
        args += ["--out", str(tmp_path / "an")]
    p = run_cli(*args, cwd=tmp_path)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "an").exists() and not (tmp_path / "checkpoints").exists()


def test_bool_override_stores_false(tmp_path, run_cli):
    """--set train.compile=false stores false (not the truthy string "false")."""
    p = run_cli(
        "train",
        "--preset",
        "tiny",
        "--max-steps",
        "20",
        "--set",
        "train.compile=false",
        "--out",
        str(tmp_path / "r"),
        "--quiet",
    )
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "r" / "config.json").read_text())["train"]["compile"] is False
    assert Run(tmp_path / "r").config().train.compile is False
    p = run_cli("train", "--preset", "tiny", "--set", "train.compile=maybe", "--out", str(tmp_path / "s"))
    assert p.returncode == 2 and "train.compile='maybe': expected true or false" in p.stderr
