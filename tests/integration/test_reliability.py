"""Reliability and safety of run folders: crashes, concurrent trainers, bad files, no pickle.

A tiny run of 60 steps has checkpoints at steps 0, 20, 40 and 60. The crash cases kill a
training subprocess (os._exit(137), as kill -9 would) at chosen points of the checkpoint at
step 40 via MI_PLATEAU_CRASH, then check what survives and that resume continues bit for bit.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from mi_plateau.checkpoints import (
    FORMAT_VERSION,
    Run,
    RunError,
    RunLock,
    atomic_write_bytes,
    save_tensors,
)
from mi_plateau.config import preset, with_overrides
from mi_plateau.train import train

MAX_STEPS = 60
EVERY = 20  # tiny preset's ckpt_every; no transition happens within 60 steps
TMP = re.compile(r"\..+\.tmp\d+")


def _cfg():
    return with_overrides(preset("tiny"), {"max_steps": MAX_STEPS})


def _env(**extra):
    env = dict(os.environ)
    env.pop("MI_PLATEAU_CRASH", None)
    env.update(extra)
    return env


def _train_code(cfg_path: Path, out: Path) -> str:
    return (
        "import json; from mi_plateau.config import RunConfig; from mi_plateau.train import train;"
        f"train(RunConfig.from_dict(json.load(open({str(cfg_path)!r}))), {str(out)!r}, progress=False)"
    )


def _temp_files(path: Path) -> list[Path]:
    return [f for f in Path(path).rglob("*") if TMP.fullmatch(f.name)]


def _same_weights(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


# Crash points, counted over one training process of MAX_STEPS steps. Atomic writes ("write")
# go: command.json, config.json, then per checkpoint weights, record, resume state, manifest;
# safetensors writes ("ckpt_write") go weights, resume state per checkpoint.
# name -> (MI_PLATEAU_CRASH, last committed step, temp file left behind)
CRASHES = {
    "before step-40 weights write": ("ckpt_write:5", 20, False),
    "mid-write of step-40 weights": ("write:11", 20, True),
    "mid-write of the step-40 manifest": ("write:14", 20, True),
    "after resume state, before manifest commit": ("pre_commit:3", 20, False),
    "after manifest commit, before old state deleted": ("post_commit:3", 40, False),
    "mid-write of the first manifest": ("write:6", None, True),
}


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """Start every crash case as its own subprocess (in parallel), and the reference run here."""
    base = tmp_path_factory.mktemp("crash")
    cfg = _cfg()
    cfg_path = base / "cfg.json"
    cfg_path.write_text(cfg.to_json())
    procs = {}
    for name, (spec, _, _) in CRASHES.items():
        out = base / re.sub(r"\W+", "_", name)
        procs[name] = (
            out,
            subprocess.Popen(
                [sys.executable, "-c", _train_code(cfg_path, out)],
                env=_env(MI_PLATEAU_CRASH=spec),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    ref = train(cfg, base / "ref", progress=False)
    results = {}
    for name, (out, p) in procs.items():
        _, err = p.communicate(timeout=300)
        results[name] = (out, p.returncode, err)
    return ref, results


@pytest.mark.parametrize("name", list(CRASHES))
def test_kill_during_checkpoint_then_resume_is_bit_identical(crashed, name):
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


def test_atomic_write_is_temp_fsync_rename(tmp_path, monkeypatch):
    """atomic_write_bytes: the data goes to a temp file beside the target, is fsynced, then renamed
    over the target, then the folder is fsynced; the target never holds partial data."""
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

    # a failing write leaves the old content and no temp file
    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError) as e:
        atomic_write_bytes(target, b"never")
    assert e.value.filename == str(target)  # D10: the disk-full message names the file
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
    ]  # fmt: skip
    m = run.manifest()
    assert all(len(c["sha256"]) == 64 for c in m["checkpoints"]) and len(m["resume_sha256"]) == 64


# --- two trainers, one folder ---------------------------------------------------------------


def test_second_trainer_is_refused_while_one_is_running(run_cli, tmp_path):
    cfg = with_overrides(preset("tiny"), {"max_steps": 100000, "train.margin_steps": 100000})
    cfg_path = tmp_path / "cfg.json"
    cfg_path.write_text(cfg.to_json())
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-c", _train_code(cfg_path, out)], env=_env(), stderr=subprocess.PIPE)
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


# --- loading bad files ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    return train(_cfg(), tmp_path_factory.mktemp("good") / "run", progress=False)


@pytest.fixture
def run_copy(good_run, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(good_run.path, dst)
    return Run(dst)


def _edit_manifest(run: Run, fn) -> None:
    path = run.path / "manifest.json"
    m = json.loads(path.read_text())
    fn(m)
    path.write_text(json.dumps(m))


def _weights_of(cfg) -> dict:
    from mi_plateau.model import build_model

    return build_model(cfg).state_dict()


def _replace_last_weights(run: Run, state: dict) -> None:
    """Put other weights in place of the last checkpoint's, with a matching checksum."""
    digest = save_tensors(run.path / "ckpt" / f"step_{MAX_STEPS:06d}.safetensors", state)
    _edit_manifest(run, lambda m: m["checkpoints"][-1].update(sha256=digest))


