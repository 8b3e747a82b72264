"""The study commands (``mi-plateau linear-control``, ``sampled-pairs``, ``llc``, ``noise-split``,
``estimator-spread``): bad input answers with the CLI's one error line and exit status 2, before
any work and without a traceback; a good call writes its JSON and names the command line."""

import json
import re

import pytest

from mi_plateau import cli

# (arguments, what the error line says); RUN: a finished tiny run, MISSING: no such folder, OUT: an
# empty folder (nothing may be written into it)
TRIES = [
    (["linear-control", "--out", "OUT/x.json", "--steps", "0"], "argument --steps: '0' must be at least 1"),
    (["linear-control", "--out", "OUT/x.json", "--steps", "-5"], "argument --steps: '-5' must be at least 1"),
    (["linear-control", "--out", "OUT/x.json", "--eval-every", "0"], "argument --eval-every: '0' must be at least 1"),
    (["linear-control", "--out", "OUT/x.json", "--K", "10", "0"], "argument --K: '0' must be at least 1"),
    (["linear-control", "--out", "OUT/x.json", "--K", "40"], "linear.K=40: must be in 2..36"),
    (["linear-control", "--out", "OUT/x.json", "--steps", "ten"], "argument --steps: 'ten' is not an integer"),
    (["linear-control", "--out", "MISSING/x.json"], "no folder"),
    (["linear-control", "--out", "OUT"], "is a folder"),
    (["linear-control"], "the following arguments are required: --out"),
    (["sampled-pairs", "RUN", "RUN", "--draws", "0"], "argument --draws: '0' must be at least 1"),
    (["sampled-pairs", "RUN", "RUN", "--n-sample", "0"], "argument --n-sample: '0' must be at least 1"),
    (["sampled-pairs", "RUN", "RUN", "--every", "-1"], "argument --every: '-1' must be at least 1"),
    (["sampled-pairs", "RUN", "RUN", "--seed", "-1"], "argument --seed: '-1' must be at least 0"),
    (["sampled-pairs", "RUN", "MISSING"], "MISSING: no such run folder"),
    (["sampled-pairs", "RUN", "OUT/none.json"], "none.json: no such file"),
    (["sampled-pairs", "RUN"], "a condition needs two or more seeds"),
    (["sampled-pairs", "RUN", "RUN", "--out", "MISSING/x.json"], "no folder"),
    (["llc", "MISSING", "--out", "OUT/x.json"], "MISSING: no such run folder"),
    (["llc", "RUN", "--out", "MISSING/x.json"], "no folder"),
    (["llc", "RUN", "--out", "OUT/x.json", "--n", "0"], "argument --n: '0' must be at least 1"),
    (["llc", "RUN", "--out", "OUT/x.json", "--upto", "0"], "argument --upto: '0' must be a positive number"),
    (["llc", "RUN", "--out", "OUT/x.json", "--lr", "-0.001"], "argument --lr: '-0.001' must be a positive number"),
    (["llc", "RUN", "--out", "OUT/x.json", "--localization", "nan"], "'nan' must be a positive number"),
    (["llc", "RUN"], "the following arguments are required: --out"),
    (["noise-split", "RUN", "--out", "MISSING/d/f.json"], "no folder"),
    (["noise-split", "MISSING"], "MISSING: no such run folder"),
    (["noise-split", "RUN", "--every", "0"], "argument --every: '0' must be at least 1"),
    (["estimator-spread", "RUN", "--every", "0"], "argument --every: '0' must be at least 1"),
    (["estimator-spread", "RUN", "--subset", "0"], "argument --subset: '0' must be at least 1"),
    (["estimator-spread", "RUN", "--rows", "0"], "argument --rows: '0' must be at least 1"),
    (["estimator-spread", "RUN", "--rows", "-2"], "argument --rows: '-2' must be at least 1"),
    (["estimator-spread", "MISSING"], "MISSING: no such run folder"),
    (["estimator-spread", "RUN", "--out", "MISSING/x.json"], "no folder"),
]


def fill(args, tiny_run, tmp_path):
    """The placeholders of ``TRIES`` as paths: OUT an empty folder, MISSING none."""
    (tmp_path / "OUT").mkdir(exist_ok=True)
    sub = {"RUN": str(tiny_run.path), "MISSING": str(tmp_path / "MISSING"), "OUT": str(tmp_path / "OUT")}
    return [next((a.replace(k, v, 1) for k, v in sub.items() if a.startswith(k)), a) for a in args]


def assert_one_error_line(stderr: str, name: str, says: str) -> None:
    """Exactly one line, ``mi-plateau NAME: error: ...`` saying ``says``; never a traceback."""
    lines = stderr.splitlines()
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert lines[0].startswith(f"mi-plateau {name}: error:") and says in lines[0], stderr


