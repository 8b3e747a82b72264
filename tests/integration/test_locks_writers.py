"""Locks and writers: one trainer per run folder (a second one is refused by the folder's lock
and changes nothing; the lock goes with the process that holds it), and every writer writes
only its own files in its own folder: a sweep never into a run folder or through a symbolic
link, analyze and report whatever bytes the folder's name holds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mi_plateau.checkpoints import RunError, RunLock
from mi_plateau.config import preset, with_overrides
from mi_plateau.sweeps import RunOptions, parse_sweep, run_sweep
from mi_plateau.train import train


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}


# --- one trainer per folder -----------------------------------------------------------------


def test_second_trainer_is_refused_while_one_is_running(run_cli, tmp_path):
    """A trainer started into a folder another process is training into (in-process, fresh or
    resumed, or from the CLI) is refused with a one-line error naming the holder's pid, and the
    folder is left byte for byte as it was; once the holder is dead its lock file blocks nobody."""
    cfg = with_overrides(preset("tiny"), {"max_steps": 100000, "train.margin_steps": 100000})
    cfg_path = tmp_path / "cfg.json"
    cfg_path.write_text(cfg.to_json())
    out = tmp_path / "run"
    p = subprocess.Popen(
        [sys.executable, "-m", "mi_plateau", "train", "--config", str(cfg_path), "--out", str(out), "--quiet"],
        env=_env(),
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "manifest.json").exists():
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline, "the first trainer never committed a checkpoint"
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGSTOP)  # freeze it (it keeps the lock) so the folder stays still
        before = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
        message = rf"{re.escape(str(out))}: another process \(pid {p.pid}\) is training into this run folder"
        with pytest.raises(RunError, match=message):
            train(None, out, resume=True, progress=False)
        with pytest.raises(RunError, match=message):
            train(cfg, out, progress=False)
        # a second process (the CLI) is refused the same way: exit 2, one line, no traceback
        q = run_cli("train", "--preset", "tiny", "--out", str(out), "--resume", "--quiet")
        assert q.returncode == 2 and f"another process (pid {p.pid})" in q.stderr
        assert "Traceback" not in q.stderr and len(q.stderr.strip().splitlines()) == 1
        after = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
        assert after == before  # the refused trainers changed nothing
    finally:
        p.kill()  # SIGKILL also ends a stopped process
        p.wait()
    # the dead holder's lock is gone with it: a stale .lock file does not block
    assert (out / ".lock").exists()
    with RunLock(out):
        pass


def test_lock_held_by_a_plain_process(tmp_path):
    """The lock is the process's, not the trainer's: any process holding it keeps others out
    until it exits."""
    code = (
        "import sys; from mi_plateau.checkpoints import RunLock;"
        f"l = RunLock({str(tmp_path)!r}).__enter__(); print('locked', flush=True); sys.stdin.read()"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(RunError, match=rf"another process \(pid {p.pid}\)"):
            with RunLock(tmp_path):
                pass
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    with RunLock(tmp_path):  # released when the holder exits
        pass


# --- each writer in its own folder ----------------------------------------------------------


def test_a_sweep_refuses_a_folder_inside_a_run_or_a_symlinked_one(tiny_run, tmp_path):
    """A sweep's root inside a run folder, or a sweep folder that is a symbolic link, is refused
    before anything is written there."""
    sweep = parse_sweep({"name": "s", "preset": "tiny", "points": [{"K": 3}]})
    with pytest.raises(RunError, match="is inside the run folder"):
        run_sweep(sweep, RunOptions(root=tiny_run.path, progress=False))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "s").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RunError, match="is a symbolic link"):
        run_sweep(sweep, RunOptions(root=tmp_path / "root", progress=False))
    assert not any((tmp_path / "elsewhere").iterdir())


def test_a_run_folder_name_that_is_not_utf8_goes_through_analyze_and_report(tiny_run, tmp_path, run_cli):
    """A run folder whose name is not valid UTF-8 is analyzed and reported; what the writers
    write stays valid UTF-8, the name shown with U+FFFD."""
    name = os.fsdecode(b"run\xff")
    copy = tmp_path / name
    shutil.copytree(tiny_run.path, copy)
    p = run_cli("analyze", str(copy), "--out", str(tmp_path / "an"))
    assert p.returncode == 0, p.stderr
    p = run_cli("report", str(copy), "--out", str(tmp_path / "r.html"), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "run\ufffd" in (tmp_path / "r.html").read_bytes().decode("utf-8")
    for f in (tmp_path / "an").rglob("*.md"):
        f.read_bytes().decode("utf-8")