LAST = f"ckpt/step_{MAX_STEPS:06d}.safetensors"
STATE = f"resume/state_{MAX_STEPS:06d}.safetensors"


def _truncate(rel, strip_sha=False):
    def damage(run):
        p = run.path / rel
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
        if strip_sha:  # an older manifest without checksums: the safetensors parser catches it
            _edit_manifest(run, lambda m: [c.pop("sha256") for c in m["checkpoints"]])

    return damage


def _garbage(rel):
    def damage(run):
        p = run.path / rel
        g = torch.Generator().manual_seed(0)
        p.write_bytes(bytes(torch.randint(0, 256, (p.stat().st_size,), generator=g).tolist()))

    return damage


def _flip_tail(rel):
    def damage(run):  # header intact, tensor bytes changed: only the checksum can tell
        p = run.path / rel
        b = bytearray(p.read_bytes())
        for i in range(1, 65):
            b[-i] ^= 0xFF
        p.write_bytes(bytes(b))

    return damage


def _pickle_bomb(rel, marker: str):
    class Bomb:
        def __reduce__(self):
            return (open, (marker, "w"))

    def damage(run):
        (run.path / rel).write_bytes(pickle.dumps({"w": Bomb()}))

    return damage


def _set_weights_path(value):
    return lambda run: _edit_manifest(run, lambda m: m["checkpoints"][-1].update(weights=value))


def _symlink_out(run):
    outside = run.path.parent / "outside.safetensors"
    shutil.copy(run.path / LAST, outside)
    (run.path / LAST).unlink()
    (run.path / LAST).symlink_to(outside)


def _other_model(overrides):
    return lambda run: _replace_last_weights(run, _weights_of(with_overrides(_cfg(), overrides)))


def _other_vocabulary(run):
    from mi_plateau.task import D_VOCAB

    state = _weights_of(_cfg())
    for k, v in state.items():  # one more token: every vocabulary-sized axis grows by one
        for dim, n in enumerate(v.shape):
            if n == D_VOCAB:
                v = torch.cat([v, v.narrow(dim, 0, 1)], dim)
        state[k] = v
    _replace_last_weights(run, state)


def _drop_key(run):
    state = _weights_of(_cfg())
    state.pop(sorted(state)[0])
    _replace_last_weights(run, state)


def _write(rel, text):
    return lambda run: (run.path / rel).write_text(text)


def _manifest_set(**kv):
    return lambda run: _edit_manifest(run, lambda m: m.update(kv))


