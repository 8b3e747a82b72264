"""Every optional flag of every subcommand either changes what the command does or is refused
where it does not apply (exit 2, one line on standard error naming it).

``EXPECT`` holds one proof per (subcommand, flag); a flag the parser has without an entry fails
``test_every_flag_has_a_proof``. A proof runs the command in-process (``cli.main``) and shows one
of: a difference in what it prints or writes (dry runs, tiny runs, stubbed probes), the flag's
value reaching the function the command calls (that function replaced by a recorder, where
running it costs minutes: the value is in the config, the ``RunOptions`` or the keyword it
sets), or its refusal where it does not apply."""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch

from mi_plateau.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
# a --device that differs from auto's choice here: the CPU on a GPU machine, else a GPU (refused)
OTHER_DEVICE = "cpu" if torch.cuda.is_available() else "cuda"
SWEEP = 'name = "flags"\npreset = "tiny"\n[overrides]\nmax_steps = 50\n[[points]]\nK = 3\n[[points]]\nK = 4\n'
RECORDED = "K5_n_b1000_lr0.005_seed0"  # finished in the committed seeds_warmup log


@dataclass
class T:
    """What a proof has: the command line, the monkeypatch, a temporary folder, the fixtures."""

    mp: pytest.MonkeyPatch
    tmp: Path
    capsys: pytest.CaptureFixture
    request: pytest.FixtureRequest

    def cli(self, *argv) -> tuple[int, str, str]:
        """``mi-plateau ARGV`` in this process: (exit status, stdout, stderr)."""
        self.capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's own errors
            code = e.code
        got = self.capsys.readouterr()
        return code, got.out, got.err

    def ok(self, *argv) -> str:
        code, out, err = self.cli(*argv)
        assert code == 0, err
        return out

    def refused(self, flag: str, *argv) -> None:
        code, out, err = self.cli(*argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and flag in lines[0], err

    def record(self, target: str, result=None) -> list[tuple[tuple, dict]]:
        """Replace the function at the dotted path ``target`` by a recorder of its calls that
        returns ``result`` (called, where it is callable)."""
        calls: list[tuple[tuple, dict]] = []
        module, name = target.rsplit(".", 1)

        def fake(*a, **k):
            calls.append((a, k))
            return result() if callable(result) else result

        self.mp.setattr(importlib.import_module(module), name, fake)
        return calls

    @property
    def run(self) -> str:
        return str(self.request.getfixturevalue("tiny_run").path)

    @property
    def json_file(self) -> Path:
        f = self.tmp / "in.json"
        f.write_text("{}")
        return f

    @property
    def sweep_file(self) -> Path:
        f = self.tmp / "flags.toml"
        f.write_text(SWEEP)
        return f

    def probe_stub(self) -> list[str]:
        """Recipes' dry runs priced without probing; returns the devices asked for."""
        import mi_plateau.reproduce.cost as cost

        seen: list[str] = []

        def prober(root, device):
            seen.append(device)
            return lambda cfg: {"s_step": 0.01, "s_eval": 0.1}

        self.mp.setattr(cost, "prober", prober)
        return seen


Proof = Callable[[T], None]


def column(out: str, name: str) -> list[str]:
    """A column of the Markdown table in ``out``."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines() if line[:1] == "|"]
    i = rows[0].index(name)
    return [r[i] for r in rows[2:]]


# ---- train, train-batch: the config, the folder and the options reach the trainer


def train_call(t: T, *argv) -> tuple[tuple, dict]:
    """``train`` with the trainer replaced by a recorder that returns the tiny run."""
    run = t.request.getfixturevalue("tiny_run")
    calls = t.record("mi_plateau.train.train", run)
    t.ok("train", *argv)
    return calls[0]


def config_flag(flag: str, value: str, check: Callable) -> Proof:
    def proof(t: T) -> None:
        (cfg, _), _ = train_call(t, flag, value)
        (default, _), _ = train_call(t)
        assert check(cfg) and not check(default)

    return proof


def train_flag(flag_argv: list[str], check: Callable[[tuple, dict], bool]) -> Proof:
    def proof(t: T) -> None:
        a, k = train_call(t, *flag_argv(t) if callable(flag_argv) else flag_argv)
        a0, k0 = train_call(t)
        assert check(a, k) and not check(a0, k0)

    return proof


def from_config_file(t: T) -> None:
    tiny = t.request.getfixturevalue("tiny_cfg")
    (t.tmp / "c.json").write_text(tiny.to_json())
    (cfg, _), _ = train_call(t, "--config", t.tmp / "c.json")
    assert cfg == tiny and train_call(t)[0][0] != tiny


def batch_call(t: T, *argv) -> tuple[tuple, dict]:
    tiny = t.request.getfixturevalue("tiny_cfg")
    (t.tmp / "runs.json").write_text(json.dumps([{"out": str(t.tmp / "a"), "config": tiny.to_dict()}]))
    calls = t.record("mi_plateau.train.batched.train_batched", [t.request.getfixturevalue("tiny_run")])
    t.ok("train-batch", t.tmp / "runs.json", *argv)
    return calls[0]


def batch_flag(flag_argv: list[str], check: Callable[[tuple, dict], bool]) -> Proof:
    def proof(t: T) -> None:
        assert check(*batch_call(t, *flag_argv)) and not check(*batch_call(t))

    return proof


# ---- summary: what it prints, or what reaches the checks it runs


def summary_json(t: T, *argv) -> dict:
    return json.loads(t.ok("summary", t.run, "--json", *argv))


def prints_json(command: str, *argv) -> Proof:
    def proof(t: T) -> None:
        json.loads(t.ok(command, t.run, *argv, "--json"))
        with pytest.raises(json.JSONDecodeError):
            json.loads(t.ok(command, t.run, *argv))

    return proof


def asks(flag: str, *value: str, question: str) -> Proof:
    def proof(t: T) -> None:
        have = lambda s: [c["question"] for c in s["paper_crossings"]].count(question)  # noqa: E731
        assert have(summary_json(t, flag, *value)) == 1 and have(summary_json(t)) == 0
        t.refused(flag, "summary", t.run, "--exact-check", flag, *value)

    return proof


def summary_all(t: T) -> None:
    full, short = t.ok("summary", t.run, "--all"), t.ok("summary", t.run)
    assert "log_K: " in full and "log_K: " not in short and "--all" in short


def settles(flag: str, *value: str, question) -> Proof:
    def proof(t: T) -> None:
        asked = lambda *a: [c["question"] for c in json.loads(t.ok("settle", t.run, "--json", *a))["answers"]]  # noqa: E731
        q = question(t) if callable(question) else question
        assert asked(flag, *value) == [q] and q not in asked()

    return proof


def threshold_question(t: T) -> str:
    from mi_plateau.checkpoints import Run

    return f"tau at {0.5 / Run(t.run).config().task.log_K:g} log K"


def sampled(flag: str, target: str) -> Proof:
    def proof(t: T) -> None:
        t.mp.setattr(importlib.import_module("mi_plateau.replays.sampled"), "ExampleLosses", lambda *a, **k: None)
        calls = t.record(target, {"stub": True})
        got = summary_json(t, flag)
        assert len(calls) == 1 and got[flag.removeprefix("--").replace("-", "_")] == {"stub": True}

    return proof


def sampled_setting(flag: str, key: str) -> Proof:
    def proof(t: T) -> None:
        t.mp.setattr(importlib.import_module("mi_plateau.replays.sampled"), "ExampleLosses", lambda *a, **k: None)
        calls = t.record("mi_plateau.api.sampled_tau", {"stub": True})
        summary_json(t, "--sampled-tau", flag, "7")
        assert calls[0][1][key] == 7
        t.refused(flag, "summary", t.run, flag, "7")  # without an estimator to replay

    return proof


def exact_check(t: T) -> None:
    calls = t.record("mi_plateau.replays.exact_check.exact_check", lambda: {"stub": True})
    assert summary_json(t, "--exact-check")["stub"] is True and len(calls) == 1
    assert "stub" not in summary_json(t)


def spacing_check(t: T) -> None:
    calls = t.record("mi_plateau.api.spacing_check", lambda: {"stub": True})
    assert summary_json(t, "--spacing-check", "400") == {"stub": True} and calls[0][1] == {"ckpt_every_max": 400}


# ---- analysis commands: what reaches the analysis


def reaches(command: str, target: str, argv: list, check: Callable[[tuple, dict], bool], result=None) -> Proof:
    """``command RUN ARGV`` hands the flag's value to ``target`` (a recorder here), and the plain
    ``command RUN`` does not."""

    def proof(t: T) -> None:
        calls = t.record(target, result)
        t.ok(command, t.run, *argv, *(["--json"] if command in ("inspect", "ablate") else []))
        t.ok(command, t.run, *(["--json"] if command in ("inspect", "ablate") else []))
        assert check(*calls[0]) and not check(*calls[1])

    return proof


def selfcheck_flag(argv: list, check: Callable[[tuple], bool]) -> Proof:
    """``selfcheck ARGV`` hands the value to ``selfcheck.selfcheck`` (a recorder), the plain one does not."""

    def proof(t: T) -> None:
        calls = t.record(
            "mi_plateau.selfcheck.selfcheck", {"device": "cpu", "precision": "", "folder": "", "checks": []}
        )
        t.ok("selfcheck", *argv)
        t.ok("selfcheck")
        assert check(calls[0][0]) and not check(calls[1][0])

    return proof


def analyze_json(t: T) -> None:
    t.record("mi_plateau.api.analyze", {"runs": {}})
    assert json.loads(t.ok("analyze", t.run, "--json")) == {"runs": {}} and t.ok("analyze", t.run) == ""


# ---- bench


def bench(t: T, *argv) -> tuple[list, str, int]:
    calls = t.record("mi_plateau.bench.run_benchmarks", {"stub": 1})
    t.record("mi_plateau.bench.to_markdown", "| markdown |")
    code, out, _ = t.cli("bench", *argv)
    return calls, out, code


def bench_flag(argv: list, check: Callable[[dict], bool]) -> Proof:
    def proof(t: T) -> None:
        assert check(bench(t, *argv)[0][0][1]) and not check(bench(t)[0][0][1])

    return proof


def bench_json(t: T) -> None:
    assert json.loads(bench(t, "--json")[1]) == {"stub": 1} and bench(t)[1] == "| markdown |\n"


def bench_out(t: T) -> None:
    bench(t, "--out", t.tmp / "b.md")
    assert (t.tmp / "b.md").read_text() == "| markdown |"


def device_changes(*argv: str) -> Proof:
    """``--device OTHER_DEVICE`` changes the outcome of ``ARGV`` from auto's (here the only
    device auto would not pick is refused on a CPU machine, or the CPU on a GPU one)."""

    def outcome(t: T, *device: str) -> tuple:
        probed = t.probe_stub()
        bench = t.record("mi_plateau.bench.run_benchmarks", {"stub": 1})
        t.record("mi_plateau.bench.to_markdown", "")
        args = [a.replace("SWEEP", str(t.sweep_file)).replace("TMP", str(t.tmp)) for a in argv]
        return t.cli(*args, *device), probed, [k["device"] for _, k in bench]

    def proof(t: T) -> None:
        assert outcome(t, "--device", OTHER_DEVICE) != outcome(t)

    return proof


# ---- sweep: its dry run, or the RunOptions that reach run_sweep


def sweep_options(t: T, *argv) -> object:
    """The ``RunOptions`` ``sweep FILE ARGV`` hands to ``run_sweep`` (a recorder here)."""
    table = pd.DataFrame([{"run": "K3"}])
    table.attrs.update(wall_s=0.0, failed={})
    calls = t.record("mi_plateau.sweeps.run_sweep", table)
    t.ok("sweep", t.sweep_file, "--root", t.tmp / "ck", *argv)
    return calls[0][0][1]


def sweep_option(argv: list, check: Callable, refused: list) -> Proof:
    """The option reaches the ``RunOptions`` of ``run_sweep``, and ``sweep FILE REFUSED`` refuses
    it (the first flag of ``argv``)."""

    def proof(t: T) -> None:
        assert check(sweep_options(t, *argv)) and not check(sweep_options(t))
        t.refused(argv[0], "sweep", t.sweep_file, *refused)

    return proof


def sweep_dry(t: T, *argv) -> str:
    return t.ok("sweep", t.sweep_file, "--dry-run", *argv)


def sweep_dry_run(t: T) -> None:
    out = sweep_dry(t, "--root", t.tmp / "ck")
    assert "2 runs; 0 finished" in out and not (t.tmp / "ck").exists()
    assert sweep_options(t).dry_run is False  # without it, the sweep is trained


def sweep_root(t: T) -> None:
    assert f"{t.tmp / 'elsewhere'}/flags/K3" in sweep_dry(t, "--root", t.tmp / "elsewhere")
    assert "checkpoints/flags/K3" in sweep_dry(t)


def sweep_precision(t: T) -> None:
    assert "flags_bf16/K3" in sweep_dry(t, "--precision", "bf16") and "flags_bf16" not in sweep_dry(t)


def sweep_batch_runs(t: T) -> None:
    assert "with --batch-runs 2:" in sweep_dry(t, "--batch-runs", "2") and "--batch-runs" not in sweep_dry(t)
    assert sweep_options(t, "--batch-runs", "2").batch_runs == 2


# ---- reproduce: the dry runs, the RunOptions that reach the recipes, the refusals


def recipe_options(t: T, recipe: str, *argv) -> object:
    """The ``RunOptions`` ``reproduce RECIPE ARGV`` hands to its recipe (a recorder here)."""
    calls = t.record("mi_plateau.reproduce.sweeps.run_sweep_recipe", {"tables": {}, "written": []})
    t.ok("reproduce", recipe, "--root", t.tmp / "ck", "--docs", t.tmp / "docs", *argv)
    return calls[0][0][1]


def recipe_option(argv: list, check: Callable, refused_in: str) -> Proof:
    """The option reaches a sweep recipe's ``RunOptions`` (``k_sweep``), and ``reproduce
    REFUSED_IN`` refuses it."""

    def proof(t: T) -> None:
        assert check(recipe_options(t, "k_sweep", *argv)) and not check(recipe_options(t, "k_sweep"))
        code, out, err = t.cli("reproduce", refused_in, *argv)
        line = err.strip()
        assert code == 2 and f"reproduce {refused_in}" in line and f"{argv[0]} does not apply" in line, err

    return proof


def recipe_dry(t: T, recipe: str, *argv) -> str:
    t.probe_stub()
    return t.ok("reproduce", recipe, "--dry-run", "--root", t.tmp / "ck", "--docs", t.tmp / "docs", *argv)


def reproduce_dry_run(t: T) -> None:
    out = recipe_dry(t, "k_sweep")
    assert "16 runs" in out and not (t.tmp / "ck").exists() and not (t.tmp / "docs").exists()
    assert recipe_options(t, "k_sweep").dry_run is False


def reproduce_max_steps(t: T) -> None:
    steps = lambda out: [float(s) for s in column(out, "expected_steps")]  # noqa: E731
    assert max(steps(recipe_dry(t, "k_sweep", "--max-steps", "100"))) <= 100 < max(steps(recipe_dry(t, "k_sweep")))
    t.refused("--max-steps", "reproduce", "core", "--max-steps", "100")


def reproduce_precision(t: T) -> None:
    assert "paper_k_sweep_bf16/" in recipe_dry(t, "k_sweep", "--precision", "bf16")
    assert "paper_k_sweep_bf16/" not in recipe_dry(t, "k_sweep")
    t.refused("--precision", "reproduce", "core", "--precision", "bf16")


def reproduce_only(t: T) -> None:
    assert column(recipe_dry(t, "k_sweep", "--only", "K5_seed0"), "run") == [f"{t.tmp / 'ck'}/paper_k_sweep/K5_seed0"]
    assert len(column(recipe_dry(t, "k_sweep"), "run")) == 16


def reproduce_skip_recorded(t: T) -> None:
    (t.tmp / "docs").mkdir()
    shutil.copy(REPO / "docs" / "reproduction" / "paper_seeds_warmup_log.json", t.tmp / "docs")
    skipped = recipe_dry(t, "seeds_warmup", "--only", RECORDED, "--skip-recorded")
    assert "1 runs, 1 with nothing left" in skipped
    assert "1 runs, 0 with nothing left" in recipe_dry(t, "seeds_warmup", "--only", RECORDED)


def reproduce_root(t: T) -> None:
    runs = column(t.ok("reproduce", "core", "--dry-run", "--root", t.tmp / "ck"), "run")
    assert runs and all(r.startswith(str(t.tmp / "ck")) for r in runs)
    assert all(r.startswith("checkpoints/") for r in column(t.ok("reproduce", "core", "--dry-run"), "run"))


def reproduce_docs(t: T) -> None:
    t.mp.chdir(REPO)  # the default --docs: the committed tables
    assert set(column(t.ok("reproduce", "controls", "--dry-run", "--docs", t.tmp), "present")) == {"False"}
    assert "True" in column(t.ok("reproduce", "controls", "--dry-run"), "present")


def reproduce_static(t: T) -> None:
    import mi_plateau.outputs as outputs

    t.mp.setattr(outputs, "chromium", lambda: "/usr/bin/chromium")
    recipe_option(["--static"], lambda o: o.static is True, "controls")(t)


# ---- the study commands: what reaches their functions, and the files they write


def tool(command: str, target: str, result, argv: Callable[[T], list]) -> Callable:
    def call(t: T, *flags) -> tuple[list, str]:
        if command == "llc":
            t.record("mi_plateau.estimators.llc.require_devinterp")
        calls = t.record(target, result)
        return calls, t.ok(command, *argv(t), *flags)

    return call


linear = tool("linear-control", "mi_plateau.control.linear.control_record", ({"table12": []}, []), lambda t: [])
pairs = tool(
    "sampled-pairs", "mi_plateau.replays.sampled.condition_from", {"c": 1}, lambda t: [t.json_file, t.json_file]
)
curve = tool(
    "llc", "mi_plateau.estimators.llc.record_curve", {"rows": []}, lambda t: [t.run, "--out", t.tmp / "l.json"]
)
split = tool("noise-split", "mi_plateau.replays.noise.noise_splits", [], lambda t: [t.json_file])
spread = tool("estimator-spread", "mi_plateau.bench.spread.run_spread", {"s": 1}, lambda t: [t.run])


def tool_setting(call: Callable, flag: str, value: str, key: str, want, *extra: str) -> Proof:
    def proof(t: T) -> None:
        calls, _ = call(t, *extra, flag, value)
        calls0, _ = call(t, *extra)
        assert calls[0][1][key] == want and key not in calls0[0][1]

    return proof


def writes_out(call: Callable, *extra: str) -> Proof:
    """``--out FILE`` writes the JSON there; without it, it goes to standard output."""

    def proof(t: T) -> None:
        _, out = call(t, *extra, "--out", t.tmp / "o.json")
        assert out == "" and json.loads((t.tmp / "o.json").read_text())
        assert json.loads(call(t, *extra)[1])

    return proof


def linear_out(t: T) -> None:
    linear(t, "--out", t.tmp / "o.json")
    assert json.loads((t.tmp / "o.json").read_text()) == {"table12": []}


def llc_out(t: T) -> None:
    calls, _ = curve(t)
    assert str(calls[0][0][1]) == str(t.tmp / "l.json")


def llc_setting(flag: str, value: str, key: str, want) -> Proof:
    def proof(t: T) -> None:
        tool_setting(curve, flag, value, key, want)(t)
        t.refused(flag, "llc", t.run, "--out", t.tmp / "l.json", "--calibrate", flag, value)

    return proof


def llc_calibrate(t: T) -> None:
    cal = t.record("mi_plateau.estimators.llc.record_calibration", {"rows": []})
    calls, _ = curve(t, "--calibrate")
    assert len(cal) == 1 and not calls
    curve(t)
    assert len(cal) == 1


# ---- the table: (subcommand, flag) -> its proof

EXPECT: dict[tuple[str, str], Proof] = {
    ("train", "--preset"): config_flag("--preset", "tiny", lambda c: c.preset == "tiny"),
    ("train", "--config"): from_config_file,
    ("train", "--K"): config_flag("--K", "7", lambda c: c.task.K == 7),
    ("train", "--n-b"): config_flag("--n-b", "50", lambda c: c.task.n_b == 50),
    ("train", "--len-z"): config_flag("--len-z", "3", lambda c: c.task.len_z == 3),
    ("train", "--direction"): config_flag("--direction", "forward", lambda c: c.task.direction == "forward"),
    ("train", "--label-noise"): config_flag("--label-noise", "0.1", lambda c: c.task.label_noise == 0.1),
    ("train", "--seed"): config_flag(
        "--seed", "3", lambda c: (c.task.data_seed, c.model.init_seed, c.train.batch_seed) == (3, 3, 3)
    ),
    ("train", "--lr"): config_flag("--lr", "0.002", lambda c: c.train.lr == 0.002),
    ("train", "--schedule"): config_flag("--schedule", "cosine", lambda c: c.train.schedule == "cosine"),
    ("train", "--grad-clip"): config_flag("--grad-clip", "1.0", lambda c: c.train.grad_clip == 1.0),
    ("train", "--impl"): config_flag("--impl", "fast", lambda c: c.train.impl == "fast"),
    ("train", "--precision"): config_flag("--precision", "bf16", lambda c: c.train.precision == "bf16"),
    ("train", "--batch-size"): config_flag("--batch-size", "32", lambda c: c.train.batch_size == 32),
    ("train", "--max-steps"): config_flag("--max-steps", "60", lambda c: c.train.max_steps == 60),
    ("train", "--log"): config_flag("--log", "tensorboard", lambda c: c.train.log == "tensorboard"),
    ("train", "--alpha"): config_flag("--alpha", "0.3", lambda c: c.eval.alpha == 0.3),
    ("train", "--set"): config_flag("--set", "train.warmup_steps=7", lambda c: c.train.warmup_steps == 7),
    ("train", "--out"): train_flag(lambda t: ["--out", t.tmp / "r"], lambda a, k: a[1].name == "r"),
    ("train", "--resume"): train_flag(["--preset", "tiny", "--resume"], lambda a, k: k["resume"] is True),
    ("train", "--quiet"): train_flag(["--quiet"], lambda a, k: k["progress"] is False),
    ("train", "--device"): train_flag(["--device", "cpu"], lambda a, k: k["options"].device == "cpu"),
    ("train", "--threads"): train_flag(["--threads", "2"], lambda a, k: k["options"].threads == 2),
    ("train-batch", "--resume"): batch_flag(["--resume"], lambda a, k: k["resume"] is True),
    ("train-batch", "--quiet"): batch_flag(["--quiet"], lambda a, k: k["progress"] is False),
    ("train-batch", "--precision"): batch_flag(
        ["--precision", "bf16"], lambda a, k: a[0][0][0].train.precision == "bf16"
    ),
    ("train-batch", "--device"): batch_flag(["--device", "cpu"], lambda a, k: k["options"].device == "cpu"),
    ("train-batch", "--threads"): batch_flag(["--threads", "2"], lambda a, k: k["options"].threads == 2),
    ("summary", "--json"): prints_json("summary"),
    ("summary", "--all"): summary_all,
    ("settle", "--json"): prints_json("settle"),
    ("selfcheck", "--device"): selfcheck_flag(["--device", "cpu"], lambda a: a[0] == "cpu"),
    ("selfcheck", "--steps"): selfcheck_flag(["--steps", "7"], lambda a: a[1] == 7),
    ("selfcheck", "--runs"): selfcheck_flag(["--runs", "3"], lambda a: a[2] == 3),
    ("selfcheck", "--keep"): selfcheck_flag(["--keep", "somewhere"], lambda a: a[3] == "somewhere"),
    ("settle", "--alpha"): settles("--alpha", "0.35", question="tau at 0.35 log K"),
    ("settle", "--threshold"): settles("--threshold", "0.5", question=threshold_question),
    ("settle", "--width"): settles("--width", "0.9", "0.1", question="width 0.9 -> 0.1 log K"),
    ("summary", "--sampled-tau"): sampled("--sampled-tau", "mi_plateau.api.sampled_tau"),
    ("summary", "--sampled-width"): sampled("--sampled-width", "mi_plateau.api.sampled_width"),
    ("summary", "--draws"): sampled_setting("--draws", "draws"),
    ("summary", "--n-sample"): sampled_setting("--n-sample", "n_sample"),
    ("summary", "--every"): sampled_setting("--every", "every"),
    ("summary", "--tau-at"): asks("--tau-at", "0.35", question="tau at 0.35 log K"),
    ("summary", "--width-at"): asks("--width-at", "0.9,0.1", question="width 0.9 -> 0.1 log K"),
    ("summary", "--exact-check"): exact_check,
    ("summary", "--spacing-check"): spacing_check,
    ("analyze", "--out"): reaches(
        "analyze", "mi_plateau.api.analyze", ["--out", "elsewhere"], lambda a, k: a[1] == "elsewhere", {"runs": {}}
    ),
    ("analyze", "--max-checkpoints"): reaches(
        "analyze",
        "mi_plateau.api.analyze",
        ["--max-checkpoints", "3"],
        lambda a, k: k["pass_config"].max_checkpoints == 3,
        {"runs": {}},
    ),
    ("analyze", "--ablation"): reaches(
        "analyze",
        "mi_plateau.api.analyze",
        ["--ablation", "mean"],
        lambda a, k: k["pass_config"].head_ablation == "mean",
        {"runs": {}},
    ),
    ("analyze", "--mean"): reaches(
        "analyze",
        "mi_plateau.api.analyze",
        ["--mean"],
        lambda a, k: k["pass_config"].head_ablation == "mean",
        {"runs": {}},
    ),
    ("analyze", "--shifts"): reaches(
        "analyze",
        "mi_plateau.api.analyze",
        ["--shifts", "1,3"],
        lambda a, k: k["pass_config"].shifts == (1, 3),
        {"runs": {}},
    ),
    ("analyze", "--json"): analyze_json,
    ("analyze", "--quiet"): reaches(
        "analyze", "mi_plateau.api.analyze", ["--quiet"], lambda a, k: k["progress"] is False, {"runs": {}}
    ),
    ("analyze", "--device"): reaches(
        "analyze",
        "mi_plateau.api.analyze",
        ["--device", "cpu"],
        lambda a, k: k["options"].device == "cpu",
        {"runs": {}},
    ),
    ("analyze", "--threads"): reaches(
        "analyze", "mi_plateau.api.analyze", ["--threads", "2"], lambda a, k: k["options"].threads == 2, {"runs": {}}
    ),
    ("inspect", "--step"): reaches(
        "inspect", "mi_plateau.api.inspect", ["--step", "100"], lambda a, k: a[1] == 100, {}
    ),
    ("inspect", "--head"): reaches(
        "inspect", "mi_plateau.api.inspect", ["--head", "L0H1"], lambda a, k: a[2] == "L0H1", {}
    ),
    ("inspect", "--json"): prints_json("inspect"),
    ("inspect", "--device"): reaches(
        "inspect", "mi_plateau.api.inspect", ["--device", "cpu"], lambda a, k: k["options"].device == "cpu", {}
    ),
    ("inspect", "--threads"): reaches(
        "inspect", "mi_plateau.api.inspect", ["--threads", "2"], lambda a, k: k["options"].threads == 2, {}
    ),
    ("ablate", "--step"): reaches(
        "ablate", "mi_plateau.api.ablation_report", ["--step", "100"], lambda a, k: a[1] == 100, {}
    ),
    ("ablate", "--ablation"): reaches(
        "ablate",
        "mi_plateau.api.ablation_report",
        ["--ablation", "mean"],
        lambda a, k: k["head_ablation"] == "mean",
        {},
    ),
    ("ablate", "--mean"): reaches(
        "ablate", "mi_plateau.api.ablation_report", ["--mean"], lambda a, k: k["head_ablation"] == "mean", {}
    ),
    ("ablate", "--json"): prints_json("ablate"),
    ("ablate", "--device"): reaches(
        "ablate", "mi_plateau.api.ablation_report", ["--device", "cpu"], lambda a, k: k["options"].device == "cpu", {}
    ),
    ("ablate", "--threads"): reaches(
        "ablate", "mi_plateau.api.ablation_report", ["--threads", "2"], lambda a, k: k["options"].threads == 2, {}
    ),
    ("report", "--out"): reaches(
        "report", "mi_plateau.report.report", ["--out", "p.html"], lambda a, k: a[1] == "p.html", "p"
    ),
    ("report", "--plotly"): reaches(
        "report", "mi_plateau.report.report", ["--plotly", "cdn"], lambda a, k: k["plotly"] == "cdn", "p"
    ),
    ("report", "--llc"): reaches(
        "report", "mi_plateau.report.report", ["--llc", "c.json"], lambda a, k: k["llc"] == ["c.json"], "p"
    ),
    ("report", "--static"): reaches(
        "report", "mi_plateau.report.report", ["--static"], lambda a, k: k["static"] is True, "p"
    ),
    ("report", "--quiet"): reaches(
        "report", "mi_plateau.report.report", ["--quiet"], lambda a, k: k["progress"] is False, "p"
    ),
    ("report", "--device"): reaches(
        "report", "mi_plateau.report.report", ["--device", "cpu"], lambda a, k: k["options"].device == "cpu", "p"
    ),
    ("report", "--threads"): reaches(
        "report", "mi_plateau.report.report", ["--threads", "2"], lambda a, k: k["options"].threads == 2, "p"
    ),
    ("bench", "--quick"): bench_flag(["--quick"], lambda k: k["quick"] is True),
    ("bench", "--json"): bench_json,
    ("bench", "--only"): bench_flag(["--only", "price"], lambda k: k["only"] == "price"),
    ("bench", "--out"): bench_out,
    ("bench", "--device"): device_changes("bench"),
    ("sweep", "--jobs"): sweep_option(["--jobs", "2"], lambda o: o.jobs == 2, ["--dry-run", "--jobs", "2"]),
    ("sweep", "--batch-runs"): sweep_batch_runs,
    ("sweep", "--backend"): sweep_option(
        ["--backend", "ray"], lambda o: o.backend == "ray", ["--dry-run", "--backend", "ray"]
    ),
    ("sweep", "--address"): sweep_option(  # refused on the local pool
        ["--address", "host:6379", "--backend", "ray"], lambda o: o.address == "host:6379", ["--address", "host:6379"]
    ),
    ("sweep", "--root"): sweep_root,
    ("sweep", "--dry-run"): sweep_dry_run,
    ("sweep", "--quiet"): sweep_option(["--quiet"], lambda o: o.progress is False, ["--dry-run", "--quiet"]),
    ("sweep", "--precision"): sweep_precision,
    ("sweep", "--device"): device_changes("sweep", "SWEEP", "--dry-run", "--root", "TMP"),
    ("sweep", "--threads"): sweep_option(["--threads", "2"], lambda o: o.threads == 2, ["--dry-run", "--threads", "2"]),
    ("reproduce", "--dry-run"): reproduce_dry_run,
    ("reproduce", "--no-train"): recipe_option(["--no-train"], lambda o: o.train is False, "figure3"),
    ("reproduce", "--jobs"): recipe_option(["--jobs", "2"], lambda o: o.jobs == 2, "controls"),
    ("reproduce", "--batch-runs"): recipe_option(["--batch-runs", "2"], lambda o: o.batch_runs == 2, "hessian"),
    ("reproduce", "--only"): reproduce_only,
    ("reproduce", "--skip-recorded"): reproduce_skip_recorded,
    ("reproduce", "--max-steps"): reproduce_max_steps,
    ("reproduce", "--root"): reproduce_root,
    ("reproduce", "--docs"): reproduce_docs,
    ("reproduce", "--static"): reproduce_static,
    ("reproduce", "--quiet"): recipe_option(["--quiet"], lambda o: o.progress is False, "scorecard"),
    ("reproduce", "--settle"): recipe_option(["--settle"], lambda o: o.settle is True, "scorecard"),
    ("reproduce", "--precision"): reproduce_precision,
    ("reproduce", "--device"): device_changes("reproduce", "k_sweep", "--dry-run", "--root", "TMP", "--docs", "TMP"),
    ("reproduce", "--threads"): recipe_option(["--threads", "2"], lambda o: o.threads == 2, "controls"),
    ("linear-control", "--out"): linear_out,
    ("linear-control", "--K"): tool_setting(linear, "--K", "3", "Ks", [3], "--out", "o.json"),
    ("linear-control", "--steps"): tool_setting(linear, "--steps", "10", "steps", 10, "--out", "o.json"),
    ("linear-control", "--eval-every"): tool_setting(linear, "--eval-every", "5", "eval_every", 5, "--out", "o.json"),
    ("sampled-pairs", "--draws"): tool_setting(pairs, "--draws", "5", "draws", 5),
    ("sampled-pairs", "--n-sample"): tool_setting(pairs, "--n-sample", "8", "n_sample", 8),
    ("sampled-pairs", "--every"): tool_setting(pairs, "--every", "20", "every", 20),
    ("sampled-pairs", "--seed"): tool_setting(pairs, "--seed", "3", "seed", 3),
    ("sampled-pairs", "--out"): writes_out(pairs),
    ("llc", "--out"): llc_out,
    ("llc", "--n"): llc_setting("--n", "3", "n", 3),
    ("llc", "--upto"): llc_setting("--upto", "1.0", "upto", 1.0),
    ("llc", "--lr"): llc_setting("--lr", "1e-5", "lr", 1e-5),
    ("llc", "--localization"): llc_setting("--localization", "100", "localization", 100.0),
    ("llc", "--calibrate"): llc_calibrate,
    ("noise-split", "--every"): tool_setting(split, "--every", "2", "every", 2),
    ("noise-split", "--out"): writes_out(split),
    ("estimator-spread", "--every"): tool_setting(spread, "--every", "2", "every", 2),
    ("estimator-spread", "--subset"): tool_setting(spread, "--subset", "5", "subset", 5),
    ("estimator-spread", "--rows"): tool_setting(spread, "--rows", "3", "rows", 3),
    ("estimator-spread", "--out"): writes_out(spread),
}


def parser_flags() -> set[tuple[str, str]]:
    """(subcommand, flag) for every optional flag of every subcommand but --help."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {
        (name, max(a.option_strings, key=len))
        for name, p in sub.choices.items()
        for a in p._actions
        if a.option_strings and "--help" not in a.option_strings
    }


