"""Where tensors live: ``--device {auto,cpu,cuda,cuda:N}`` resolved once, and the provenance a
run records of it (docs/performance.md).

A device is a property of a process, never of a run: run folders hold CPU tensors (safetensors
and JSON), so a run trained on a GPU loads, resumes and is analysed on a CPU and the other way
round. What differs between devices is float rounding (other kernels sum in another order), so
a run resumed on another device continues the same run up to that rounding, not bit for bit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"


class DeviceError(ValueError):
    """The requested device does not exist on this machine; the message says which ones do."""


def resolve(name: str | torch.device | None = "auto") -> torch.device:
    """``auto`` (or None): the first CUDA device when there is one, else the CPU; ``cpu``;
    ``cuda`` or ``cuda:N``, which must exist here."""
    if isinstance(name, torch.device):
        name = str(name)
    name = (name or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", name)
    if not m:
        raise DeviceError(f"--device {name!r}: expected {DEVICE_CHOICES}")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(m.group(1) or 0)
    if index >= n:
        have = "no CUDA device" if n == 0 else f"{n} CUDA device{'s' * (n > 1)} (cuda:0..cuda:{n - 1})"
        raise DeviceError(f"--device {name!r}: this machine has {have}; use --device cpu or auto")
    return torch.device(f"cuda:{index}")


def describe(device: torch.device) -> dict[str, Any]:
    """What a run's provenance records of the device it trained on."""
    out: dict[str, Any] = {"device": str(device), "torch": torch.__version__, "cuda": torch.version.cuda}
    if device.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(device)
    return out


def to_cpu(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors on the CPU (the run folder's device); CPU tensors are returned as they are."""
    return {k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in tensors.items()}


def bf16_units(device: torch.device) -> str | None:
    """What gives ``device`` fast bf16 arithmetic, in words, or None where it has none: a CUDA GPU
    that supports bf16 (``torch.cuda.is_bf16_supported``); a CPU whose flags (``/proc/cpuinfo``)
    name AMX-BF16 or AVX512-BF16, the units oneDNN's bf16 matmuls run on. Elsewhere torch emulates
    bf16 far below fp32 speed, so ``auto`` keeps fp32 there."""
    if device.type == "cuda":
        return "a CUDA GPU with bf16" if torch.cuda.is_bf16_supported() else None
    if device.type != "cpu":
        return None
    flags = cpu_flags()
    for flag, name in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16")):
        if flag in flags:
            return f"a CPU with {name}"
    return None


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty where ``/proc/cpuinfo`` is not there:
    another OS, where ``auto`` then keeps fp32)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def bf16_supported(device: torch.device) -> bool:
    """Whether ``device`` runs bf16 matmuls at speed (``bf16_units``)."""
    return bf16_units(device) is not None


def resolve_precision(precision: str, device: torch.device, recorded: str | None = None) -> str:
    """The arithmetic a run trains in: ``recorded`` (what an existing run used: a resume keeps it)
    when there is one, else ``precision`` with ``auto`` resolved for ``device`` (bf16 where it has
    bf16 units, ``bf16_units``; fp32 elsewhere). A one-line ``DeviceError`` where the answer is
    bf16 and ``device`` cannot run it."""
    chosen = recorded or precision
    if chosen == "auto":
        chosen = "bf16" if bf16_supported(device) else "fp32"
    if chosen == "bf16" and not bf16_supported(device):
        what = "this GPU" if device.type == "cuda" else "this CPU (no AVX512-BF16 or AMX-BF16)"
        if recorded:
            raise DeviceError(
                f"this run trained in bf16 (its recorded train.precision) and {what} has no fast bf16 units; "
                "resume it on a machine that has them"
            )
        raise DeviceError(
            f"train.precision 'bf16': {what} has no fast bf16 units; use --precision fp32 (or auto: fp32 here)"
        )
    return chosen


def precision_reason(device: torch.device) -> str:
    """Why ``auto`` picks what it picks on ``device``, in one line (the bench and selfcheck say it)."""
    units = bf16_units(device)
    if units:
        return f"auto = bf16: {units}"
    return "auto = fp32: no bf16 units (a CPU without AVX512-BF16 or AMX-BF16, or a GPU without bf16)"


def check_precision(device: torch.device, precision: str) -> None:
    """A one-line ``DeviceError`` where ``precision`` cannot run on ``device``."""
    resolve_precision(precision, device)


def autocast(device: torch.device, precision: str) -> AbstractContextManager:
    """The context the training forward runs in: bf16 autocast for ``precision`` "bf16" (matmuls
    in bf16, everything autocast keeps in fp32 as it is), nothing for "fp32"."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


def in_precision(fn: Callable[..., torch.Tensor], precision: str) -> Callable[..., torch.Tensor]:
    """``fn`` (a training forward: its last argument the input tokens, its result the logits)
    under ``autocast`` on the tokens' device, its logits returned in fp32 so the loss is reduced in
    fp32; for "fp32", ``fn`` itself."""
    if precision == "fp32":
        return fn

    def cast(*args: Any) -> torch.Tensor:
        p = resolve_precision(precision, args[-1].device)  # "auto": what this device runs best
        if p == "fp32":
            return fn(*args)
        with autocast(args[-1].device, p):
            logits = fn(*args)
        return logits.float()

    return cast


def use_threads(threads: int | None) -> None:
    """torch's intra-op threads in this process (``RunOptions.threads``); None leaves torch's
    setting as it is."""
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads={threads}: must be at least 1")
        torch.set_num_threads(threads)


def configure(device: torch.device) -> None:
    """Process-wide arithmetic for ``device``: fp32 means fp32 (no TF32 on a CUDA GPU, torch's
    "highest" matmul precision), so a GPU's fp32 run meets the CPU's at rounding level; the
    speed comes from ``train.precision = auto`` (bf16 where the device has it)."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("highest")


def compiled_or_eager(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``torch.compile(fn)``, or ``fn`` itself where its first call cannot compile (no C
    compiler, a backend this machine lacks): one line on stderr says so, and the run trains
    eagerly instead of not at all. An error on a later call is raised as it is."""
    import sys

    compiled = torch.compile(fn)
    chosen: list[Callable[..., torch.Tensor]] = []

    def call(*args: Any) -> torch.Tensor:
        if chosen:
            return chosen[0](*args)
        try:
            out = compiled(*args)
        except Exception as e:  # noqa: BLE001 - whatever compiling raised: train without it
            why = (str(e).strip().splitlines() or [""])[0][:200]
            print(f"mi-plateau: torch.compile is unavailable here ({type(e).__name__}: {why}); training without it",
                  file=sys.stderr)  # fmt: skip
            chosen.append(fn)
            return fn(*args)
        chosen.append(compiled)
        return out

    return call