# name -> (damage, file the message must name, message pattern)
LOAD_CASES = {
    "truncated weights": (_truncate(LAST), LAST, "not a readable safetensors file"),
    "truncated weights, no checksum": (_truncate(LAST, strip_sha=True), LAST, "not a readable safetensors file"),
    "garbage weights": (_garbage(LAST), LAST, "not a readable safetensors file"),
    "flipped tensor bytes": (_flip_tail(LAST), LAST, "checksum mismatch"),
    "pickle instead of safetensors": (None, LAST, "not a readable safetensors file"),
    "weights file missing": (lambda run: (run.path / LAST).unlink(), LAST, "file is missing"),
    "weights path ../x": (_set_weights_path("../x.safetensors"), "manifest.json", "leaves the run folder"),
    "weights path ckpt/../../x": (_set_weights_path("ckpt/../../x"), "manifest.json", "leaves the run folder"),
    "weights path absolute": (_set_weights_path("/etc/passwd"), "manifest.json", "leaves the run folder"),
    "weights path empty": (_set_weights_path(""), "manifest.json", "is not a file path"),
    "weights path not a string": (
        _set_weights_path(7),
        "manifest.json",
        r"malformed manifest \(checkpoints\[3\].weights",
    ),
    "weights symlinked outside": (_symlink_out, "manifest.json", "leaves the run folder"),
    "other width (shapes)": (_other_model({"model.d_model": 48}), LAST, "has shape"),
    "other depth (keys)": (_other_model({"model.n_layers": 3}), LAST, "do not match this architecture"),
    "other vocabulary": (_other_vocabulary, LAST, "has shape"),
    "other context length": (_other_model({"task.len_z": 3}), LAST, "has shape"),
    "missing key": (_drop_key, LAST, "do not match this architecture"),
    "other dtype": (
        lambda run: _replace_last_weights(run, {k: v.half() for k, v in _weights_of(_cfg()).items()}),
        LAST,
        "has dtype torch.float16",
    ),
    "newer format version": (
        _manifest_set(format_version=FORMAT_VERSION + 1),
        "manifest.json",
        "newer than this mi_plateau",
    ),
    "format version a string": (_manifest_set(format_version="1"), "manifest.json", "malformed manifest"),
    "manifest not JSON": (_write("manifest.json", '{"format_version": 1, "checkp'), "manifest.json", "not valid JSON"),
    "manifest binary": (
        lambda run: (run.path / "manifest.json").write_bytes(b"\xff\xfe\x00garbage"),
        "manifest.json",
        "not valid JSON",
    ),
    "manifest a list": (_write("manifest.json", "[1, 2]"), "manifest.json", "not a mi_plateau manifest"),
    "manifest without checkpoints": (
        _write("manifest.json", '{"format_version": 1, "status": "running"}'),
        "manifest.json",
        "checkpoints is not a list",
    ),
    "manifest bad step": (
        lambda run: _edit_manifest(run, lambda m: m["checkpoints"][1].update(step="20")),
        "manifest.json",
        r"checkpoints\[1\].step",
    ),
    "manifest missing": (lambda run: (run.path / "manifest.json").unlink(), "manifest.json", "file is missing"),
    # found by the slow fuzz tier (case 518, seed 1): a record whose step is null broke summary
    "record step null": (
        lambda run: _edit_manifest(run, lambda m: m["checkpoints"][2]["record"].update(step=None)),
        "manifest.json",
        r"checkpoints\[2\].record.step None is not the checkpoint's step",
    ),
    "record step other": (
        lambda run: _edit_manifest(run, lambda m: m["checkpoints"][2]["record"].update(step=7)),
        "manifest.json",
        r"checkpoints\[2\].record.step 7",
    ),
    "config not JSON": (_write("config.json", "{task: K=4"), "config.json", "not valid JSON"),
    "config a list": (_write("config.json", "[]"), "config.json", "not a mi_plateau config"),
    "config unknown key": (_write("config.json", '{"task": {"KK": 4}}'), "config.json", "unknown keys"),
    "config wrong type": (_write("config.json", '{"model": {"d_model": "wide"}}'), "config.json", "model.d_model"),
    "config missing": (lambda run: (run.path / "config.json").unlink(), "config.json", "file is missing"),
    # special files and sizes (issue "Reliability", D7 and D8): refused without blocking or reading
    "weights a FIFO": (
        lambda run: ((run.path / LAST).unlink(), os.mkfifo(run.path / LAST)),
        LAST,
        "not a regular file",
    ),
    "manifest a FIFO": (
        lambda run: ((run.path / "manifest.json").unlink(), os.mkfifo(run.path / "manifest.json")),
        "manifest.json",
        "not a regular file",
    ),
    "config a FIFO": (
        lambda run: ((run.path / "config.json").unlink(), os.mkfifo(run.path / "config.json")),
        "config.json",
        "not a regular file",
    ),
    "weights a directory": (
        lambda run: ((run.path / LAST).unlink(), (run.path / LAST).mkdir()),
        LAST,
        "not a regular file",
    ),
    "weights a symlink loop": (
        lambda run: ((run.path / LAST).unlink(), (run.path / LAST).symlink_to(run.path / LAST)),
        "manifest.json",
        "cannot be resolved",
    ),
    "12 GB sparse weights": (
        lambda run: os.truncate(run.path / LAST, 12 << 30),
        LAST,
        "larger than any file a run writes",
    ),
    "header longer than the file": (
        lambda run: (run.path / LAST).write_bytes((10**6).to_bytes(8, "little") + b"{}"),
        LAST,
        "header length 1000000 does not fit",
    ),
}


