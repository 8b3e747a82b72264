import json
import math

import pytest
import torch

from mi_plateau.checkpoints import Run, RunError, load_tensors
from mi_plateau.config import with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.train import lr_at, train


def test_tiny_run_plateaus_then_transitions(tiny_run, tiny_cfg):
    """Lc sits near log K with no z-dependence for a stretch, then falls to ~0 (converged)."""
    recs = tiny_run.records()
    log_K = tiny_cfg.task.log_K
    steps = [r["step"] for r in recs]
    Lc = [r["metrics"]["Lc"] for r in recs]
    m = tiny_run.manifest()
    assert m["status"] == "finished"
    s = m["summary"]
    assert s["converged"] and Lc[-1] < tiny_cfg.train.converge_Lc
    t = s["tau"]
    assert t is not None and t >= 100  # not solved at once
    early = [r for r in recs if 0 < r["step"] <= 0.5 * t]
    assert len(early) >= 3
    for r in early:  # the plateau: Lc at log K, the selector not yet used
        assert abs(r["metrics"]["Lc"] - log_K) < 0.2 * log_K
        assert r["metrics"]["groups_100"] == 0.0
    assert 0.9 < s["definitions"]["first_token"]["plateau_ratio"] < 1.2
    # a z-blind model's L_seq is log K + KL(uniform || its scores of the K strings) >= log K:
    # on the plateau the paper's loss sits at or above log K, never clearly below
    assert s["definition"] == "paper" and s["plateau_ratio"] > 0.95
    assert recs[-1]["metrics"]["swap_gap"] > 1.0  # after the transition z matters
    assert steps[-1] >= tiny_cfg.train.post_tau_frac * t


def test_checkpoints_have_weights_and_records(tiny_run):
    m = tiny_run.manifest()
    assert m["checkpoints"][0]["step"] == 0
    for c in m["checkpoints"]:
        rec = json.loads(tiny_run.inside(c["record_file"]).read_text())
        assert rec["step"] == c["step"] and rec["examples_seen"] == c["step"] * 32
        assert set(rec["metrics"]) >= {"Lc", "L1", "full_loss", "cand_mass", "swap_gap"}
    w = load_tensors(tiny_run.inside(m["checkpoints"][-1]["weights"]))
    assert "blocks.0.attn.q.weight" in w
    assert (tiny_run.path / "config.json").exists() and (tiny_run.path / "command.json").exists()
    # only the last resume state is kept
    assert len(list((tiny_run.path / "resume").iterdir())) == 1


def test_training_is_deterministic(tmp_path, tiny_cfg):
    cfg = with_overrides(tiny_cfg, {"max_steps": 60})
    a = train(cfg, tmp_path / "a", progress=False)
    b = train(cfg, tmp_path / "b", progress=False)
    assert a.records() == b.records()
    wa, wb = a.weights(60), b.weights(60)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    c = train(with_overrides(cfg, {"model.init_seed": 1}), tmp_path / "c", progress=False)
    assert c.records()[-1]["metrics"] != a.records()[-1]["metrics"]


@pytest.mark.parametrize(
    "recipe",
    [
        {},
        {
            "train.batching": "epoch",
            "train.batch_size": 50,
            "model.init": "gpt2",
            "model.train_b_U": True,
            "train.warmup_steps": 0,
        },
    ],
)
def test_resume_after_kill_equals_uninterrupted(tmp_path, tiny_cfg, recipe):
    """Kill -9 mid-run (crash hook), resume, compare metrics and final weights bit for bit; with
    the paper recipe's epoch batches (D = 192, batch 50) the kill falls mid-epoch (step 53)."""
    cfg = with_overrides(tiny_cfg, {"max_steps": 100, **recipe})
    ref = train(cfg, tmp_path / "ref", progress=False)
    cfg_path = tmp_path / "cfg.json"
    cfg_path.write_text(cfg.to_json())
    out = tmp_path / "crashed"
    code = (
        "import json,sys; from mi_plateau.config import RunConfig; from mi_plateau.train import train;"
        f"train(RunConfig.from_dict(json.load(open({str(cfg_path)!r}))), {str(out)!r}, progress=False)"
    )
    import os
    import subprocess
    import sys

    env = {**os.environ, "MI_PLATEAU_CRASH": "step:53"}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 137, p.stderr
    partial = Run(out)
    assert partial.steps()[-1] == 40 and partial.manifest()["status"] == "running"  # <= one interval lost
    resumed = train(None, out, resume=True, progress=False)
    assert resumed.records() == ref.records()
    wa, wb = resumed.weights(100), ref.weights(100)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_existing_run_refused_without_resume(tiny_run, tiny_cfg):
    with pytest.raises(RunError, match="--resume"):
        train(tiny_cfg, tiny_run.path, progress=False)
    with pytest.raises(RunError, match="different config.*train.lr"):
        train(with_overrides(tiny_cfg, {"lr": 0.5}), tiny_run.path, resume=True, progress=False)


