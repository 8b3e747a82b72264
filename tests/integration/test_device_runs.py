"""Run folders do not depend on the device: a run trained with --device cpu equals the default
run on a CPU machine, records its device, and a run moved between devices resumes and
summarizes (the cross-device case needs CUDA and skips without it)."""

import json

import pytest
import torch

from mi_plateau.checkpoints import Run
from mi_plateau.config import RunOptions, with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.train import train

HAS_CUDA = torch.cuda.is_available()


def test_device_cpu_run_records_its_device_and_equals_the_default_here(tiny_cfg, tiny_run, tmp_path):
    cfg = with_overrides(tiny_cfg, {"max_steps": 200})
    a = train(cfg, tmp_path / "a", progress=False, options=RunOptions(device="cpu"))
    recs = a.records()
    assert {r["device"] for r in recs} == {"cpu"}
    cmd = json.loads((a.path / "command.json").read_text())
    assert cmd["device"] == "cpu" and cmd["torch"] == torch.__version__
    if not HAS_CUDA:  # "auto" is the CPU here: the same run, step for step (the tiny run is the same config uncapped)
        full = {r["step"]: r for r in Run(tiny_run.path).records()}
        for r in recs[:-1]:
            assert r["metrics"] == full[r["step"]]["metrics"] and r["train_loss"] == full[r["step"]]["train_loss"]


def test_cli_refuses_a_missing_gpu_in_one_line(run_cli, tmp_path):
    if HAS_CUDA:
        pytest.skip("this machine has CUDA")
    p = run_cli("train", "--preset", "tiny", "--out", str(tmp_path / "r"), "--device", "cuda:1", "--quiet")
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "no CUDA device" in p.stderr and not (tmp_path / "r").exists()


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_a_run_moves_between_devices(tiny_cfg, tmp_path):
    """Trained on the GPU, resumed on the CPU to the end, and the other way round: both finish,
    load and summarize; their taus agree with a CPU-only run up to float rounding."""
    cfg = with_overrides(tiny_cfg, {"max_steps": 600})
    gpu = train(
        with_overrides(cfg, {"max_steps": 300}), tmp_path / "g", progress=False, options=RunOptions(device="cuda")
    )
    train(cfg, tmp_path / "g", resume=True, progress=False, options=RunOptions(device="cpu"))
    cpu = train(
        with_overrides(cfg, {"max_steps": 300}), tmp_path / "c", progress=False, options=RunOptions(device="cpu")
    )
    train(cfg, tmp_path / "c", resume=True, progress=False, options=RunOptions(device="cuda"))
    for run in (gpu, cpu):
        recs = run.records()
        assert recs[-1]["step"] == 600 and {r["device"] for r in recs} == {"cpu", "cuda:0"}
        assert run_summary(run)["last_step"] == 600 and run.load_model(600) is not None
