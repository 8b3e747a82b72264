"""A seeded fuzzer of damage to a small run folder (issue "Reliability", part 3).

Each case copies a tiny finished run, applies one random damage to one of its files (truncation,
bit flips, inserted bytes, a JSON value of another type or value, a deleted key, an in-range edit
of a number or a flag in a JSON file, a deleted or duplicated file, a symlink, a FIFO, a directory
in its place) and runs the readers and resume on it in-process under a time limit. Every case must
end in the undamaged run's answer (its summary, records and weights; for resume, the records it
leaves) or in a one-line RunError / ConfigError that names a file of the folder; never another
answer (a silent wrong one), another exception, a hang, or a change to anything outside the
folder (a sentinel folder beside it is hashed before and after).

Default tier: 240 cases (summary, records, load_model, resume); the slow tier runs 2000 more
(another seed) and adds inspect on every 20th case, analyze and report on every 50th. The counts are printed
(pytest -s) and quoted in docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
from collections import Counter
from pathlib import Path

import pytest

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.config import AnalysisConfig, ConfigError, preset, with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.train import train

STEPS = 40
VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**70,
    -(2**63),
    1e308,
    float("nan"),
    "",
    "x",
    "../../etc",
    [],
    [1, "a"],
    {},
    {"a": 1},
]


def _cfg():
    return with_overrides(preset("tiny"), {"max_steps": STEPS})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    run = train(_cfg(), root / "base", progress=False)
    return run, {name: _answer(name, None, run.path) for name in ("summary", "records", "load_model", "resume")}


def _answer(name: str, value, folder: Path):
    """What a command's result says, in a form compared across cases: the summary without the
    folder's path, the records, the weights' bytes, and for resume the records it leaves."""
    run = Run(folder)
    if name == "summary":
        return {k: v for k, v in (value or run_summary(run)).items() if k != "run"}
    if name == "records":
        return value if value is not None else run.records()
    if name == "load_model":
        sd = (value or run.load_model()).state_dict()
        return {k: hashlib.sha256(v.cpu().numpy().tobytes()).hexdigest() for k, v in sd.items()}
    if name == "resume":
        return run.records()
    return None  # inspect, analyze, report: a clean result is enough


def _tree_digest(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _mutate_json(obj, rng: random.Random):
    """Replace (or delete) one value somewhere in a JSON document."""
    paths = []

    def walk(o, path):
        paths.append(path)
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, path + [k])
        elif isinstance(o, list):
            for i, v in enumerate(o[:5]):
                walk(v, path + [i])

    walk(obj, [])
    path = rng.choice(paths)
    if not path:
        return rng.choice(VALUES)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    if isinstance(parent, dict) and rng.random() < 0.2:
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(VALUES)
    return obj


def _nudge_json(obj, rng: random.Random):
    """An in-range edit: one number moved a little (an integer by one, a float by 0.1% or 10%) or
    one flag flipped, anywhere in the document. The result is a plausible file: only a check of
    the run's identity (the manifest's record of its config, its digest) tells it from the real one."""
    leaves = []

    def walk(o, path):
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, path + [k])
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, path + [i])
        elif isinstance(o, (int, float)):
            leaves.append(path)

    walk(obj, [])
    if not leaves:
        return obj
    path = rng.choice(leaves)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    v = parent[path[-1]]
    if isinstance(v, bool):
        parent[path[-1]] = not v
    elif isinstance(v, int):
        parent[path[-1]] = v + rng.choice((1, -1)) if v > 0 else v + 1
    else:
        parent[path[-1]] = v * (1 + rng.choice((1e-3, -1e-3, 0.1, -0.1))) if v else 1e-3
    return obj


def damage(folder: Path, outside: Path, rng: random.Random, only: str | None = None) -> tuple[str, str]:
    """Apply one random damage (to the file ``only`` if given); returns (kind, file relative to the folder)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".lock" and only in (None, p.name))
    f = rng.choice(files)
    rel = str(f.relative_to(folder))
    kinds = [
        "truncate",
        "flip",
        "insert",
        "delete",
        "duplicate",
        "symlink_out",
        "symlink_loop",
        "fifo",
        "directory",
        "empty",
    ]
    if f.suffix == ".json":
        kinds += ["json"] * 6 + ["in_range"] * 6
    kind = rng.choice(kinds)
    data = f.read_bytes()
    if kind == "truncate":
        f.write_bytes(data[: rng.randrange(max(1, len(data)))])
    elif kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        f.write_bytes(bytes(b))
    elif kind == "insert":
        i = rng.randrange(len(data) + 1)
        f.write_bytes(data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + data[i:])
    elif kind == "delete":
        f.unlink()
    elif kind == "duplicate":  # another file of the folder copied over this one
        other = rng.choice(files)
        shutil.copyfile(other, f) if other != f else f.write_bytes(data + data)
    elif kind == "symlink_out":
        target = outside / "victim.bin"
        f.unlink()
        f.symlink_to(target)
    elif kind == "symlink_loop":
        f.unlink()
        f.symlink_to(f)
    elif kind == "fifo":
        f.unlink()
        os.mkfifo(f)
    elif kind == "directory":
        f.unlink()
        f.mkdir()
    elif kind == "empty":
        f.write_bytes(b"")
    elif kind == "json":
        try:
            obj = json.loads(data)
        except ValueError:
            obj = {}
        f.write_text(json.dumps(_mutate_json(obj, rng)))
    elif kind == "in_range":
        f.write_text(json.dumps(_nudge_json(json.loads(data), rng), indent=1, sort_keys=True) + "\n")
    return kind, rel


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def _call(fn, limit: int = 20):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
    try:
        return "ok", fn()
    except (RunError, ConfigError) as e:
        return "error", e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fuzz(
    base, tmp_path, n: int, seed: int, inspect_every: int = 0, heavy_every: int = 0, limit: int = 20, only=None
) -> Counter:
    run0, want = base
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.bin").write_bytes(b"do not touch\n" * 10)
    rng = random.Random(seed)
    counts: Counter = Counter()
    for case in range(n):
        folder = tmp_path / f"case{case}"
        shutil.copytree(run0.path, folder)
        kind, rel = damage(folder, outside, rng, only)
        before = _tree_digest(outside)
        where = f"case {case} (seed {seed}): {kind} of {rel}"
        ops = [
            ("summary", lambda: run_summary(Run(folder))),
            ("records", lambda: Run(folder).records()),
            ("load_model", lambda: Run(folder).load_model()),
            ("resume", lambda: train(_cfg(), folder, resume=True, progress=False)),
        ]
        if inspect_every and case % inspect_every == 0:
            from mi_plateau.api import inspect

            ops.append(("inspect", lambda: inspect(Run(folder))))
        if heavy_every and case % heavy_every == 0:
            from mi_plateau.api import analyze
            from mi_plateau.report import report

            out = tmp_path / f"an{case}"
            ops += [
                (
                    "analyze",
                    lambda: analyze([folder], out, progress=False, pass_config=AnalysisConfig(max_checkpoints=3)),
                ),
                (
                    "report",
                    lambda: report(
                        [folder],
                        out / "r.html",
                        progress=False,
                        analyses=out,
                        pass_config=AnalysisConfig(max_checkpoints=3),
                    ),
                ),
            ]
        for name, fn in ops:
            try:  # inspect runs every pass at a checkpoint: seconds, more on a busy machine
                outcome, value = _call(fn, limit if name in ("summary", "records", "load_model", "resume") else 300)
            except Hang:
                pytest.fail(f"{where}: {name} did not finish within the time limit")
            except Exception as e:  # anything but a clean error is a traceback for the user
                pytest.fail(f"{where}: {name} raised {type(e).__name__}: {e}")
            if outcome == "error":
                msg = str(value)
                assert "\n" not in msg, f"{where}: {name}: multi-line error {msg!r}"
                assert str(folder) in msg, f"{where}: {name}: the error names no file of the folder: {msg!r}"
                counts["clean error"] += 1
            else:
                counts["correct result"] += 1
                assert _answer(name, value, folder) == want.get(name, _answer(name, value, folder)), (
                    f"{where}: {name} gave another answer than the undamaged run's without an error (silent wrong)"
                )
        assert _tree_digest(outside) == before and sorted(p.name for p in outside.iterdir()) == ["victim.bin"], (
            f"{where}: something outside the run folder changed"
        )
        counts["cases"] += 1
        counts[f"kind {kind}"] += 1
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(tmp_path / f"an{case}", ignore_errors=True)
    return counts