def test_warmup_then_constant_and_cosine(tiny_cfg):
    cfg = with_overrides(tiny_cfg, {"lr": 1e-3, "train.warmup_steps": 10, "max_steps": 110})
    assert lr_at(cfg, 0) == pytest.approx(1e-4)
    assert lr_at(cfg, 9) == pytest.approx(1e-3)
    assert lr_at(cfg, 100) == pytest.approx(1e-3)
    cos = with_overrides(cfg, {"schedule": "cosine"})
    assert lr_at(cos, 60) == pytest.approx(5e-4)
    assert lr_at(cos, 110) == pytest.approx(0.0, abs=1e-12)


def test_cli_help_is_fast_and_light(run_cli):
    p = run_cli("--help")
    assert p.returncode == 0 and "train" in p.stdout
    code = (
        "import sys; from mi_plateau.cli import build_parser; build_parser(); "
        "print('torch' in sys.modules, 'transformer_lens' in sys.modules)"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"]


def test_cli_train_and_summary(run_cli, tmp_path):
    out = tmp_path / "cli_run"
    p = run_cli("train", "--preset", "tiny", "--max-steps", "40", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    p = run_cli("summary", str(out), "--json")
    s = json.loads(p.stdout)
    for key in (
        "K",
        "log_K",
        "plateau_loss",
        "plateau_ratio",
        "tau",
        "alpha",
        "converged",
        "last_step",
        "n_checkpoints",
    ):
        assert key in s
    assert s["K"] == 4 and s["last_step"] == 40 and s["log_K"] == pytest.approx(math.log(4))
    # where the wall time went, from the checkpoint record files: a plain sum over them
    files = [json.loads(f.read_text()) for f in sorted((out / "ckpt").glob("step_*.json"))]
    c = s["costs"]
    settled = out / "settled.json"
    settle_s = json.loads(settled.read_text())["settle_s"] if settled.is_file() else 0.0
    assert c["checkpoints"] == s["n_checkpoints"] == len(files) and c["settle_s"] == pytest.approx(settle_s)
    assert c["run_wall_s"] == pytest.approx(files[-1]["wall_s"] + files[-1]["eval_s"])
    assert c["wall_s"] == pytest.approx(c["run_wall_s"] + settle_s)
    assert c["live_eval_s"] == pytest.approx(sum(f["eval_s"] for f in files)) and c["live_eval_s"] > 0
    assert c["eval_s"] == pytest.approx(c["live_eval_s"] + settle_s)
    assert c["eval_share"] == pytest.approx(c["live_eval_s"] / c["run_wall_s"])  # what evaluation costs the run
    text = run_cli("summary", str(out)).stdout
    assert f"evaluation: {100 * c['eval_share']:.1f}% of the run's" in text
    for f in (out / "ckpt").glob("step_*.json"):  # a run written before eval_s was recorded
        d = json.loads(f.read_text())
        del d["eval_s"]
        f.write_text(json.dumps(d))
    c = json.loads(run_cli("summary", str(out), "--json").stdout)["costs"]
    assert c["eval_s"] is None and c["eval_share"] is None and c["wall_s"] == files[-1]["wall_s"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["train", "--K", "40"], "task.K=40"),
        (["train", "--K", "ten"], "'ten' is not an integer"),
        (["train", "--lr", "abc"], "'abc' is not a number"),
        (["train", "--preset", "huge"], "invalid choice"),
        (["train", "--set", "train.momentum=0.9"], "unknown setting"),
        (["train", "--set", "noequals"], "expected key=value"),
        (["train", "--n-b", "0"], "task.n_b=0"),
        (["train", "--alpha", "1.5"], "eval.alpha=1.5"),
        (["summary", "/nonexistent/run"], "no such run folder"),
    ],
)
def test_cli_bad_input_gives_clear_error(run_cli, args, message, tmp_path):
    p = run_cli(*args, "--out", str(tmp_path / "x")) if args[0] == "train" else run_cli(*args)
    assert p.returncode == 2
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "x").exists()  # nothing was created


