"""--device: resolution, the one-line errors, and what a run records of it."""

import pytest
import torch

from mi_plateau.devices import DeviceError, describe, resolve, to_cpu

HAS_CUDA = torch.cuda.is_available()


def test_auto_takes_a_gpu_only_where_there_is_one():
    assert resolve("auto") == resolve(None) == torch.device("cuda:0" if HAS_CUDA else "cpu")
    assert resolve("CPU") == torch.device("cpu")


@pytest.mark.skipif(HAS_CUDA, reason="the error is for machines without CUDA")
def test_cuda_without_a_gpu_is_a_clear_error():
    for name in ("cuda", "cuda:0", "cuda:3"):
        with pytest.raises(DeviceError, match="no CUDA device; use --device cpu or auto"):
            resolve(name)


def test_unknown_device_names_the_choices():
    with pytest.raises(DeviceError, match="expected auto, cpu, cuda or cuda:N"):
        resolve("gpu0")


def test_provenance_and_cpu_copies():
    d = describe(torch.device("cpu"))
    assert d["device"] == "cpu" and d["torch"] == torch.__version__ and "cuda" in d
    t = torch.ones(2)
    out = to_cpu({"w": t, "n": 3})
    assert out["w"] is not None and out["w"].device.type == "cpu" and out["n"] == 3


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_cuda_index_past_the_devices_is_refused():
    with pytest.raises(DeviceError, match="CUDA device"):
        resolve(f"cuda:{torch.cuda.device_count()}")


def test_compile_that_fails_falls_back_to_eager_with_one_line(monkeypatch, capsys):
    """Where torch.compile cannot build the forward (here: its first call raises, as a missing C
    compiler makes it), the forward runs eagerly and one line says so; the answer is eager's."""
    from mi_plateau.devices import compiled_or_eager

    def no_compiler(fn):
        def fail(*args):
            raise RuntimeError("InvalidCxxCompiler: No working C compiler detected.\n  (long explanation)")

        return fail

    monkeypatch.setattr(torch, "compile", no_compiler)
    f = compiled_or_eager(lambda x: x * 2)
    x = torch.arange(3.0)
    assert torch.equal(f(x), x * 2) and torch.equal(f(x), x * 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch.compile is unavailable here (RuntimeError: InvalidCxxCompiler" in err


def test_a_later_error_is_the_models_own(monkeypatch):
    from mi_plateau.devices import compiled_or_eager

    monkeypatch.setattr(torch, "compile", lambda fn: fn)  # compiles: the function itself
    f = compiled_or_eager(lambda x: x.view(2, 2))
    assert f(torch.zeros(4)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="shape"):
        f(torch.zeros(3))  # after a first call that compiled: raised, no fallback


def test_the_threads_option_sets_torchs_threads_where_the_passes_start(tiny_cfg):
    """``RunOptions(threads=N)`` reaches torch where an analysis takes its evaluation set
    (``passes.analyze.eval_set_on``); None leaves torch's setting; 0 is a one-line error."""
    import torch

    from mi_plateau.config import RunOptions
    from mi_plateau.devices import use_threads
    from mi_plateau.passes.analyze import eval_set_on

    before = torch.get_num_threads()
    want = 3 if before != 3 else 2
    try:
        eval_set_on(tiny_cfg, RunOptions())
        assert torch.get_num_threads() == before
        eval_set_on(tiny_cfg, RunOptions(threads=want))
        assert torch.get_num_threads() == want
        with pytest.raises(ValueError, match="threads=0: must be at least 1"):
            use_threads(0)
    finally:
        torch.set_num_threads(before)


def test_processes_at_once_fill_the_cores_at_the_threads_each_asks(monkeypatch):
    """``RunOptions.processes``: ``jobs`` where given, else the cores over ``threads`` (at least
    one): --threads 2 on 8 cores runs 4 processes, never 8 of 2 threads (the local pool's and a
    local Ray instance's width)."""
    import os

    from mi_plateau.config import RunOptions

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert RunOptions().processes() == 8 and RunOptions(threads=2).processes() == 4
    assert RunOptions(threads=16).processes() == 1 and RunOptions(jobs=3, threads=2).processes() == 3
