"""Crash and resume: a run killed at any moment of its writes loads as its last committed
checkpoint (at most one interval lost) and resumes to the uninterrupted run, bit for bit.

A tiny run of 60 steps checkpoints at steps 0, 20, 40 and 60; each checkpoint writes its
weights, its record, its resume state, then the manifest (the commit point), each file to a
temporary name, fsynced, renamed. The kill cases end a training subprocess (``os._exit(137)``,
as kill -9 would) at a named write: ``MI_PLATEAU_CRASH=<file>:<n>:<moment>`` dies at the n-th
file of that kind, ``before`` it is begun, ``half`` written, or ``after`` it is in place
(``mi_plateau.checkpoints.files.crash_point``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch

from mi_plateau.checkpoints import Run, RunError, atomic_write_bytes, crash_point
from mi_plateau.checkpoints.files import written_kind
from mi_plateau.config import preset, with_overrides
from mi_plateau.train import train

MAX_STEPS = 60
EVERY = 20  # tiny preset's ckpt_every; no transition happens within 60 steps
TMP = re.compile(r"\..+\.tmp\d+")


def _cfg():
    return with_overrides(preset("tiny"), {"max_steps": MAX_STEPS})


TRAIN_ARGS = ("train", "--preset", "tiny", "--max-steps", str(MAX_STEPS), "--quiet")  # the command for _cfg()


def _temp_files(path: Path) -> list[Path]:
    return [f for f in Path(path).rglob("*") if TMP.fullmatch(f.name)]


def _same_weights(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


# case -> (MI_PLATEAU_CRASH, last committed step after the kill, a temporary file left behind).
# The third file of each kind is step 40's (checkpoints at steps 0, 20, 40, 60).
CRASHES = {
    "before the step-40 weights": ("weights:3:before", 20, False),
    "halfway through the step-40 weights": ("weights:3:half", 20, True),
    "halfway through the step-40 manifest": ("manifest:3:half", 20, True),
    "step-40 files written, its manifest not begun": ("manifest:3:before", 20, False),
    "step 40 committed, the step-20 resume state not yet deleted": ("manifest:3:after", 40, False),
    "halfway through the first manifest": ("manifest:1:half", None, True),
}


@pytest.fixture(scope="module")
def crashed(tmp_path_factory, run_cli):
    """Every crash case as ``mi-plateau train`` killed where its case says, and the reference run."""
    base = tmp_path_factory.mktemp("crash")
    ref = train(_cfg(), base / "ref", progress=False)
    results = {}
    for name, (spec, _, _) in CRASHES.items():
        out = base / re.sub(r"\W+", "_", name)
        p = run_cli(*TRAIN_ARGS, "--out", str(out), env={"MI_PLATEAU_CRASH": spec})
        results[name] = (out, p.returncode, p.stderr)
    return ref, results


@pytest.mark.parametrize("name", list(CRASHES))
def test_kill_during_checkpoint_then_resume_is_bit_identical(crashed, name):
    """The killed folder loads as its last committed checkpoint (its records and weights those of
    the reference run), and a resume finishes it to the reference run's every checkpoint,
    removing what the dead writer left behind."""
    ref, results = crashed
    out, rc, err = results[name]
    spec, committed, leaves_tmp = CRASHES[name]
    assert rc == 137, err
    tmps = _temp_files(out)
    assert bool(tmps) == leaves_tmp, tmps
    run = Run(out)
    if committed is None:
        with pytest.raises(RunError, match="manifest.json: file is missing"):
            run.manifest()
    else:
        # the folder loads despite the crash (and any temp file); at most one interval is lost
        m = run.manifest()
        assert m["status"] == "running"
        assert run.steps()[-1] == committed and 40 - committed <= EVERY
        assert run.records() == ref.records()[: len(run.steps())]
        model = run.load_model()
        assert _same_weights(model.state_dict(), ref.weights(committed))
        assert _same_weights(run.weights(committed), ref.weights(committed))
    resumed = train(None, out, resume=True, progress=False)
    assert resumed.records() == ref.records()
    assert resumed.manifest()["status"] == "finished"
    assert resumed.manifest()["summary"] == ref.manifest()["summary"]
    for step in ref.steps():  # every checkpoint, the one rewritten after the crash included
        assert _same_weights(resumed.weights(step), ref.weights(step)), step
    assert _temp_files(out) == []  # leftovers of the dead writer were removed under the lock
    assert [f.name for f in (out / "resume").iterdir()] == [f"state_{MAX_STEPS:06d}.safetensors"]


@pytest.mark.parametrize(
    ("crash", "command_kept"),
    [("command:1:half", False), ("config:1:half", True)],
    ids=["halfway through command.json", "halfway through config.json"],
)
def test_a_kill_while_the_run_is_created_never_loses_its_command(run_cli, tmp_path, crash, command_kept):
    """command.json is written before config.json (which makes the folder a run): a kill halfway
    through either leaves no run without its command line, and rerunning the same command with
    --resume starts the run afresh."""
    out = tmp_path / "r"
    args = ("train", "--preset", "tiny", "--max-steps", "20", "--out", str(out), "--quiet")
    p = run_cli(*args, env={"MI_PLATEAU_CRASH": crash})
    assert p.returncode == 137 and not (out / "manifest.json").exists()
    assert not (out / "config.json").exists() and (out / "command.json").exists() == command_kept
    p = run_cli(*args, "--resume")
    assert p.returncode == 0, p.stderr
    cmd = json.loads((out / "command.json").read_text())
    assert cmd["argv"][:2] == ["mi-plateau", "train"] and Run(out).manifest()["status"] == "finished"
    assert not _temp_files(out)


def test_atomic_write_is_temp_fsync_rename(tmp_path, monkeypatch):
    """atomic_write_bytes: the data goes to a temp file beside the target, is fsynced, then renamed
    over the target, then the folder is fsynced; the target never holds partial data. A failed
    write (disk full) leaves the old content, no temp file, and an error that names the file."""
    target = tmp_path / "sub" / "f.bin"
    atomic_write_bytes(target, b"old")
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        p = Path(os.readlink(f"/proc/self/fd/{fd}"))
        events.append(("fsync", p.name, p.is_dir() or p.read_bytes()))
        if not p.is_dir():
            assert target.read_bytes() == b"old"  # untouched until the rename
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", Path(src).name, Path(dst).name, Path(src).parent == Path(dst).parent))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_bytes(target, b"new data")
    tmp = f".f.bin.tmp{os.getpid()}"
    assert events == [
        ("fsync", tmp, b"new data"),
        ("replace", tmp, "f.bin", True),
        ("fsync", "sub", True),
    ]
    assert target.read_bytes() == b"new data" and _temp_files(tmp_path) == []

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError) as e:
        atomic_write_bytes(target, b"never")
    assert e.value.filename == str(target)  # the disk-full message names the file
    assert target.read_bytes() == b"new data" and _temp_files(tmp_path) == []


def test_checkpoint_files_written_before_manifest(tmp_path, monkeypatch):
    """Per checkpoint: weights, record, resume state, then the manifest (the commit point), then
    the previous resume state is deleted."""
    events = []
    real_replace, real_unlink = os.replace, os.unlink
    root = tmp_path / "r"

    def replace(src, dst):
        if root in Path(dst).parents:
            events.append(Path(dst).relative_to(root).as_posix())
        real_replace(src, dst)

    def unlink(p, *a, **k):
        if root in Path(p).parents:
            events.append("rm " + Path(p).relative_to(root).as_posix())
        real_unlink(p, *a, **k)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", unlink)
    run = train(with_overrides(preset("tiny"), {"max_steps": EVERY}), tmp_path / "r", progress=False)
    assert events == [
        "command.json", "config.json",
        "ckpt/step_000000.safetensors", "ckpt/step_000000.json", "resume/state_000000.safetensors", "manifest.json",
        "ckpt/step_000020.safetensors", "ckpt/step_000020.json", "resume/state_000020.safetensors", "manifest.json",
        "rm resume/state_000000.safetensors",
        "manifest.json",  # the finished run's settled summary (mi_plateau.settle), after its last commit
    ]  # fmt: skip
    m = run.manifest()
    assert all(len(c["sha256"]) == 64 for c in m["checkpoints"]) and len(m["resume_sha256"]) == 64


def test_the_crash_hook_names_each_write_by_what_it_writes(tmp_path, monkeypatch):
    """The names ``MI_PLATEAU_CRASH`` uses for a run folder's files; a value the hook cannot read
    is an error, never a crash that silently never comes."""
    run = tmp_path / "run"
    assert {
        rel: written_kind(run / rel)
        for rel in (
            "command.json",
            "config.json",
            "manifest.json",
            "ckpt/step_000040.safetensors",
            "ckpt/step_000040.json",
            "resume/state_000040.safetensors",
            "sweep.json",
        )
    } == {
        "command.json": "command",
        "config.json": "config",
        "manifest.json": "manifest",
        "ckpt/step_000040.safetensors": "weights",
        "ckpt/step_000040.json": "record",
        "resume/state_000040.safetensors": "resume",
        "sweep.json": "sweep.json",
    }
    for bad in ("manifest", "manifest:0", "manifest:two", "manifest:2:midway", ":2"):
        monkeypatch.setenv("MI_PLATEAU_CRASH", bad)
        with pytest.raises(ValueError, match="MI_PLATEAU_CRASH"):
            crash_point("manifest", "half")