def test_selector_free_control_trains_and_summarises(run_cli, tmp_path, tiny_cfg):
    """B->A without a selector: no swap gap (NaN, stored as null) must not break the summaries."""
    from mi_plateau.api import summary

    cfg = with_overrides(tiny_cfg, {"direction": "b_a", "max_steps": 40})
    run = train(cfg, tmp_path / "b_a", progress=False)
    s = summary(run.path)
    assert s["swap_gap_0.1_step"] is None and s["last_step"] == 40
    assert s["tau"] is None  # without z the candidate loss cannot leave log K
    p = run_cli("summary", str(run.path), "--json")
    assert p.returncode == 0, p.stderr


def test_invalid_config_leaves_no_folder(tmp_path, tiny_cfg):
    from mi_plateau.config import ConfigError

    with pytest.raises(ConfigError):
        train(with_overrides(tiny_cfg, {"K": 99}), tmp_path / "bad", progress=False)
    assert not (tmp_path / "bad").exists()


def test_summary_command_does_not_import_torch(tiny_run):
    import subprocess
    import sys

    code = (
        f"import sys; from mi_plateau.cli import main; main(['summary', {str(tiny_run.path)!r}]);"
        "print('torch' in sys.modules, 'transformer_lens' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split()[-2:] == ["False", "False"], out.stderr


def test_bridge_step_calls_the_native_module(tiny_cfg):
    """train.impl=bridge calls the bridge's native module directly: same parameters, same logits."""
    from mi_plateau.model import build_model

    model = build_model(tiny_cfg)
    model.train()
    toks = torch.randint(4, 40, (8, 12))
    assert all(a is b for a, b in zip(model.parameters(), model.original_model.parameters()))
    assert torch.equal(model(toks), model.original_model(toks))


@pytest.mark.parametrize("impl", ["standard", "fast", "bridge"])
def test_step_implementations_compute_the_bridge_function(tiny_cfg, impl):
    """Every train.impl gives the bridge's logits at the loss positions, and its gradients
    reach the bridge's own parameters (the ones the optimizer and the checkpoints hold)."""
    from mi_plateau.model import build_model, training_forward
    from mi_plateau.task import BatchSampler, make_task

    cfg = with_overrides(tiny_cfg, {"impl": impl})
    model = build_model(cfg)
    toks = BatchSampler(make_task(cfg.task), 16, 0).sample()[:, :-1]
    pos = make_task(cfg.task).layout.pred_positions
    with torch.no_grad():
        ref = model(toks)[:, pos.start : pos.stop]
    model.train()
    out = training_forward(cfg, model)(toks)
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=1e-5)
    out.square().sum().backward()
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "unembed.b" not in n
    )


def test_fast_step_trains_like_the_standard_step(tmp_path, tiny_cfg):
    """The opt-in fast step is another rounding of the same function: its loss curve follows
    the default one closely and it, too, plateaus and transitions."""
    a = train(with_overrides(tiny_cfg, {"max_steps": 80}), tmp_path / "std", progress=False)
    b = train(with_overrides(tiny_cfg, {"max_steps": 80, "impl": "fast"}), tmp_path / "fast", progress=False)
    ra, rb = a.records(), b.records()
    assert [r["step"] for r in ra] == [r["step"] for r in rb]
    for x, y in zip(ra, rb):
        assert abs(x["metrics"]["Lc"] - y["metrics"]["Lc"]) < 1e-3
    assert b.config().train.impl == "fast"


