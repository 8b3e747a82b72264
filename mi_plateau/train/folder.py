"""Opening a run folder to train in: a new folder gets its config and provenance (command.json),
an existing one keeps its stored config, which a resume may only extend by a raised step cap or
another checkpoint-spacing maximum (``config.extends``)."""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from typing import Any

import torch

from ..checkpoints import Run, RunError, atomic_write_json, check_own_folder, write_manifest
from ..config import EvalConfig, RunConfig, config_diff, extends, validate, with_overrides
from ..devices import describe as describe_device
from ..devices import resolve_precision
from .member import Member
from .rules import should_stop
from .timing import live_groups_for


def _provenance(argv: Sequence[str] | None, device: torch.device | None = None) -> dict[str, Any]:
    import importlib.metadata as md

    def version(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "argv": list(argv) if argv is not None else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {p: version(p) for p in ("mi-plateau", "torch", "transformer-lens", "numpy", "safetensors")},
        "torch_threads": torch.get_num_threads(),
        **describe_device(device or torch.device("cpu")),
    }


def open_config(
    cfg: RunConfig | None,
    run: Run,
    resume: bool,
    argv: Sequence[str] | None,
    device: torch.device | None = None,
    *,
    write: bool = True,
) -> RunConfig:
    """The config a run folder trains with; call it holding the folder's lock. A new folder
    gets ``cfg`` (config.json and command.json written); an existing one keeps its stored config
    (``resume`` required; a different ``cfg`` is refused unless it only extends it: ``config.extends``).
    ``write=False``: every check and the answer, nothing written (the batched trainer checks all
    its folders before it writes into any)."""
    check_own_folder(run.path)
    # a run killed before its first checkpoint was committed has a config but no manifest yet
    if run.exists() or (resume and (run.path / "config.json").exists()):
        if not resume:
            raise RunError(
                f"{run.path}: a run already exists here; pass --resume to continue it or choose another --out"
            )
        stored = run.config()  # validated, and checked against the config the manifest records
        recorded = run.recorded_config()
        # a resume keeps the precision the run recorded (one line where this machine cannot run it)
        resolve_precision(stored.train.precision, device or torch.device("cpu"), recorded=stored.train.precision)
        if cfg is not None and cfg.train.precision == "auto":
            cfg = with_overrides(cfg, {"train.precision": stored.train.precision})
        if cfg is not None and cfg.eval.live_groups == EvalConfig.live_groups:  # the default continues what it chose
            cfg = with_overrides(cfg, {"eval.live_groups": stored.eval.live_groups})
        if cfg is not None and cfg.to_dict() != stored.to_dict():
            if not extends(stored, cfg):
                diff = config_diff(stored.to_dict(), cfg.to_dict())
                raise RunError(f"{run.path / 'config.json'}: resume with a different config is refused ({diff})")
            if not _stopped_by_rule(stored, run):  # a run its own rule stopped keeps its config
                if write:
                    _write_raised_cap(cfg, run, device)
                stored = cfg
        elif write and recorded is not None and recorded.train.max_steps != stored.train.max_steps:
            # a raise killed between its two writes (run.config allows no other difference): finish it
            _write_raised_cap(stored, run, device)
        cfg = stored
    else:
        if cfg is None:
            raise RunError(f"{run.path}: no run to resume here")
        validate(cfg)
        # what auto means on this device, written into the run's config: the run records it; on a
        # GPU the default live subset becomes every group where a full scoring is cheap there
        # (probed once, when the folder is written)
        dev = device or torch.device("cpu")
        cfg = with_overrides(cfg, {"train.precision": resolve_precision(cfg.train.precision, dev)})
        if not write:
            return cfg
        cfg = with_overrides(cfg, {"eval.live_groups": live_groups_for(cfg, dev)})
        run.path.mkdir(parents=True, exist_ok=True)
        # provenance first: config.json makes the folder a run, so a kill between the two writes
        # leaves a folder that a rerun starts afresh, never a run without its command
        atomic_write_json(run.path / "command.json", _provenance(argv, device))
        atomic_write_json(run.path / "config.json", cfg.to_dict())
    return validate(cfg)


def _write_raised_cap(cfg: RunConfig, run: Run, device: torch.device | None) -> None:
    """Store a raised step cap (``config.extends``): config.json, then the manifest's record of
    the config, each written atomically. First the restore that the resume will do is done once
    (``Member``: weights, optimizer and sampler state, checksums, dtypes), so that a resume
    refused for a damaged file has written nothing. A kill between the two writes leaves a
    config.json that only raises the recorded cap: the readers accept it, the next resume
    finishes the write."""
    if run.exists():
        Member(cfg, run, device, track=False)  # its checks only; a folder with a manifest gets no checkpoint
    atomic_write_json(run.path / "config.json", cfg.to_dict())
    if run.exists():
        m = run.manifest()
        m["config"] = cfg.to_dict()
        write_manifest(run.path, m)


def _stopped_by_rule(cfg: RunConfig, run: Run) -> bool:
    """The run finished because its stopping rule said so (not at its step cap): a higher cap
    changes nothing."""
    if not run.exists():
        return False
    m = run.manifest()
    recs = [c["record"] for c in m["checkpoints"]]
    return m.get("status") == "finished" and bool(recs) and should_stop(cfg, recs)
