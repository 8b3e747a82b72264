"""GPU readiness on a CPU: every tensor the package creates names its device.

A tensor made without a device lands on the CPU, and on a GPU run it meets the model's tensors
in another place and fails. On a CPU machine that mistake is silent, so this test makes it loud:
it trains a tiny run (the live subset and the settlement included), evaluates it and runs the
passes with every tensor factory call watched (a ``TorchFunctionMode``), and fails on each call
from the package's own code that gives no ``device``."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

import mi_plateau
from mi_plateau.config import RunOptions
from mi_plateau.settle import run_summary

PACKAGE = str(Path(mi_plateau.__file__).parent)
FACTORIES = {
    torch.tensor,
    torch.as_tensor,
    torch.zeros,
    torch.ones,
    torch.empty,
    torch.full,
    torch.arange,
    torch.rand,
    torch.randn,
    torch.randint,
    torch.randperm,
    torch.eye,
    torch.linspace,
}


class DevicelessFactories(TorchFunctionMode):
    """Records ``file:line`` of each factory call from the package that names no device
    (``as_tensor`` of a tensor keeps that tensor's device, and is not a creation)."""

    def __init__(self):
        super().__init__()
        self.calls: dict[str, str] = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        copy = func is torch.as_tensor and args and torch.is_tensor(args[0])
        if func in FACTORIES and kwargs.get("device") is None and not copy:
            frame = sys._getframe(1)
            while frame is not None and f"{Path('torch')}/" in frame.f_code.co_filename.replace("\\", "/"):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename.startswith(PACKAGE):
                where = f"{Path(frame.f_code.co_filename).relative_to(PACKAGE)}:{frame.f_lineno}"
                self.calls[where] = func.__name__
        return func(*args, **kwargs)


def test_the_guard_catches_a_tensor_made_without_a_device():
    from mi_plateau.model import packing

    guard = DevicelessFactories()
    with guard:
        torch.zeros(3)  # the test's own call: not the package's
        packing.torch.zeros(2, device="cpu")
    assert guard.calls == {}
    code = compile("import torch\ndef make():\n    return torch.zeros(2)\n", f"{PACKAGE}/fake_module.py", "exec")
    scope: dict = {}
    exec(code, scope)
    with guard:
        scope["make"]()
    assert guard.calls == {"fake_module.py:3": "zeros"}


def test_training_evaluation_settlement_and_passes_name_their_devices(tmp_path, tiny_cfg):
    from mi_plateau.passes.analyze import PassConfig, analyze_run
    from mi_plateau.train import train

    # a live subset smaller than the evaluation set: the estimate, its retirement and the settlement run too
    cfg = replace(tiny_cfg, eval=replace(tiny_cfg.eval, live_groups=4))
    guard = DevicelessFactories()
    with guard:
        run = train(cfg, tmp_path / "run", progress=False, options=RunOptions(device="cpu"))
        run_summary(run)
        analyze_run(run, tmp_path / "analyses", PassConfig(), progress=False, options=RunOptions(device="cpu"))
    assert run.manifest()["status"] == "finished"
    assert guard.calls == {}, "tensors made without a device (give each one): " + ", ".join(
        f"{where} ({fn})" for where, fn in sorted(guard.calls.items())
    )


def test_the_trainers_older_device_keyword_still_works_with_a_warning(tiny_cfg, tmp_path):
    from mi_plateau.config import with_overrides
    from mi_plateau.train import train

    cfg = with_overrides(tiny_cfg, {"max_steps": 20})
    with pytest.warns(DeprecationWarning, match=r"train\(device=\.\.\.\) is deprecated"):
        old = train(cfg, tmp_path / "old", progress=False, device="cpu")
    new = train(cfg, tmp_path / "new", progress=False, options=RunOptions(device="cpu"))
    assert [r["metrics"]["Lc"] for r in old.records()] == [r["metrics"]["Lc"] for r in new.records()]
    with pytest.raises(TypeError, match="unexpected keyword argument 'devices'"):
        train(cfg, tmp_path / "x", progress=False, devices="cpu")
    with pytest.raises(TypeError, match=r"device='cpu' contradicts options.device='cuda'"):
        train(cfg, tmp_path / "y", progress=False, options=RunOptions(device="cuda"), device="cpu")
    assert not (tmp_path / "y").exists()


def test_the_trainer_runs_with_the_threads_its_options_ask_for(tiny_cfg, tmp_path):
    from mi_plateau.config import with_overrides
    from mi_plateau.train import train

    before = torch.get_num_threads()
    want = 2 if before != 2 else 1
    try:
        train(
            with_overrides(tiny_cfg, {"max_steps": 10}),
            tmp_path / "r",
            progress=False,
            options=RunOptions(threads=want),
        )
        assert torch.get_num_threads() == want
    finally:
        torch.set_num_threads(before)
