"""A run's identity and the readers' trust (issue 32): the config is part of what a run's
manifest vouches for, configs and records read from disk are validated as strictly as values
typed on the command line, a refused resume writes nothing, pass caches are keyed by what makes
their content and live under the output they were given, static figure export survives a flaky
exporter, and a sweep with a failed run says so in its exit status.

Each test reproduces one defect of the issue; the tiny runs are 40 steps (checkpoints at 0, 20
and 40) and finish at their step cap, so a raised cap continues them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from mi_plateau.checkpoints import Run, RunError, RunLock, save_tensors
from mi_plateau.config import AnalysisConfig, ConfigError, RunOptions, preset, validate, with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.train import train

STEPS = 40
LAST = f"ckpt/step_{STEPS:06d}.safetensors"
STATE = f"resume/state_{STEPS:06d}.safetensors"


def _cfg(**over):
    return with_overrides(preset("tiny"), {"max_steps": STEPS, **over})


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """A tiny run stopped by its step cap (status finished, no tau yet)."""
    return train(_cfg(), tmp_path_factory.mktemp("integrity") / "capped", progress=False)


@pytest.fixture
def run_copy(capped, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(capped.path, dst)
    return Run(dst)


def _edit(path: Path, fn) -> None:
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d))


def _sealed(fn):
    """An edit of the manifest followed by a fresh digest: a manifest as a writer would have
    committed it, so that a check behind the digest is what the test reaches."""
    from mi_plateau.checkpoints import manifest_digest

    def edit(m):
        fn(m)
        m["digest"] = manifest_digest(m)

    return edit


def _set(section: str, key: str, value):
    return lambda d: d[section].__setitem__(key, value)


def _digest(folder: Path) -> dict[str, str]:
    """Every file of the folder but the lock (whose holder writes its pid into it)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.name != ".lock"
    }


def _one_line(e, *names: str) -> str:
    msg = str(e.value)
    assert "\n" not in msg, msg
    for n in names:
        assert n in msg, msg
    return msg


# --- 1. the config is part of the run's integrity ---------------------------------------

# in-range edits that change what the weights mean (the values differ from the tiny preset's)
EDITS = {"task.K": 5, "task.n_b": 60, "task.data_seed": 3, "eval.eval_seed": 7, "eval.alpha": 0.4, "train.lr": 0.002}


def test_the_manifest_records_the_config_the_run_was_trained_with(capped):
    assert capped.manifest()["config"] == capped.config().to_dict() == _cfg().to_dict()


@pytest.mark.parametrize("field", list(EDITS))
def test_an_edited_config_is_refused_by_every_reader_and_by_resume(run_copy, field):
    """Issue 32: an in-range edit of config.json was accepted by every reader and by resume."""
    section, key = field.split(".")
    _edit(run_copy.path / "config.json", _set(section, key, EDITS[field]))
    before = _digest(run_copy.path)
    p = run_copy.path
    readers = {
        "config": lambda: Run(p).config(),
        "summary": lambda: run_summary(Run(p)),
        "load_model": lambda: Run(p).load_model(),
        "resume": lambda: train(None, p, resume=True, progress=False),
    }
    for read in readers.values():
        with pytest.raises(RunError) as e:
            read()
        _one_line(e, str(p / "config.json"), field)
    assert _digest(p) == before


def test_the_commands_refuse_an_edited_config_in_one_line(run_copy, run_cli, tmp_path):
    _edit(run_copy.path / "config.json", _set("task", "K", 5))
    for args in (
        ("summary", str(run_copy.path)),
        ("inspect", str(run_copy.path)),
        ("ablate", str(run_copy.path)),
        ("report", str(run_copy.path), "--out", str(tmp_path / "r.html"), "--quiet"),
        ("train", "--out", str(run_copy.path), "--resume", "--quiet"),
    ):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        err = p.stderr.strip()
        assert "\n" not in err and str(run_copy.path / "config.json") in err and "task.K" in err, (args, err)
    assert not (tmp_path / "r.html").exists()