@pytest.mark.parametrize("name", list(LOAD_CASES))
def test_bad_file_gives_one_line_error_naming_it(run_copy, name, tmp_path):
    damage, rel, pattern = LOAD_CASES[name]
    marker = tmp_path / "unpickled"
    if damage is None:
        damage = _pickle_bomb(LAST, str(marker))
    damage(run_copy)
    with pytest.raises(RunError) as e:
        run_copy.load_model()
    msg = str(e.value)
    assert "\n" not in msg
    assert str(run_copy.path / rel) in msg, msg
    assert re.search(pattern, msg), msg
    assert not marker.exists()  # nothing was unpickled


# damage to what resume reads: the last weights and the resume state
RESUME_CASES = {
    "truncated resume state": (_truncate(STATE), STATE, "not a readable safetensors file"),
    "garbage resume state": (_garbage(STATE), STATE, "not a readable safetensors file"),
    "flipped resume-state bytes": (_flip_tail(STATE), STATE, "checksum mismatch"),
    "resume state missing": (lambda run: (run.path / STATE).unlink(), STATE, "file is missing"),
    "resume path ../x": (_manifest_set(resume="../state.safetensors"), "manifest.json", "leaves the run folder"),
    "resume state of another model": (None, STATE, r"optimizer state 'opt\.\d+\.\w+' does not match"),
    "resume state without sampler": (None, STATE, "the sampler state is missing"),
    "truncated last weights": (_truncate(LAST), LAST, "not a readable safetensors file"),
    "last weights of another model": (_other_model({"model.d_model": 48}), LAST, "has shape"),
}


def _resume_state_of_another_model(run):
    from mi_plateau.model import build_model
    from mi_plateau.train import make_optimizer, optimizer_tensors

    cfg = with_overrides(_cfg(), {"model.d_model": 48})
    model = build_model(cfg)
    opt = make_optimizer(cfg, model)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    tensors = {**optimizer_tensors(opt), "sampler_rng": torch.Generator().get_state()}
    digest = save_tensors(run.path / STATE, tensors)
    _edit_manifest(run, lambda m: m.update(resume_sha256=digest))


def _resume_state_without_sampler(run):
    from safetensors.torch import load

    tensors = load((run.path / STATE).read_bytes())
    tensors.pop("sampler_rng")
    digest = save_tensors(run.path / STATE, tensors)
    _edit_manifest(run, lambda m: m.update(resume_sha256=digest))