@pytest.mark.parametrize("args, says", TRIES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_input_is_one_error_line(args, says, tiny_run, tmp_path, run_cli):
    argv = fill(args, tiny_run, tmp_path)
    says = says.replace("MISSING", str(tmp_path / "MISSING"))
    p = run_cli(*argv, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert_one_error_line(p.stderr, args[0], says)
    assert p.stdout == ""
    assert list((tmp_path / "OUT").iterdir()) == [] and not (tmp_path / "MISSING").exists()  # nothing written


def test_a_runtime_error_is_exactly_one_line(tiny_run, tmp_path, run_cli):
    """Past the parser (a missing run, a missing --out folder), the error is the only line."""
    for argv in (["estimator-spread", str(tmp_path / "nowhere")], ["noise-split", str(tiny_run.path), "--out", "x/y"]):
        p = run_cli(*argv, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert p.stderr.startswith(f"mi-plateau {argv[0]}: error: "), p.stderr


def test_llc_without_devinterp_says_how_to_install_it(tiny_run, tmp_path, monkeypatch, capsys):
    """Whether or not devinterp is installed here: its import fails (None in sys.modules)."""
    monkeypatch.setitem(__import__("sys").modules, "devinterp", None)
    out = tmp_path / "llc.json"
    assert cli.main(["llc", str(tiny_run.path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mi-plateau llc: error: the LLC needs devinterp"), err
    assert 'pip install -e ".[llc]"' in err and not out.exists()


def test_linear_control_writes_its_artifact(tmp_path, run_cli):
    out = tmp_path / "linear.json"
    args = ["linear-control", "--K", "3", "--steps", "40", "--eval-every", "20", "--out", str(out)]
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["command"] == "mi-plateau " + " ".join(args)
    assert [r["step"] for r in doc["runs"][0]["curve"]] == [0, 20, 40] and doc["table12"][0]["K"] == 3
    assert "K= 3" in p.stdout and f"wrote {out}" in p.stdout


def test_sampled_pairs_replays_run_folders(tiny_run, tmp_path, run_cli):
    out = tmp_path / "pairs.json"
    args = ["sampled-pairs", str(tiny_run.path), str(tiny_run.path), "--draws", "20", "--every", "100"]
    p = run_cli(*args, "--out", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["command"] == "mi-plateau " + " ".join([*args, "--out", str(out)])
    cond = doc["condition"]
    assert cond["runs"] == [str(tiny_run.path)] * 2 and cond["draws"] == 20 and cond["every"] == 100
    assert cond["exact"]["std"] == 0  # one run twice: the same widths


def test_noise_split_writes_its_json(tiny_run, tmp_path, run_cli):
    """(The label-noise split itself, and reading a written file back: test_noise_split.py.)"""
    out = tmp_path / "split.json"
    p = run_cli("noise-split", str(tiny_run.path), "--every", "50", "--out", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["command"] == f"mi-plateau noise-split {tiny_run.path} --every 50 --out {out}"
    (run,) = doc["runs"]
    assert run["n_flipped"] == 0 and run["every"] == 50 and run["scored"]["command"] == doc["command"]


def test_estimator_spread_writes_rows_and_its_command(tiny_run, tmp_path, run_cli, capsys):
    out = tmp_path / "spread.json"
    p = run_cli("estimator-spread", str(tiny_run.path), "--every", "25", "--out", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["command"] == f"mi-plateau estimator-spread {tiny_run.path} --every 25 --out {out}"
    assert doc["rows"][0]["step"] == 0 and doc["subset"] == 20 and doc["seq_rows"] == 4  # the defaults; K = 4
    assert cli.main(["estimator-spread", str(tiny_run.path), "--every", "100"]) == 0  # no --out: standard output
    assert json.loads(capsys.readouterr().out)["rows"][0]["step"] == 0


def quoted_defaults() -> dict[str, dict[str, float]]:
    """Per command, each option's default as the study's own function or settings hold it."""
    from inspect import signature

    from mi_plateau.bench.spread import run_spread
    from mi_plateau.control.linear import LinearConfig
    from mi_plateau.estimators.llc import SGLDSettings, record_curve
    from mi_plateau.replays.noise import noise_splits
    from mi_plateau.replays.sampled import condition_from

    def defaults(f, *names):
        return {f"--{n.replace('_', '-')}": signature(f).parameters[n].default for n in names}

    return {
        "linear-control": {"--steps": LinearConfig.steps, "--eval-every": LinearConfig.eval_every},
        "sampled-pairs": defaults(condition_from, "draws", "n_sample", "every", "seed"),
        "llc": {
            **defaults(record_curve, "n", "upto"),
            "--lr": SGLDSettings.lr,
            "--localization": SGLDSettings.localization,
        },
        "noise-split": defaults(noise_splits, "every"),
        "estimator-spread": defaults(run_spread, "every", "subset", "rows"),
    }


def test_help_quotes_the_studys_own_defaults(capsys):
    """The parsers leave every default to the study's function (None: not given); the help quotes
    it, and quotes it right."""
    for name, options in quoted_defaults().items():
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args([name, "--help"])
        text = capsys.readouterr().out
        for option, want in options.items():
            start = text.index(f"  {option} ")
            end = text.find("\n  -", start + 1)
            said = re.search(r"\(default ([^),;: ]+)", " ".join(text[start:end].split()))
            assert said and float(said.group(1)) == want, f"{name} {option}: {text[start:end]}"