def test_a_raised_cap_updates_the_record_and_the_run_keeps_loading(run_copy):
    """The documented --max-steps raise rewrites config.json; the manifest's record follows."""
    train(_cfg(max_steps=60), run_copy.path, resume=True, progress=False)
    assert run_copy.config().train.max_steps == 60
    assert run_copy.manifest()["config"]["train"]["max_steps"] == 60
    assert run_copy.steps()[-1] == 60 and run_summary(run_copy)["last_step"] == 60


def test_a_raise_written_to_config_json_alone_still_loads(run_copy):
    """A kill between the two writes of a raise (config.json, then the manifest) leaves a run
    whose config differs from the record by the raise only: it loads, and resumes."""
    _edit(run_copy.path / "config.json", _set("train", "max_steps", 60))
    assert run_copy.config().train.max_steps == 60
    train(None, run_copy.path, resume=True, progress=False)
    assert run_copy.steps()[-1] == 60 and run_copy.manifest()["config"]["train"]["max_steps"] == 60


def test_a_lowered_cap_or_a_raise_with_another_change_is_refused(run_copy):
    _edit(run_copy.path / "config.json", _set("train", "max_steps", 20))
    with pytest.raises(RunError) as e:
        run_copy.config()
    _one_line(e, "config.json", "train.max_steps")
    _edit(run_copy.path / "config.json", lambda d: (d["train"].update(max_steps=60), d["eval"].update(alpha=0.4)))
    with pytest.raises(RunError) as e:
        run_copy.config()
    _one_line(e, "config.json", "eval.alpha")


def _format_1(m: dict) -> None:
    """What a manifest written before format version 2 looks like: no digest."""
    m.pop("digest", None)
    m["format_version"] = 1


def test_a_run_written_before_the_record_loads_as_before(run_copy):
    """A manifest without the record (older runs) loads as it always did, and the next commit of
    a resume records the config."""
    _edit(run_copy.path / "manifest.json", lambda m: (m.pop("config", None), _format_1(m)))
    assert run_copy.config() == _cfg() and run_summary(run_copy)["last_step"] == STEPS
    train(_cfg(max_steps=60), run_copy.path, resume=True, progress=False)
    assert run_copy.manifest()["config"] == _cfg(max_steps=60).to_dict()


def _nudge_L_seq(m: dict) -> None:
    metrics = m["checkpoints"][1]["record"]["metrics"]
    metrics["L_seq"] = metrics["L_seq"] * 0.999


IN_RANGE = {
    "a record's L_seq by 0.1%": _nudge_L_seq,
    "the recorded config's K": lambda m: m["config"]["task"].update(K=5),
    "a checkpoint's checksum for another's": lambda m: m["checkpoints"][0].update(sha256=m["checkpoints"][1]["sha256"]),
    "the digest deleted": lambda m: m.pop("digest"),
    "the version moved back to 1": lambda m: (m.update(format_version=1), _nudge_L_seq(m)),
}


@pytest.mark.parametrize("name", list(IN_RANGE))
def test_an_in_range_edit_of_the_manifest_is_refused_by_every_reader_and_by_resume(run_copy, name):
    """A well-formed manifest with every value in range but one changed: the readers served the
    edited record (a silent wrong answer: another tau, another log K) until the manifest was
    sealed by a digest of its content. Refused in one line, before anything is written."""
    path = run_copy.path / "manifest.json"
    _edit(path, IN_RANGE[name])
    before = _digest(run_copy.path)
    reads = (lambda: run_summary(run_copy), run_copy.records, run_copy.load_model, run_copy.config)
    for read in reads + (lambda: train(None, run_copy.path, resume=True, progress=False),):
        with pytest.raises(RunError) as e:
            read()
        _one_line(e, str(path), "digest")
    assert _digest(run_copy.path) == before


def test_every_commit_seals_the_manifest_and_a_legacy_one_is_sealed_by_its_resume(run_copy):
    from mi_plateau.checkpoints import FORMAT_VERSION, manifest_digest

    m = run_copy.manifest()
    assert m["format_version"] == FORMAT_VERSION == 2 and m["digest"] == manifest_digest(m)
    _edit(run_copy.path / "manifest.json", lambda d: (_format_1(d), _nudge_L_seq(d)))
    assert run_summary(run_copy)["last_step"] == STEPS  # format 1: no digest to check, loads as before
    train(_cfg(max_steps=60), run_copy.path, resume=True, progress=False)
    m = run_copy.manifest()
    assert m["format_version"] == 2 and m["digest"] == manifest_digest(m) and m["checkpoints"][-1]["step"] == 60


