"""Bad files: every reader of a run folder (load, resume, the CLI) refuses a damaged, swapped,
special or oversized file with a one-line RunError that names the file, without blocking,
without unpickling anything, and without writing anything.

Each case damages a copy of one finished tiny run (60 steps, checkpoints at 0, 20, 40, 60).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from pathlib import Path

import pytest
import torch

from mi_plateau.checkpoints import FORMAT_VERSION, Run, RunError, manifest_digest, save_tensors
from mi_plateau.config import preset, with_overrides
from mi_plateau.train import train

MAX_STEPS = 60
LAST = f"ckpt/step_{MAX_STEPS:06d}.safetensors"
STATE = f"resume/state_{MAX_STEPS:06d}.safetensors"
UNPICKLED = "unpickled"  # the file a pickle bomb creates beside the run folder if it is ever loaded


def _cfg():
    return with_overrides(preset("tiny"), {"max_steps": MAX_STEPS})


def _same_weights(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    return train(_cfg(), tmp_path_factory.mktemp("good") / "run", progress=False)


@pytest.fixture
def run_copy(good_run, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(good_run.path, dst)
    return Run(dst)


def _edit_manifest(run: Run, fn) -> None:
    """Edit the manifest and seal it again, as a writer would have committed it: these cases reach
    the checks behind the digest (test_integrity.py tests the digest itself)."""
    path = run.path / "manifest.json"
    m = json.loads(path.read_text())
    fn(m)
    if "digest" in m:
        m["digest"] = manifest_digest(m)
    path.write_text(json.dumps(m))


def _weights_of(cfg) -> dict:
    from mi_plateau.model import build_model

    return build_model(cfg).state_dict()


def _replace_last_weights(run: Run, state: dict) -> None:
    """Put other weights in place of the last checkpoint's, with a matching checksum."""
    digest = save_tensors(run.path / LAST, state)
    _edit_manifest(run, lambda m: m["checkpoints"][-1].update(sha256=digest))


# --- damage, one function per kind ----------------------------------------------------------


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


def _pickle_bomb(rel):
    def damage(run):
        marker = str(run.path.parent / UNPICKLED)

        class Bomb:
            def __reduce__(self):
                return (open, (marker, "w"))

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


def _fifo(rel):
    return lambda run: ((run.path / rel).unlink(), os.mkfifo(run.path / rel))


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


# --- what loading a checkpoint reads --------------------------------------------------------

# case -> (damage, the file the message must name, message pattern)
LOAD_CASES = {
    "truncated weights": (_truncate(LAST), LAST, "not a readable safetensors file"),
    "truncated weights, no checksum": (_truncate(LAST, strip_sha=True), LAST, "not a readable safetensors file"),
    "garbage weights": (_garbage(LAST), LAST, "not a readable safetensors file"),
    "flipped tensor bytes": (_flip_tail(LAST), LAST, "checksum mismatch"),
    "pickle instead of safetensors": (_pickle_bomb(LAST), LAST, "not a readable safetensors file"),
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
    # a record whose step is null once reached the summary and broke it
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
    # special files and sizes: refused from their type or size, without blocking or reading them
    "weights a FIFO": (_fifo(LAST), LAST, "not a regular file"),
    "manifest a FIFO": (_fifo("manifest.json"), "manifest.json", "not a regular file"),
    "config a FIFO": (_fifo("config.json"), "config.json", "not a regular file"),
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
def test_bad_file_gives_one_line_error_naming_it(run_copy, name):
    damage, rel, pattern = LOAD_CASES[name]
    damage(run_copy)
    with pytest.raises(RunError) as e:
        run_copy.load_model()
    msg = str(e.value)
    assert "\n" not in msg
    assert str(run_copy.path / rel) in msg, msg
    assert re.search(pattern, msg), msg
    assert not (run_copy.path.parent / UNPICKLED).exists()  # nothing was unpickled


# --- what resuming reads: the last weights and the resume state -----------------------------

# case -> (damage, the file the message must name, message pattern)
RESUME_CASES = {
    "truncated resume state": (_truncate(STATE), STATE, "not a readable safetensors file"),
    "garbage resume state": (_garbage(STATE), STATE, "not a readable safetensors file"),
    "flipped resume-state bytes": (_flip_tail(STATE), STATE, "checksum mismatch"),
    "resume state missing": (lambda run: (run.path / STATE).unlink(), STATE, "file is missing"),
    "resume path ../x": (_manifest_set(resume="../state.safetensors"), "manifest.json", "leaves the run folder"),
    "resume state of another model": (
        _resume_state_of_another_model,
        STATE,
        r"optimizer state 'opt\.\d+\.\w+' does not match",
    ),
    "resume state without sampler": (_resume_state_without_sampler, STATE, "the sampler state is missing"),
    "truncated last weights": (_truncate(LAST), LAST, "not a readable safetensors file"),
    "last weights of another model": (_other_model({"model.d_model": 48}), LAST, "has shape"),
}


@pytest.mark.parametrize("name", list(RESUME_CASES))
def test_bad_resume_file_gives_one_line_error_naming_it(run_copy, name):
    """The resume is refused before anything is committed."""
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


def test_float64_weights_with_a_matching_checksum_are_refused_by_every_reader(run_copy):
    """Weights rewritten in float64 with their checksum updated are refused by every reader, not
    only by the resume: ``run.weights`` (what analyze reads) and the model loader too."""
    _replace_last_weights(run_copy, {k: v.double() for k, v in _weights_of(_cfg()).items()})
    with pytest.raises(RunError, match=r"has dtype torch.float64, a run's weights are float32"):
        run_copy.weights(MAX_STEPS)
    with pytest.raises(RunError, match="has dtype torch.float64"):
        run_copy.load_model()


# --- the CLI --------------------------------------------------------------------------------


def test_cli_reports_bad_manifest_in_one_line(run_cli, run_copy):
    (run_copy.path / "manifest.json").write_text("{")
    p = run_cli("summary", str(run_copy.path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(run_copy.path / "manifest.json") in lines[0]


@pytest.mark.parametrize("command", ["summary", "inspect"])
def test_a_fifo_manifest_does_not_hang_the_cli(run_copy, run_cli, command):
    """A FIFO in place of manifest.json is refused at once, not read (which would block forever)."""
    (run_copy.path / "manifest.json").unlink()
    os.mkfifo(run_copy.path / "manifest.json")
    p = run_cli(command, str(run_copy.path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "manifest.json: not a regular file" in p.stderr


# --- no pickle ------------------------------------------------------------------------------


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