def _report(tier: str, seed: int, counts: Counter) -> None:
    """Print the counts; with MI_PLATEAU_FUZZ_COUNTS=FOLDER also write them, with the commit and
    the date, to FOLDER/fuzz_<tier>.json (docs/reliability.md quotes the committed ones)."""
    print(f"\nfuzz {tier} tier: {dict(sorted(counts.items()))}")
    folder = os.environ.get("MI_PLATEAU_FUZZ_COUNTS")
    if folder:
        import datetime as dt
        import subprocess

        marker = "long" if tier == "default" else "slow"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        out = {
            "tier": tier,
            "seed": seed,
            "date": dt.date.today().isoformat(),
            "commit": commit,
            "command": f"MI_PLATEAU_FUZZ_COUNTS=docs/reliability python -m pytest -m {marker} -s -k {tier}_tier "
            "tests/integration/test_fuzz.py",
            "counts": dict(sorted(counts.items())),
            "silent_wrong": 0,  # a silent wrong answer fails the test: counts are written only when there is none
        }
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"fuzz_{tier}.json").write_text(json.dumps(out, indent=1) + "\n")


@pytest.mark.long
def test_fuzz_default_tier(base, tmp_path):
    counts = _fuzz(base, tmp_path, 240, seed=0)
    _report("default", 0, counts)
    assert counts["cases"] == 240 and counts["clean error"] > 0 and counts["correct result"] > 0


@pytest.mark.slow
def test_fuzz_slow_tier(base, tmp_path):
    counts = _fuzz(base, tmp_path, 2000, seed=1, inspect_every=20, heavy_every=50)
    _report("slow", 1, counts)
    assert counts["cases"] == 2000


def test_the_fuzzer_catches_a_planted_reader_bug(base, tmp_path, monkeypatch):
    """The check can fail: with the run reader's JSON loading replaced by a naive one (no
    one-line errors, no special-file checks), the fuzzer reports a case."""
    import mi_plateau.checkpoints.run as run_module

    monkeypatch.setattr(run_module, "read_json", lambda p: json.loads(Path(p).read_text()))
    with pytest.raises(pytest.fail.Exception):
        _fuzz(base, tmp_path, 60, seed=0, limit=3)


def test_the_fuzzer_catches_a_silent_wrong_answer(base, tmp_path, monkeypatch):
    """The same-answer check can fail: with the manifest's digest no longer checked (as before it
    was sealed), an in-range edit of a record is served, and the fuzzer reports the case."""
    import mi_plateau.checkpoints.run as run_module

    monkeypatch.setattr(run_module, "manifest_digest", lambda m: m.get("digest"))  # every digest "matches"
    with pytest.raises(AssertionError, match="silent wrong"):
        _fuzz(base, tmp_path, 40, seed=0, only="manifest.json")