def test_a_damaged_record_of_the_config_names_the_manifest(run_copy):
    _edit(run_copy.path / "manifest.json", lambda m: m.update(config=[1, 2]))
    with pytest.raises(RunError) as e:
        run_copy.config()
    _one_line(e, str(run_copy.path / "manifest.json"))


# --- 2. what is read from disk is validated ----------------------------------------------


def test_a_model_too_large_for_memory_is_refused_in_one_line(run_cli, tmp_path):
    """--set model.d_mlp=1000000000000 died in the allocator."""
    out = tmp_path / "big"
    p = run_cli("train", "--preset", "tiny", "--set", "model.d_mlp=1000000000000", "--out", str(out), "--quiet")
    assert p.returncode == 2, p.stderr
    assert "\n" not in p.stderr.strip() and "model.d_mlp" in p.stderr, p.stderr
    assert not out.exists()
    for over in (
        {"model.n_heads": 10**6, "model.d_head": 10**6},
        {"model.n_layers": 10**5},
        {"train.batch_size": 60000, "model.d_mlp": 10**6},
    ):
        with pytest.raises(ConfigError, match="model|train.batch_size"):
            validate(with_overrides(preset("tiny"), over))
    validate(preset("paper"))  # the sizes the project trains stay far inside the bounds


def test_a_huge_value_in_config_json_is_one_line_not_a_traceback(run_copy, run_cli):
    """model.n_heads = 1e308 in config.json made `train --resume` die in a torch traceback."""
    _edit(run_copy.path / "config.json", lambda d: d["model"].update(n_heads=1e308))
    # the record too, so that the validation is what refuses
    _edit(
        run_copy.path / "manifest.json",
        _sealed(lambda m: (m["config"]["model"].update(n_heads=1e308), m.update(status="running"))),
    )
    before = _digest(run_copy.path)
    with pytest.raises(RunError) as e:
        run_summary(run_copy)
    _one_line(e, str(run_copy.path / "config.json"), "model.n_heads")
    p = run_cli("train", "--out", str(run_copy.path), "--resume", "--quiet")
    assert p.returncode == 2 and "\n" not in p.stderr.strip(), p.stderr
    assert str(run_copy.path / "config.json") in p.stderr and "model.n_heads" in p.stderr, p.stderr
    p = run_cli("train", "--out", str(run_copy.path), "--resume", "--max-steps", "60", "--quiet")
    assert p.returncode == 2 and "model.n_heads" in p.stderr, p.stderr
    assert _digest(run_copy.path) == before


def test_a_config_built_in_python_is_held_to_the_same_rules():
    from dataclasses import replace

    cfg = preset("tiny")
    for bad, field in (
        (replace(cfg, train=replace(cfg.train, lr=float("nan"))), "train.lr"),
        (replace(cfg, eval=replace(cfg.eval, alpha=float("inf"))), "eval.alpha"),
        (replace(cfg, model=replace(cfg.model, n_heads=2.5)), "model.n_heads"),
    ):
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            validate(bad)


METRIC_DAMAGE = {
    "L_seq a string": ("L_seq", "abc"),
    "Lc NaN": ("Lc", float("nan")),
    "L_seq Infinity": ("L_seq", float("inf")),
    "L_seq negative": ("L_seq", -5),
    "acc_mean above 1": ("acc_mean", 3.0),
    "swap_gap a list": ("swap_gap", [1]),
}


@pytest.mark.parametrize("name", list(METRIC_DAMAGE))
def test_a_record_with_a_bad_metric_is_refused(run_copy, name):
    """Manifest metrics were trusted as found: "abc", NaN, Infinity accepted, -5 moved tau."""
    key, value = METRIC_DAMAGE[name]
    m = json.loads((run_copy.path / "manifest.json").read_text())
    m["checkpoints"][1]["record"]["metrics"][key] = value
    m["status"] = "running"
    (run_copy.path / "manifest.json").write_text(json.dumps(m))  # NaN and Infinity as JSON's extensions write them
    for read in (
        lambda: run_summary(run_copy),
        run_copy.records,
        lambda: train(None, run_copy.path, resume=True, progress=False),
    ):
        with pytest.raises(RunError) as e:
            read()
        _one_line(e, str(run_copy.path / "manifest.json"), key)


