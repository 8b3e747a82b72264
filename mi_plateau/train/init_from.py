"""Starting from another run's weights: the checkpoint ``train.init_from`` / ``train.init_step``
name, checked and loaded into a new run's model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..checkpoints import Run, RunError, load_state_checked
from ..config import RunConfig


def init_source(cfg: RunConfig, run: Run) -> tuple[Run, int]:
    """The run and checkpoint ``train.init_from`` / ``train.init_step`` name (a relative folder
    is read from ``run``'s parent folder); a one-line RunError where there is none to start from."""
    where = Path(cfg.train.init_from)
    src = Run(where if where.is_absolute() else run.path.parent / where)
    if not src.exists():
        raise RunError(f"train.init_from={cfg.train.init_from!r}: no run at {src.path}")
    steps = src.steps()
    if cfg.train.init_step < 0:
        if src.manifest().get("status") != "finished":
            raise RunError(
                f"train.init_from={cfg.train.init_from!r}: {src.path} has not finished (its last "
                "checkpoint is not final yet); finish it or name a checkpoint with train.init_step"
            )
        return src, steps[-1]
    if cfg.train.init_step not in steps:
        raise RunError(
            f"train.init_step={cfg.train.init_step}: {src.path} has no checkpoint there "
            f"(its steps run {steps[0]}..{steps[-1]})"
        )
    return src, cfg.train.init_step


def load_init(cfg: RunConfig, run: Run, model: torch.nn.Module) -> dict[str, Any]:
    """Load the weights ``train.init_from`` names into ``model`` (in place: the optimizer made on
    it stays valid) and return what the manifest keeps of them: the source folder, its step and
    the SHA-256 of its weights file. The source's model must have this run's shapes."""
    src, step = init_source(cfg, run)
    theirs = src.config().model
    if theirs.act_fn != cfg.model.act_fn:  # the shapes load_state_checked checks; the activation it cannot see
        raise RunError(
            f"train.init_from={cfg.train.init_from!r}: {src.path} uses model.act_fn={theirs.act_fn!r}, "
            f"this run {cfg.model.act_fn!r}"
        )
    load_state_checked(model, src.weights(step), src.weights_path(step))
    return {"run": str(src.path), "step": step, "sha256": src.weights_sha256([step])[step]}