def test_every_flag_has_a_proof():
    flags = parser_flags()
    assert not flags - set(EXPECT), f"flags without an entry in EXPECT: {sorted(flags - set(EXPECT))}"
    assert not set(EXPECT) - flags, f"entries for flags the parser does not have: {sorted(set(EXPECT) - flags)}"


@pytest.mark.parametrize("key", sorted(EXPECT), ids=lambda k: f"{k[0]} {k[1]}")
def test_the_flag_changes_behaviour_or_is_refused(key, monkeypatch, tmp_path, capsys, request):
    monkeypatch.chdir(tmp_path)  # relative defaults (checkpoints/, docs/reproduction/) land here
    EXPECT[key](T(monkeypatch, tmp_path, capsys, request))


# one value per option of RunOptions, as a command line gives it
OPTION_ARGV = {
    "device": ["--device", "cpu"],
    "threads": ["--threads", "2"],
    "precision": ["--precision", "bf16"],
    "jobs": ["--jobs", "2"],
    "batch_runs": ["--batch-runs", "2"],
    "max_steps": ["--max-steps", "5"],
    "only": ["--only", "K5_seed0"],
    "skip_recorded": ["--skip-recorded"],
    "progress": ["--quiet"],
    "static": ["--static"],
    "root": ["--root", "elsewhere"],
    "docs": ["--docs", "elsewhere"],
}
MODE_ARGV = {"": [], "--no-train": ["--no-train"], "--dry-run": ["--dry-run"], "--backend ray": ["--backend", "ray"]}
MODE_ARGV["--backend ray --address"] = ["--backend", "ray", "--address", "host:6379"]


