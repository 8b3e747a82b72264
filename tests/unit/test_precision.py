"""train.precision: bf16 autocast around the training forward (fp32 weights, optimizer state,
softmax and loss), refused in one line where the device has no fast bf16, and the flags that set it."""

import pytest
import torch

import mi_plateau.devices as devices
from mi_plateau.devices import DeviceError, autocast, check_precision


def _with(cfg, **train):
    from dataclasses import replace

    return replace(cfg, train=replace(cfg.train, **train))


def _model_and_tokens(cfg):
    from mi_plateau.model import build_model
    from mi_plateau.task import make_sampler, make_task

    task = make_task(cfg.task)
    tokens = make_sampler(task, cfg.train.batching, 16, 0).sample()
    return build_model(cfg), tokens


def test_bf16_is_refused_in_one_line_where_the_device_cannot_do_it(monkeypatch):
    monkeypatch.setattr(devices, "bf16_supported", lambda device: False)
    check_precision(torch.device("cpu"), "fp32")  # fp32 runs everywhere
    with pytest.raises(DeviceError) as e:
        check_precision(torch.device("cpu"), "bf16")
    assert "\n" not in str(e.value) and "--precision fp32" in str(e.value)


def test_fp32_runs_without_autocast():
    with autocast(torch.device("cpu"), "fp32"):
        assert not torch.is_autocast_enabled("cpu")
    with autocast(torch.device("cpu"), "bf16"):
        assert torch.is_autocast_enabled("cpu")


def test_the_bf16_forward_returns_fp32_logits_near_the_fp32_ones(tiny_cfg):
    from mi_plateau.model import training_forward

    model, tokens = _model_and_tokens(tiny_cfg)
    ref = training_forward(tiny_cfg, model)(tokens[:, :-1])
    got = training_forward(_with(tiny_cfg, precision="bf16"), model)(tokens[:, :-1])
    assert got.dtype == torch.float32 and got.shape == ref.shape
    diff = (got - ref).abs().max().item()
    assert 0 < diff < 0.1  # bf16 matmuls ran (not the fp32 path), and rounded as bf16 rounds (8 bits)


def test_a_bf16_step_keeps_weights_and_optimizer_state_in_fp32(tiny_cfg):
    from mi_plateau.model import training_forward
    from mi_plateau.train.step import make_optimizer, train_step

    cfg = _with(tiny_cfg, precision="bf16")
    model, tokens = _model_and_tokens(cfg)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = make_optimizer(cfg, model)
    loss, norm, _ = train_step(cfg, training_forward(cfg, model), opt, tokens, 0)
    assert torch.isfinite(torch.tensor([loss, norm])).all()
    after = model.state_dict()
    assert all(v.dtype == torch.float32 for v in after.values() if v.is_floating_point())
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the step moved the weights
    state = [s for st in opt.state.values() for s in st.values() if torch.is_tensor(s) and s.is_floating_point()]
    assert state and all(s.dtype == torch.float32 for s in state)


def test_the_stacked_forward_in_bf16_returns_fp32_logits(tiny_cfg):
    from mi_plateau.train.batched import stacked_forward

    cfg = _with(tiny_cfg, precision="bf16")
    model, tokens = _model_and_tokens(cfg)
    params = {k: v[None] for k, v in model.state_dict().items()}
    ref = stacked_forward(tiny_cfg)(params, tokens[None, :, :-1])
    got = stacked_forward(cfg)(params, tokens[None, :, :-1])
    assert got.dtype == torch.float32 and 0 < (got - ref).abs().max().item() < 0.1


def test_a_sweep_in_another_precision_gets_its_own_folder():
    from mi_plateau.reproduce.shipped import recipe_sweep
    from mi_plateau.sweeps import sweep_in_precision

    sweep = recipe_sweep("k_sweep")
    assert sweep_in_precision(sweep, None) is sweep and sweep_in_precision(sweep, "auto") is sweep
    assert sweep_in_precision(sweep, "fp32").name == f"{sweep.name}_fp32"
    bf = sweep_in_precision(sweep, "bf16")
    assert bf.name == f"{sweep.name}_bf16" and bf.overrides["train.precision"] == "bf16"
    assert [p.name for p in bf.points] == [p.name for p in sweep.points]
    assert all(p.cfg.train.precision == "bf16" for p in bf.points)
    assert all(p.cfg.train.precision == "auto" for p in sweep.points)  # the recipe's own is untouched


