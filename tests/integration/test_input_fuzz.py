"""A seeded fuzzer of what a user types or hands over: config JSON (``train --config``), sweep
files (``sweep --dry-run``), lists of runs (``train-batch``) and command-line values (``train``,
``summary``, ``settle``). Each case runs the real command line in-process, with the trainer
replaced by a recorder (no training: the parsing and checking is what is fuzzed), and must end
in exit 0 or in exit 2 with one line on standard error; never a traceback (an exception out of
``main``), and nothing written outside the case's own folder (a sentinel folder beside it is
hashed before and after). 600 cases per run, seed fixed; the counts are printed (pytest -s) and
quoted in docs/reliability.md."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from mi_plateau.cli import main
from mi_plateau.config import preset

WEIRD = [None, True, False, 0, -1, 1e30, -1e30, 1e-30, 2**70, "", "abc", "1500", "../x", "/abs", [], {}, [1], {"a": 1}]
NAMES = ["ok", "../x", "../../x", "/abs/path", "a/b", "..", ".", "", "x" * 300, "\u00e9t\u00e9", "a b", 7]


def mutate_config(rng: random.Random) -> str:
    """A config JSON text: the tiny preset's, damaged once."""
    d = preset("tiny").to_dict()
    kind = rng.randrange(8)
    if kind == 0:  # a value of another type or range
        sec = rng.choice(["task", "model", "train", "eval"])
        d[sec][rng.choice(sorted(d[sec]))] = rng.choice(WEIRD)
    elif kind == 1:  # a key deleted
        sec = rng.choice(["task", "model", "train", "eval"])
        d[sec].pop(rng.choice(sorted(d[sec])))
    elif kind == 2:  # an unknown key
        d[rng.choice(["task", "train", "zzz"])] = {"typo": 1} if rng.random() < 0.5 else 3
    elif kind == 3:  # a section of another type
        d[rng.choice(["task", "model", "train", "eval"])] = rng.choice(WEIRD)
    elif kind == 4:  # the whole document of another type
        return json.dumps(rng.choice(WEIRD))
    elif kind == 5:  # nested deeply
        depth = rng.choice([70, 1000, 100000])
        return "[" * depth + "]" * depth
    elif kind == 6:  # cut short
        text = json.dumps(d)
        return text[: rng.randrange(len(text))]
    else:  # random bytes
        return "".join(chr(rng.randrange(1, 0x300)) for _ in range(rng.randrange(1, 60)))
    return json.dumps(d)


def mutate_sweep(rng: random.Random) -> str:
    """A sweep file: a small valid one, damaged once."""
    name = rng.choice(NAMES) if rng.random() < 0.3 else "fz"
    point_name = rng.choice(NAMES)
    value = rng.choice(WEIRD)
    key = rng.choice(["K", "lr", "max_steps", "seed", "n_b", "typo", "train.precision", "eval.alpha"])
    parts = [f"name = {json.dumps(name)}", 'preset = "tiny"']
    kind = rng.randrange(7)
    if kind == 0:
        parts += ["[[points]]", f"name = {json.dumps(point_name)}", "K = 3"]
    elif kind == 1:
        parts += ["[grid]", f"{key} = [{json.dumps(value) if value is not None else 1}]"]
    elif kind == 2:
        parts += ["[overrides]", f"{key} = {json.dumps(value) if value is not None else 1}", "[[points]]", "K = 3"]
    elif kind == 3:  # a grid too large to list
        parts += ["[grid]", "K = [3, 4, 5, 6]", f"seed = {list(range(rng.choice([10, 3000, 100000])))}"]
    elif kind == 4:  # nested deeply
        parts += ["a = " + "[" * 5000 + "]" * 5000]
    elif kind == 5:  # not TOML
        parts += ["[[points", "K = = 3"]
    else:  # valid, with an odd stop or order
        parts += [f"stop = {json.dumps(rng.choice(['tau', 'never', 1]))}", "[[points]]", "K = 3"]
    return "\n".join(parts) + "\n"


def mutate_batch(rng: random.Random, tmp: Path) -> str:
    cfg = preset("tiny").to_dict()
    items = [
        [],
        {},
        [{"out": str(tmp / "b1"), "config": rng.choice(WEIRD)}],
        [{"out": rng.choice(WEIRD)}],
        [{"config": cfg}],
        [1, 2],
        "[" * 100000,
    ]
    choice = rng.choice(items)
    return choice if isinstance(choice, str) else json.dumps(choice)


FLAG_VALUES = ["0", "-1", "1e30", "99999999999999999999", "nan", "inf", "abc", "", "0.5", "1.6", "3"]


def cli_case(rng: random.Random, case: Path, run: str) -> list[str]:
    """A command line with one fuzzed value."""
    v = rng.choice(FLAG_VALUES)
    which = rng.randrange(5)
    if which == 0:
        flag = rng.choice(["--max-steps", "--lr", "--K", "--n-b", "--batch-size", "--alpha", "--label-noise", "--seed"])
        return ["train", "--preset", "tiny", flag, v, "--out", str(case / "r"), "--quiet"]
    if which == 1:
        return ["summary", run, rng.choice(["--tau-at", "--width-at"]), v]
    if which == 2:
        return ["summary", run, "--sampled-tau", rng.choice(["--draws", "--n-sample", "--every"]), v]
    if which == 3:
        return ["settle", run, rng.choice(["--alpha", "--threshold"]), v, "--json"]
    return ["train", "--preset", "tiny", "--set", f"{rng.choice(['train.max_steps', 'eval.n_groups', 'zz'])}={v}",
            "--out", str(case / "r"), "--quiet"]  # fmt: skip