def declared_refusals() -> list[tuple[str, str, str]]:
    """(command, mode, option) for every option of ``OPTION_ARGV`` that the command's parser has
    and ``USES`` says it does not read in that mode (the options that choose a mode are the
    modes' own)."""
    from mi_plateau.commands.applies import USES

    flags = parser_flags()
    return [
        (command, mode, name)
        for command, modes in USES.items()
        for mode, names in modes.items()
        for name in OPTION_ARGV
        if name not in names.split() and ("sweep" if command == "sweep" else "reproduce", OPTION_ARGV[name][0]) in flags
    ]


@pytest.mark.parametrize("command, mode, name", declared_refusals(), ids="/".join)
def test_every_command_refuses_the_options_its_declaration_leaves_out(
    command, mode, name, tmp_path, capsys, monkeypatch
):
    """The one check is wired to every command and mode: each option ``USES`` leaves out is
    refused in one line naming its flag, before any work."""
    from mi_plateau.commands.applies import SWEEP_RECIPES_KIND

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(SWEEP)
    if command == "sweep":
        argv = ["sweep", "status", "."] if mode == "status" else ["sweep", "s.toml", *MODE_ARGV[mode]]
    else:
        recipe = "k_sweep" if command == SWEEP_RECIPES_KIND else command.removeprefix("reproduce ")
        argv = ["reproduce", recipe, *MODE_ARGV[mode]]
    flag = OPTION_ARGV[name][0]
    assert main([*argv, *OPTION_ARGV[name]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{flag} does not apply" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # refused before any work