def test_a_record_with_a_bad_train_loss_is_refused(run_copy):
    _edit(run_copy.path / "manifest.json", lambda m: m["checkpoints"][2]["record"].update(train_loss="x"))
    with pytest.raises(RunError) as e:
        run_summary(run_copy)
    _one_line(e, str(run_copy.path / "manifest.json"), "train_loss")


@pytest.mark.parametrize("name", ["config.json", "manifest.json"])
def test_a_run_file_symlinked_out_of_the_folder_is_refused(run_copy, tmp_path, name):
    """The readers followed a symlinked config.json or manifest.json out of the folder (here to
    an exact copy: the answer would even look right)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(run_copy.path / name, outside / name)
    (run_copy.path / name).unlink()
    (run_copy.path / name).symlink_to(outside / name)
    for read in (run_copy.config, lambda: run_summary(run_copy)):
        with pytest.raises(RunError) as e:
            read()
        _one_line(e, str(run_copy.path / name), "symbolic link")


def test_the_report_does_not_follow_a_symlinked_command_json(run_copy, tmp_path):
    """The report showed whatever a symlinked command.json pointed at, outside the folder."""
    from mi_plateau.report import read_command

    bait = tmp_path / "bait.json"
    bait.write_text(json.dumps({"argv": ["not", "this", "run"]}))
    assert "argv" in read_command(run_copy)  # the run's own provenance, read as found
    (run_copy.path / "command.json").unlink()
    (run_copy.path / "command.json").symlink_to(bait)
    got = read_command(run_copy)
    assert set(got) == {"error"} and "symbolic link" in got["error"] and "\n" not in got["error"]
    (run_copy.path / "command.json").unlink()
    (run_copy.path / "command.json").write_text("[1, 2]")
    assert "not a JSON object" in read_command(run_copy)["error"]


def test_a_refused_resume_with_a_raised_cap_writes_nothing(run_copy):
    """A refused resume had already rewritten config.json with the raised cap."""
    p = run_copy.path / STATE
    b = bytearray(p.read_bytes())
    b[-8:] = bytes(x ^ 0xFF for x in b[-8:])
    p.write_bytes(bytes(b))
    before = _digest(run_copy.path)
    with pytest.raises(RunError) as e:
        train(_cfg(max_steps=60), run_copy.path, resume=True, progress=False)
    _one_line(e, str(p), "checksum mismatch")
    assert _digest(run_copy.path) == before


def test_a_resume_state_of_another_dtype_is_refused(run_copy):
    """A float16 rewrite of the resume state with a matching checksum was taken by resume."""
    from safetensors.torch import load

    tensors = load((run_copy.path / STATE).read_bytes())
    tensors = {k: v.half() if v.is_floating_point() else v for k, v in tensors.items()}
    digest = save_tensors(run_copy.path / STATE, tensors)
    _edit(run_copy.path / "manifest.json", _sealed(lambda m: m.update(resume_sha256=digest, status="running")))
    with pytest.raises(RunError) as e:
        train(None, run_copy.path, resume=True, progress=False)
    _one_line(e, str(run_copy.path / STATE), "has dtype torch.float16")


def test_a_fifo_lock_is_an_error_naming_it(run_copy):
    """A .lock that is a FIFO gave "error: : Invalid argument"."""
    lock = run_copy.path / ".lock"
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    with pytest.raises(RunError) as e:
        with RunLock(run_copy.path):
            pass
    _one_line(e, str(lock), "not a regular file")
    with pytest.raises(RunError) as e:
        train(None, run_copy.path, resume=True, progress=False)
    _one_line(e, str(lock))


# --- 3. pass caches ----------------------------------------------------------------------


def test_the_pass_cache_serves_only_the_weights_it_was_made_from(tmp_path):
    """With manifests of the older format (no sha256), one run's cached passes were served for
    another run of the same task, model and evaluation settings."""
    from mi_plateau.passes.analyze import analyze_run

    runs = [train(_cfg(max_steps=20, **{"train.batch_seed": s}), tmp_path / f"r{s}", progress=False) for s in (0, 1)]
    for r in runs:
        _edit(r.path / "manifest.json", lambda m: ([c.pop("sha256") for c in m["checkpoints"]], _format_1(m)))
    shared = tmp_path / "analyses" / "same_name"
    kw = dict(steps=[20], progress=False, options=RunOptions(device="cpu"))
    analyze_run(runs[0], shared, **kw)
    served = analyze_run(runs[1], shared, **kw)["checkpoint"]
    own = analyze_run(runs[1], tmp_path / "fresh", **kw)["checkpoint"]
    assert served["Lc"].tolist() == own["Lc"].tolist()
    assert served["Lc"].tolist() != analyze_run(runs[0], tmp_path / "fresh0", **kw)["checkpoint"]["Lc"].tolist()


def test_report_keeps_its_caches_beside_its_output(capped, tmp_path, monkeypatch):
    """Every report wrote its pass cache under ./analyses of the current directory."""
    from mi_plateau.report import report

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = report(
        [capped],
        tmp_path / "rep" / "r.html",
        progress=False,
        pass_config=AnalysisConfig(max_checkpoints=3),
        plotly="cdn",
        options=RunOptions(device="cpu"),
    )
    assert out.is_file()
    assert list(cwd.iterdir()) == []
    assert (tmp_path / "rep" / capped.name / "passes").is_dir()


# --- 5. static figure export -------------------------------------------------------------


def _flaky(fails: int):
    calls = {"n": 0}

    def to_image(fig, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= fails:
            raise RuntimeError("JavascriptError: ReferenceError: kaleido_scopes is not defined")
        return b"<svg xmlns='http://www.w3.org/2000/svg'/>"

    return to_image, calls


def test_a_static_export_that_fails_once_is_retried(tmp_path, monkeypatch):
    import plotly.graph_objects as go
    import plotly.io

    import mi_plateau.outputs as outputs
    from mi_plateau.outputs import write_figure

    to_image, calls = _flaky(1)
    monkeypatch.setattr(plotly.io, "to_image", to_image)
    monkeypatch.setattr(outputs, "chromium", lambda: "/usr/bin/chromium")
    path = write_figure(tmp_path / "f.svg", go.Figure())
    assert path.read_bytes().startswith(b"<svg") and calls["n"] == 2


def test_a_static_export_that_keeps_failing_is_one_line_and_keeps_the_tables(tmp_path, monkeypatch):
    import plotly.graph_objects as go
    import plotly.io

    import mi_plateau.outputs as outputs
    from mi_plateau.outputs import write_figure, write_table

    to_image, calls = _flaky(10**6)
    monkeypatch.setattr(plotly.io, "to_image", to_image)
    monkeypatch.setattr(outputs, "chromium", lambda: "/usr/bin/chromium")
    tables = write_table(tmp_path / "t", [{"K": 4, "tau": 100}], title="t")  # a builder writes its tables first
    with pytest.raises(RunError) as e:
        write_figure(tmp_path / "f.svg", go.Figure())
    _one_line(e, str(tmp_path / "f.svg"), "kaleido_scopes")
    assert calls["n"] > 1 and all(p.is_file() for p in tables)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.json", "t.md"]  # no figure, no temporary file


def test_without_a_browser_figures_are_skipped_in_one_line_or_refused_when_asked(tmp_path, monkeypatch):
    """No Chromium: the default writes every table and skips the figures with one line that says
    how to get one; ``static=True`` (``--static``) refuses with that line, the tables kept."""
    import plotly.graph_objects as go

    import mi_plateau.outputs as outputs
    from mi_plateau.reproduce.writer import Built, Plot, Table, write_built

    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-browser"))
    assert outputs.chromium() is None
    built = Built({"t": Table("t", [{"K": 4, "tau": 100}])}, {"f": Plot("f", go.Figure())})
    written, note = write_built(tmp_path, built)
    assert [p.name for p in written] == ["t.md", "t.csv", "t.json"]
    assert "\n" not in note and "skipped 1 static figure" in note and "apt-get install chromium" in note
    assert write_built(tmp_path / "off", built, static=False)[1] == ""
    with pytest.raises(RunError) as e:
        write_built(tmp_path / "req", built, static=True)
    _one_line(e, "f.svg", "apt-get install chromium")
    assert sorted(p.name for p in (tmp_path / "req").iterdir()) == ["t.csv", "t.json", "t.md"]


def test_static_without_a_browser_is_one_line_before_any_work(tiny_run, tmp_path, run_cli):
    """``reproduce --static`` and ``report --static`` with no Chromium: exit 2, one line that says
    how to get one, nothing written; ``report`` without ``--static`` writes its page."""
    hidden = {"BROWSER_PATH": str(tmp_path / "no-such-browser")}
    docs = tmp_path / "docs"
    p = run_cli("reproduce", "k_sweep", "--static", "--root", str(tmp_path / "ck"), "--docs", str(docs), env=hidden)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "apt-get install chromium" in p.stderr, p.stderr
    assert not docs.exists() and not (tmp_path / "ck").exists()
    out = tmp_path / "rep" / "r.html"
    p = run_cli("report", str(tiny_run.path), "--out", str(out), "--static", "--quiet", env=hidden)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--static" in p.stderr, p.stderr
    assert not out.exists()


# --- 6. a sweep with a failed run ----------------------------------------------------------

SWEEP = """
name = "fails"
preset = "tiny"
[overrides]
max_steps = 20
[grid]
K = [3, 4]
"""


@pytest.mark.long  # trains a sweep in worker processes: CI's second step
def test_a_sweep_with_a_failed_run_exits_non_zero_and_names_it(tmp_path, run_cli):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    bad = tmp_path / "ck" / "fails" / "K4"
    bad.mkdir(parents=True)
    (bad / "ckpt").write_text("not a folder")  # the trainer refuses this folder: the run fails at train time
    p = run_cli("sweep", str(f), "--root", str(tmp_path / "ck"), "--jobs", "2", "--quiet")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "K4" in p.stderr and "K3" not in p.stderr, p.stderr
    assert Run(tmp_path / "ck" / "fails" / "K3").manifest()["status"] == "finished"


@pytest.mark.long  # trains a sweep in worker processes: CI's second step
def test_a_sweep_whose_run_is_killed_past_its_retries_exits_non_zero(tmp_path, run_cli):
    """A run killed more often than the retries allow was left 'running' and the sweep exited 0."""
    f = tmp_path / "s.toml"
    f.write_text(SWEEP.replace("K = [3, 4]", "K = [3]"))
    p = run_cli(
        "sweep", str(f), "--root", str(tmp_path / "ck"), "--jobs", "1", "--quiet", env={"MI_PLATEAU_CRASH": "step:5"}
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "K3" in p.stderr, p.stderr


def test_an_edited_preset_name_is_not_a_change_of_the_run(run_copy):
    """The preset names the recipe a config started from; the four sections are the run."""
    _edit(run_copy.path / "config.json", lambda d: d.update(preset="renamed"))
    assert run_copy.config().preset == "renamed" and run_summary(run_copy)["last_step"] == STEPS


def test_a_sweep_does_not_count_an_edited_finished_run_as_done(run_copy, tmp_path):
    """A finished run whose manifest was edited in range: the sweep refuses before any work (its
    plan reads every run's config through the manifest), naming the damage; its status, which
    read only the manifest's "status", is "damaged" rather than "finished"."""
    from mi_plateau.sweeps import parse_sweep
    from mi_plateau.sweeps.schedule import plan, status, work_units

    sweep = parse_sweep({"name": "s", "preset": "tiny", "overrides": {"max_steps": STEPS}, "points": [{"K": 4}]})
    folder = sweep.folder(tmp_path) / sweep.points[0].name
    shutil.copytree(run_copy.path, folder)
    assert status(folder) == "finished" and work_units(plan(sweep, tmp_path), 1) == []
    _edit(folder / "manifest.json", _nudge_L_seq)
    assert status(folder) == "damaged"
    with pytest.raises(RunError) as e:
        plan(sweep, tmp_path)
    _one_line(e, str(folder / "manifest.json"), "digest")