def tree_hash(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        h.update(str(f.relative_to(path)).encode())
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()


def test_fuzz_inputs(tmp_path, capsys, monkeypatch, tiny_run):
    import mi_plateau.api
    import mi_plateau.train
    import mi_plateau.train.batched

    trained: list = []
    monkeypatch.setattr(
        mi_plateau.train, "train", lambda cfg, out, **k: trained.append(cfg) or SimpleNamespace(path=out)
    )
    monkeypatch.setattr(mi_plateau.train.batched, "train_batched", lambda items, **k: trained.append(items) or [])
    monkeypatch.setattr(mi_plateau.api, "summary", lambda path: {"K": 4})
    monkeypatch.setattr("mi_plateau.commands.train.print_summary", lambda *a, **k: None)
    monkeypatch.setattr("mi_plateau.sweeps.table.run_costs", lambda run: {})
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    (sentinel / "keep.txt").write_text("untouched")
    before = tree_hash(sentinel)
    run_before = tree_hash(tiny_run.path)
    rng = random.Random(20261207)
    counts: Counter = Counter()
    for i in range(600):
        case = tmp_path / f"c{i}"
        case.mkdir()
        kind = ["config", "sweep", "batch", "cli"][i % 4]
        if kind == "config":
            f = case / "cfg.json"
            f.write_text(mutate_config(rng))
            argv = ["train", "--config", str(f), "--out", str(case / "r"), "--quiet"]
        elif kind == "sweep":
            f = case / "s.toml"
            f.write_text(mutate_sweep(rng))
            argv = ["sweep", str(f), "--root", str(case / "root"), "--dry-run"]
        elif kind == "batch":
            f = case / "runs.json"
            f.write_text(mutate_batch(rng, case))
            argv = ["train-batch", str(f), "--quiet"]
        else:
            argv = cli_case(rng, case, str(tiny_run.path))
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's own one-line errors
            code = e.code
        err = capsys.readouterr().err
        assert code in (0, 2), (argv, code, err)
        if code == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err, (argv, err)
        counts[(kind, "ok" if code == 0 else "refused")] += 1
        for p in case.rglob("*"):  # nothing escaped: every path written lies in the case's folder
            assert p.resolve().is_relative_to(case.resolve())
    assert tree_hash(sentinel) == before and tree_hash(tiny_run.path) == run_before
    assert sum(counts.values()) == 600 and all(counts[(k, "refused")] > 0 for k in ("config", "sweep", "batch", "cli"))
    print("input fuzz:", dict(sorted(counts.items())))


@pytest.mark.parametrize(
    "text, message",
    [("[]", "got list"), ("null", "got NoneType"), ('"abc"', "got str"), ("[" * 100000 + "]" * 100000, "nested")],
)
def test_a_config_of_another_shape_is_one_line(run_cli, tmp_path, text, message):
    p = run_cli("train", "--config", "-", "--out", str(tmp_path / "r"), input=text)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_nonsense_values_are_refused_or_named_apart(run_cli, tmp_path, tiny_run):
    from mi_plateau.sweeps import parse_sweep

    p = run_cli("train", "--preset", "tiny", "--max-steps", "99999999999999999999", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "train.max_steps" in p.stderr and not (tmp_path / "r").exists()
    names = [pt.name for pt in parse_sweep({"name": "n", "preset": "tiny", "grid": {"lr": [1e-30, 1e30]}}).points]
    assert names == ["lr1e-30", "lr1e30"]
    p = run_cli("summary", str(tiny_run.path), "--sampled-tau", "--n-sample", "100000")
    assert p.returncode == 2 and "more groups than the run's evaluation set holds (48)" in p.stderr
    f = tmp_path / "s.toml"
    f.write_text('name = "s"\npreset = "tiny"\n[[points]]\nK = 3\n')
    (tmp_path / "afile").write_text("x")
    p = run_cli("sweep", str(f), "--root", str(tmp_path / "afile"), "--dry-run")
    assert p.returncode == 2 and "is a file" in p.stderr


def test_a_string_for_a_number_in_a_sweep_file_is_refused(tmp_path):
    from mi_plateau.config import ConfigError
    from mi_plateau.sweeps import load_sweep

    f = tmp_path / "s.toml"
    f.write_text('name = "s"\npreset = "tiny"\n[overrides]\nmax_steps = "1500"\n[[points]]\nK = 3\n')
    with pytest.raises(ConfigError, match="train.max_steps='1500': expected a number, not a string"):
        load_sweep(f)
    f.write_text('name = "s"\npreset = "tiny"\n[[points]]\nK = "3"\n')
    with pytest.raises(ConfigError, match="expected a number, not a string"):
        load_sweep(f)