def test_runs_written_before_impl_existed_resume_with_the_bridge(tmp_path, tiny_cfg):
    cfg = with_overrides(tiny_cfg, {"max_steps": 40})
    run = train(cfg, tmp_path / "old", progress=False)
    d = json.loads((run.path / "config.json").read_text())
    del d["train"]["impl"], d["train"]["compile"]
    (run.path / "config.json").write_text(json.dumps(d))
    m = json.loads((run.path / "manifest.json").read_text())  # runs of that time had no config record
    m.pop("config"), m.pop("digest")  # ... and no digest (format version 1)
    m["format_version"] = 1
    (run.path / "manifest.json").write_text(json.dumps(m))
    assert Run(run.path).config().train.impl == "bridge"
    with pytest.raises(RunError, match="train.impl: stored 'bridge', given 'standard'"):
        train(cfg, run.path, resume=True, progress=False)


def test_a_run_finished_at_max_steps_continues_with_a_larger_cap(run_cli, tmp_path, tiny_cfg):
    """Raising train.max_steps on resume changes only the stopping rule: the continued run
    equals one trained with the larger cap from the start. Any other change is still refused."""
    short = with_overrides(tiny_cfg, {"max_steps": 60})
    run = train(short, tmp_path / "ext", progress=False)
    assert run.manifest()["status"] == "finished" and run.steps()[-1] == 60
    longer = with_overrides(tiny_cfg, {"max_steps": 100})
    train(longer, run.path, resume=True, progress=False)
    ref = train(longer, tmp_path / "ref", progress=False)
    assert Run(run.path).records() == ref.records()
    assert Run(run.path).config().train.max_steps == 100
    wa, wb = Run(run.path).weights(100), ref.weights(100)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    cos = with_overrides(tiny_cfg, {"max_steps": 40, "schedule": "cosine"})
    train(cos, tmp_path / "cos", progress=False)  # the cap shapes its learning rate: not an extension
    with pytest.raises(RunError, match="different config.*max_steps"):
        train(with_overrides(cos, {"max_steps": 80}), tmp_path / "cos", resume=True, progress=False)
    p = run_cli("train", "--out", str(run.path), "--resume", "--max-steps", "120", "--quiet")
    assert p.returncode == 0, p.stderr
    assert Run(run.path).steps()[-1] == 120