def test_precision_flags_change_the_runs_or_are_refused(run_cli, tmp_path):
    if not devices.bf16_supported(torch.device("cpu")):
        r = run_cli("train", "--preset", "tiny", "--precision", "bf16", "--out", str(tmp_path / "r"))
        assert r.returncode == 2 and "no fast bf16" in r.stderr and not (tmp_path / "r").exists()
    r = run_cli("reproduce", "core", "--precision", "bf16", "--dry-run")
    assert r.returncode == 2 and "--precision does not apply (it applies to: the sweep recipes" in r.stderr
    r = run_cli("reproduce", "k_sweep", "--precision", "bf16", "--dry-run")
    assert r.returncode == 2 and "give --docs another folder" in r.stderr


def test_a_recipes_dry_run_in_bf16_lists_its_own_folder(tmp_path, monkeypatch, capsys):
    import mi_plateau.reproduce.cost as cost
    from mi_plateau.cli import main

    monkeypatch.setattr(cost, "prober", lambda root, device: lambda cfg: {"s_step": 0.1, "s_eval": 1.0})
    argv = ["reproduce", "k_sweep", "--precision", "bf16", "--dry-run", "--docs", str(tmp_path / "docs")]
    assert main([*argv, "--root", str(tmp_path / "ck")]) == 0
    assert "paper_k_sweep_bf16/K3_seed0" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags, want",
    [({"avx2", "amx_bf16"}, "bf16"), ({"avx512f", "avx512_bf16"}, "bf16"), ({"avx2", "fma"}, "fp32"), (set(), "fp32")],
)
def test_auto_reads_the_cpus_bf16_units(monkeypatch, flags, want):
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset(flags))
    cpu = torch.device("cpu")
    assert devices.resolve_precision("auto", cpu) == want
    assert devices.resolve_precision("fp32", cpu) == "fp32"
    assert devices.precision_reason(cpu).startswith(f"auto = {want}")


def _tiny_auto(tiny_cfg, max_steps=20):
    return _with(tiny_cfg, precision="auto", max_steps=max_steps)


@pytest.mark.parametrize("flags, want", [({"avx512_bf16"}, "bf16"), ({"avx2"}, "fp32")])
def test_a_new_run_records_what_auto_chose_and_a_resume_keeps_it(tiny_cfg, tmp_path, monkeypatch, flags, want):
    from mi_plateau.checkpoints import Run
    from mi_plateau.train import train

    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset(flags))
    run = train(_tiny_auto(tiny_cfg), tmp_path / "r", progress=False)
    assert Run(run.path).config().train.precision == want
    assert {r["precision"] for r in Run(run.path).records()} == {want}
    # resumed with a raised cap and the default (auto): the same precision, the run continued
    run = train(_tiny_auto(tiny_cfg, max_steps=40), tmp_path / "r", resume=True, progress=False)
    assert Run(run.path).config().train.precision == want and Run(run.path).steps()[-1] == 40


def test_a_bf16_run_resumed_where_there_are_no_bf16_units_is_one_line(tiny_cfg, tmp_path, monkeypatch):
    from mi_plateau.checkpoints import Run
    from mi_plateau.train import train

    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    train(_tiny_auto(tiny_cfg), tmp_path / "r", progress=False)
    before = sorted(p.name for p in (tmp_path / "r" / "ckpt").iterdir())
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset({"avx2"}))
    with pytest.raises(DeviceError) as e:
        train(_tiny_auto(tiny_cfg, max_steps=40), tmp_path / "r", resume=True, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and "recorded train.precision" in msg and "bf16" in msg
    assert sorted(p.name for p in (tmp_path / "r" / "ckpt").iterdir()) == before  # nothing written
    assert Run(tmp_path / "r").steps()[-1] == 20


def test_the_stacked_forward_in_bf16_computes_what_a_single_run_does(tiny_cfg):
    """A batched member's bf16 logits are its single run's (the linear biases join their matmuls
    in bf16 in both), far closer to them than bf16 is to fp32."""
    from mi_plateau.model import training_forward
    from mi_plateau.train.batched import stacked_forward

    cfg = _with(tiny_cfg, precision="bf16")
    model, tokens = _model_and_tokens(cfg)
    params = {k: v.detach()[None] for k, v in model.state_dict().items()}
    with torch.no_grad():
        single = training_forward(cfg, model)(tokens[:, :-1])
        fp32 = training_forward(tiny_cfg, model)(tokens[:, :-1])
        got = stacked_forward(cfg)(params, tokens[None, :, :-1])[0]
    assert (got - single).abs().max() <= 0.05 * (single - fp32).abs().max()