RESUME_CASES["resume state of another model"] = (_resume_state_of_another_model,) + RESUME_CASES[
    "resume state of another model"
][1:]
RESUME_CASES["resume state without sampler"] = (_resume_state_without_sampler,) + RESUME_CASES[
    "resume state without sampler"
][1:]


@pytest.mark.parametrize("name", list(RESUME_CASES))
def test_bad_resume_file_gives_one_line_error_naming_it(run_copy, name):
    damage, rel, pattern = RESUME_CASES[name]
    _edit_manifest(run_copy, lambda m: m.update(status="running"))  # so that resume reads the state
    damage(run_copy)
    manifest_before = (run_copy.path / "manifest.json").read_bytes()
    with pytest.raises(RunError) as e:
        train(None, run_copy.path, resume=True, progress=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert str(run_copy.path / rel) in msg, msg
    assert re.search(pattern, msg), msg
    assert (run_copy.path / "manifest.json").read_bytes() == manifest_before  # nothing committed


def test_clean_copy_loads_and_resumes(run_copy, good_run):
    """The control for the damage tests: an undamaged copy loads, and resumes."""
    assert _same_weights(run_copy.load_model().state_dict(), good_run.weights(MAX_STEPS))
    _edit_manifest(run_copy, lambda m: m.update(status="running"))
    train(None, run_copy.path, resume=True, progress=False)
    assert run_copy.manifest()["status"] == "finished"


def test_cli_reports_bad_manifest_in_one_line(run_cli, run_copy):
    (run_copy.path / "manifest.json").write_text("{")
    p = run_cli("summary", str(run_copy.path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(run_copy.path / "manifest.json") in lines[0]


def test_nothing_is_unpickled():
    """No pickle anywhere in the package; torch.load, if ever used, only with weights_only=True."""
    import mi_plateau

    pkg = Path(mi_plateau.__file__).parent
    sources = sorted(pkg.rglob("*.py"))
    assert len(sources) > 5
    for src in sources:
        text = src.read_text()
        rel = src.relative_to(pkg.parent)
        for bad in (
            r"\bimport\s+(c?pickle|dill|joblib|shelve|marshal)\b",
            r"\bfrom\s+(c?pickle|dill|joblib|shelve|marshal)\b",
            r"\bpickle\.",
            r"allow_pickle\s*=\s*True",
            r"\btorch\.jit\.load\b",
        ):
            assert not re.search(bad, text), f"{rel}: {bad}"
        for m in re.finditer(r"\btorch\.load\s*\(", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            assert re.search(r"weights_only\s*=\s*True", text[m.end() : i]), (
                f"{rel}: torch.load without weights_only=True"
            )


def test_float64_weights_with_a_matching_checksum_are_refused_by_every_reader(run_copy):
    """D7: the dtype was checked only on resume; analyze reads ``run.weights`` directly."""
    _replace_last_weights(run_copy, {k: v.double() for k, v in _weights_of(_cfg()).items()})
    with pytest.raises(RunError, match=r"has dtype torch.float64, a run's weights are float32"):
        run_copy.weights(MAX_STEPS)
    with pytest.raises(RunError, match="has dtype torch.float64"):
        run_copy.load_model()


@pytest.mark.parametrize("command", ["summary", "inspect"])
def test_a_fifo_manifest_does_not_hang_the_cli(run_copy, run_cli, command):
    """D8: a FIFO in place of manifest.json blocked summary and inspect forever."""
    (run_copy.path / "manifest.json").unlink()
    os.mkfifo(run_copy.path / "manifest.json")
    p = run_cli(command, str(run_copy.path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "manifest.json: not a regular file" in p.stderr


def test_an_absurd_batch_size_is_refused_before_any_folder(tmp_path, run_cli):
    """D7: --batch-size 20000000 tried to allocate 38 GB after creating the run folder."""
    p = run_cli("train", "--preset", "tiny", "--batch-size", "20000000", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "train.batch_size=20000000: at most 65536" in p.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("crash", ["write:1", "write:2"])
def test_a_kill_while_the_run_is_created_never_loses_its_command(run_cli, tmp_path, crash):
    """D9: a kill during the command.json write left a run (config.json) whose provenance was
    lost for good. command.json now comes first; rerunning the same command starts afresh."""
    out = tmp_path / "r"
    args = ("train", "--preset", "tiny", "--max-steps", "20", "--out", str(out), "--quiet")
    p = run_cli(*args, env={"MI_PLATEAU_CRASH": crash})
    assert p.returncode == 137 and not (out / "manifest.json").exists()
    assert not (out / "config.json").exists() and (out / "command.json").exists() == (crash == "write:2")
    p = run_cli(*args, "--resume")
    assert p.returncode == 0, p.stderr
    cmd = json.loads((out / "command.json").read_text())
    assert cmd["argv"][:2] == ["mi-plateau", "train"] and Run(out).manifest()["status"] == "finished"
    assert not _temp_files(out)


def test_resume_with_a_higher_cap_leaves_a_converged_run_alone(tiny_run, tmp_path):
    """D10: --resume --max-steps on a run its stopping rule had finished rewrote config.json."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run.path, copy)
    before = {f: (copy / f).read_bytes() for f in ("config.json", "manifest.json")}
    cfg = Run(copy).config()
    assert Run(copy).manifest()["status"] == "finished" and Run(copy).records()[-1]["step"] < cfg.train.max_steps
    train(with_overrides(cfg, {"max_steps": cfg.train.max_steps + 1000}), copy, resume=True, progress=False)
    assert {f: (copy / f).read_bytes() for f in before} == before


def test_a_run_folder_name_that_is_not_utf8_goes_through_analyze_and_report(tiny_run, tmp_path, run_cli):
    """D10: non-UTF-8 names broke analyze and report (a lone surrogate reached the writers)."""
    name = os.fsdecode(b"run\xff")
    copy = tmp_path / name
    shutil.copytree(tiny_run.path, copy)
    p = run_cli("analyze", str(copy), "--out", str(tmp_path / "an"))
    assert p.returncode == 0, p.stderr
    p = run_cli("report", str(copy), "--out", str(tmp_path / "r.html"), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "run\ufffd" in (tmp_path / "r.html").read_bytes().decode("utf-8")  # valid UTF-8, the name shown as U+FFFD
    for f in (tmp_path / "an").rglob("*.md"):
        f.read_bytes().decode("utf-8")


def test_a_clamped_evaluation_set_is_said(tiny_run):
    """D10: eval.n_groups larger than n_b was clamped without a word."""
    s = tiny_run.summary()
    cfg = tiny_run.config()
    assert s["eval_groups"] == min(cfg.eval.n_groups, cfg.task.n_b)
    big = with_overrides(cfg, {"eval.n_groups": cfg.task.n_b + 10})
    from mi_plateau.summaries import summarize

    s2 = summarize(big, tiny_run.records())
    assert s2["eval_groups"] == cfg.task.n_b and f"holds all {cfg.task.n_b} groups" in s2["eval_groups_note"]


def test_a_sweep_refuses_a_folder_inside_a_run_or_a_symlinked_one(tiny_run, tmp_path):
    from mi_plateau.sweeps import parse_sweep, run_sweep

    sweep = parse_sweep({"name": "s", "preset": "tiny", "points": [{"K": 3}]})
    with pytest.raises(RunError, match="is inside the run folder"):
        run_sweep(sweep, root=tiny_run.path, progress=False)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "s").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RunError, match="is a symbolic link"):
        run_sweep(sweep, root=tmp_path / "root", progress=False)
    assert not any((tmp_path / "elsewhere").iterdir())