def test_shared_bos_forward_has_the_same_logits_and_gradients(tiny_cfg):
    """The fast step computes BOS once per batch; logits and every parameter's gradient equal
    the forward that computes it in every row. Rows that do not share it are refused."""
    from mi_plateau.model import build_model
    from mi_plateau.model.forward import Weights, forward
    from mi_plateau.task import BatchSampler, make_task

    model = build_model(tiny_cfg)
    m = tiny_cfg.model
    toks = BatchSampler(make_task(tiny_cfg.task), 16, 0).sample()[:, :-1]
    grads = []
    for shared in (0, 1):
        params = model.state_dict(keep_vars=True)
        W = Weights.from_state_dict(params, m.n_layers, m.n_heads, m.d_head)
        out = forward(W, toks, 5, shared)
        model.zero_grad()
        out.square().sum().backward()
        grads.append((out.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (a, ga), (b, gb) = grads
    assert torch.allclose(a, b, atol=1e-5) and ga.keys() == gb.keys()
    scale = max(g.abs().max().item() for g in ga.values())  # k's bias has a zero gradient: compare to the largest
    assert all((ga[n] - gb[n]).abs().max() <= 1e-6 * scale for n in ga)
    bad = toks.clone()
    bad[0, 0] = bad[0, 1]
    with pytest.raises(ValueError, match="same tokens"):
        forward(W, bad, 5, 1)


def test_summary_prints_units_and_no_line_twice(tiny_run, run_cli):
    p = run_cli("summary", str(tiny_run.path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == len(set(lines)) and sum(ln.startswith("run:") or "  run:" in ln for ln in lines) == 1
    s = run_summary(tiny_run)
    assert f"L_seq: tau {s['tau']:,} (exact)" in p.stdout and "log K 1.386 nats" in p.stdout
    assert "None" not in p.stdout
    full = run_cli("summary", str(tiny_run.path), "--all").stdout
    assert f"tau: {s['tau']} steps" in full and "log_K: " in full and "None" not in full


@pytest.mark.parametrize("clip", [0.0, 0.05])
def test_records_hold_the_gradient_norm_before_clipping(tmp_path, tiny_cfg, clip):
    """grad_norm_mean / max at a checkpoint are the pre-clip norms of the steps since the last
    one, equal to a plain recomputation of the first step's gradient; clipped_frac is the share
    of those steps that clipping shortened (None without clipping)."""
    from mi_plateau.model import build_model, training_forward
    from mi_plateau.task import make_sampler, make_task
    from mi_plateau.train import batch_loss

    cfg = with_overrides(
        tiny_cfg, {"max_steps": 3, "train.ckpt_every": 1, "train.ckpt_every_transition": 1, "train.grad_clip": clip}
    )
    recs = train(cfg, tmp_path / "r", progress=False).records()
    assert recs[0]["grad_norm_mean"] is None and recs[0]["clipped_frac"] is None  # step 0: no step taken yet
    model = build_model(cfg)
    task = make_task(cfg.task)
    tokens = make_sampler(task, cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed).sample()
    batch_loss(cfg, training_forward(cfg, model)(tokens[:, :-1]), tokens).backward()
    want = math.sqrt(sum(float((p.grad**2).sum()) for p in model.parameters() if p.grad is not None))
    r1 = recs[1]
    assert r1["grad_norm_mean"] == pytest.approx(want, rel=1e-5) and r1["grad_norm_max"] == r1["grad_norm_mean"]
    if clip:
        assert want > clip and r1["clipped_frac"] == 1.0  # an init gradient is far above 0.05
    else:
        assert r1["clipped_frac"] is None
    assert all(r["grad_norm_mean"] > 0 for r in recs[1:])


def test_reading_the_gradient_norm_leaves_the_update_unchanged(tmp_path, tiny_cfg, monkeypatch):
    """Without clipping the norm is only read: the weights equal those of a run whose update
    does not compute it at all (AdamW straight from the gradients), bit for bit."""
    import mi_plateau.train.step as tr  # where train_step looks apply_update up

    cfg = with_overrides(tiny_cfg, {"max_steps": 40})
    a = train(cfg, tmp_path / "a", progress=False)

    def plain_update(cfg, opt, step):
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        opt.step()
        return 0.0

    monkeypatch.setattr(tr, "apply_update", plain_update)
    b = train(cfg, tmp_path / "b", progress=False)
    wa, wb = a.weights(40), b.weights(40)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert b.records()[-1]["grad_norm_mean"] == 0.0 and a.records()[-1]["grad_norm_mean"] > 0


def test_costs_count_every_evaluation_across_a_resume(tmp_path, tiny_cfg):
    """A resumed run's wall time starts after the last checkpoint's evaluation, so the
    evaluation share over the run is every eval_s over the wall time less the evaluations in it."""
    from mi_plateau.sweeps.table import run_costs

    cfg = with_overrides(tiny_cfg, {"max_steps": 20, "train.stop": "budget"})
    train(cfg, tmp_path / "r", progress=False)
    run = train(with_overrides(cfg, {"max_steps": 40}), tmp_path / "r", resume=True, progress=False)
    files = [json.loads(f.read_text()) for f in sorted((run.path / "ckpt").glob("step_*.json"))]
    i = next(i for i, f in enumerate(files) if f["step"] > 20)
    assert files[i]["wall_s"] >= files[i - 1]["wall_s"] + files[i - 1]["eval_s"]
    c = run_costs(run)
    ev = [f["eval_s"] for f in files]
    assert c["live_eval_s"] == pytest.approx(sum(ev)) and c["checkpoints"] == len(files)
    assert c["wall_s"] == pytest.approx(files[-1]["wall_s"] + ev[-1] + c["settle_s"])
    assert c["eval_share"] == pytest.approx((sum(ev) + c["settle_s"]) / c["wall_s"])


def test_a_widening_spacing_writes_a_subset_of_the_dense_checkpoints(tmp_path, tiny_cfg, run_cli):
    """train.ckpt_every_max decides which steps get a checkpoint, never the training state: a run
    on a quiet plateau under a widening spacing writes fewer checkpoints, each with the dense
    run's evaluation at that step (the training means cover the steps since the last checkpoint),
    the same final weights, and exactly the steps the records replay
    (``replays.spacing``) picks; a dense run resumed under the wider spacing is accepted
    (``config.extends``) and ends with the same weights."""
    from mi_plateau.replays.spacing import kept_records

    base = {"lr": 1e-5, "max_steps": 200, "train.ckpt_every": 10, "eval.plateau_start": 20}
    dense_cfg = with_overrides(tiny_cfg, base)
    wide_cfg = with_overrides(tiny_cfg, {**base, "train.ckpt_every_max": 40})
    dense = train(dense_cfg, tmp_path / "dense", progress=False)
    wide = train(wide_cfg, tmp_path / "wide", progress=False)
    d = {r["step"]: r["metrics"] for r in dense.records()}
    w = wide.records()
    assert len(w) < len(d) and w[-1]["step"] == 200 and w[-1]["step"] - w[-2]["step"] == 20
    assert all(r["metrics"] == d[r["step"]] for r in w)
    assert [r["step"] for r in kept_records(wide_cfg, dense.records())[0]] == [r["step"] for r in w]
    wa, wb = dense.weights(200), wide.weights(200)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    half = train(with_overrides(dense_cfg, {"max_steps": 100}), tmp_path / "half", progress=False)
    train(wide_cfg, half.path, resume=True, progress=False)
    cont = Run(half.path)
    assert cont.config().train.ckpt_every_max == 40 and cont.steps()[-1] == 200
    assert all(r["metrics"] == d[r["step"]] for r in cont.records())
    wc = cont.weights(200)
    assert all(torch.equal(wa[k], wc[k]) for k in wa)
    from mi_plateau import spacing_check

    g = spacing_check(dense.path, ckpt_every_max=40)
    assert g["kept"] == len(w) and g["kept_steps"] == [r["step"] for r in w] and g["all_equal"] is True
    p = run_cli("summary", str(wide.path), "--spacing-check", "80")
    assert p.returncode != 0 and "already widened" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_resume_where_there_is_no_run_and_an_oversized_eval_set_each_say_one_line(tmp_path, run_cli):
    """Two quiet surprises made loud: ``--resume`` into a folder with no run says it starts one;
    ``eval.n_groups`` above ``task.n_b`` says the evaluation set holds every group."""
    out = tmp_path / "fresh"
    p = run_cli(
        "train", "--preset", "tiny", "--max-steps", "40", "--resume", "--out", str(out), "--quiet",
        "--set", "eval.n_groups=100000",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"nothing to resume in {out}: starting a new run there" in p.stderr
    assert "eval.n_groups 100000 is above task.n_b 48: the evaluation set holds all 48 groups" in p.stderr
    p = run_cli("train", "--resume", "--out", str(out), "--quiet")  # the stored config: a run to resume
    assert p.returncode == 0 and "nothing to resume" not in p.stderr, p.stderr


def test_a_resume_with_the_default_live_subset_keeps_the_one_the_run_recorded(tmp_path, tiny_cfg):
    """A run records its live subset (on a GPU, every group where a full scoring is cheap); a
    resume given the default config continues with the recorded value, and config.json keeps it."""
    from mi_plateau.config import EvalConfig
    from mi_plateau.train.folder import open_config

    cfg = with_overrides(tiny_cfg, {"max_steps": 20, "eval.live_groups": 0})
    run = train(cfg, tmp_path / "r", progress=False)
    again = with_overrides(tiny_cfg, {"max_steps": 20, "eval.live_groups": EvalConfig.live_groups})
    assert open_config(again, run, resume=True, argv=None).eval.live_groups == 0
    assert json.loads((run.path / "config.json").read_text())["eval"]["live_groups"] == 0
