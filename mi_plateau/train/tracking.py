"""Logging a run's checkpoints to an experiment tracker (``train.log``): TensorBoard event files in
``<run>/tb/``, or a W&B run in ``<run>/wandb/``.

What is logged at each checkpoint's step is ``checkpoint_scalars`` of the records so far: the
record's numbers and the crossings the summary reads from them. A tracker logs a checkpoint after
the checkpoint is committed and reads nothing back into the trainer, so a run trains the same
weights and records with or without one; a resumed run logs only the checkpoints it writes, so no
step is logged twice (a kill between a commit and its log leaves that one step out). The config is
logged once per log: as text where TensorBoard's folder is new, as the W&B run's config.

The trackers' packages are optional (``pip install 'mi-plateau[tensorboard]'``, ``[wandb]``) and
imported only when a run asks for one; ``require_tracker`` refuses a missing one in one line
before any work."""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, atomic_write_json, one_line, read_json
from ..config import ConfigError, RunConfig
from ..summaries import family_summary

FAMILIES = ("paper", "first_token")  # the summary's two families (L_seq, Lc)
CROSSINGS = ("tau", "t_start", "t_end", "tau_width")  # family_summary's crossings, each with _lo and _hi


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def record_scalars(record: dict[str, Any]) -> dict[str, float]:
    """A checkpoint record's numbers as tracker tags: ``train/<key>`` for each number at the
    record's top level (lr, examples seen, the training loss, the gradient norms and the training
    batches' first-token losses since the last checkpoint), ``eval/<key>`` for each number in its
    ``metrics`` (both families: L_seq and its standard error, Lc, L1, the candidate accuracies, the
    swap gap, ...). The step is the log's own axis, not a tag; a value not recorded (None) is left
    out, and NaN (a diverged run's loss, an L_seq the live evaluation no longer scores) is logged
    as it is."""
    out = {f"train/{k}": float(v) for k, v in record.items() if k != "step" and _number(v)}
    out |= {f"eval/{k}": float(v) for k, v in record["metrics"].items() if _number(v)}
    return out


def crossing_scalars(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The crossings the records so far bound, as ``crossing/<family>/<name>``: for each family
    (paper: L_seq, first_token: Lc) and each of tau, t_start, t_end and tau_width, the value a
    table shows and its interval's ends ``_lo``, ``_hi``, in steps, from ``summaries.family_summary``
    (what ``mi-plateau summary`` prints at this checkpoint). One not known yet (None) is left out."""
    out = {}
    for fam in FAMILIES:
        s = family_summary(cfg, list(records), fam)
        for name in CROSSINGS:
            for key in (name, f"{name}_lo", f"{name}_hi"):
                if s[key] is not None:
                    out[f"crossing/{fam}/{key}"] = float(s[key])
    return out


def checkpoint_scalars(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """What a tracker logs at the last record's step: its numbers (``record_scalars``) and the
    crossings known by then (``crossing_scalars``)."""
    return record_scalars(records[-1]) | crossing_scalars(cfg, records)


def config_text(cfg: RunConfig) -> str:
    """The config as TensorBoard's text panel shows it: its JSON in a Markdown code block."""
    return f"```json\n{cfg.to_json()}\n```"


# --- the trackers ---------------------------------------------------------------------


def require_tracker(cfg: RunConfig) -> None:
    """A one-line ConfigError where ``train.log`` names a tracker whose package does not import."""
    name = cfg.train.log
    if name == "none":
        return
    try:
        importlib.import_module(name)
    except ImportError:
        raise ConfigError(
            f"train.log={name!r}: the {name} package is not installed (pip install 'mi-plateau[{name}]')"
        ) from None


class TensorBoard:
    """Event files in ``<run>/tb/`` (torch's ``SummaryWriter``; a resume adds a file beside the
    earlier ones, which TensorBoard reads as one log). Each checkpoint is flushed as it is logged."""

    def __init__(self, cfg: RunConfig, run: Run, step: int):
        from torch.utils.tensorboard import SummaryWriter

        path = _own_folder(run, "tb")
        new = not any(path.glob("events.out.tfevents.*")) if path.is_dir() else True
        self.writer = SummaryWriter(str(path))
        if new:
            self.writer.add_text("config", config_text(cfg), step)
            self.writer.flush()

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for tag, v in scalars.items():
            self.writer.add_scalar(tag, v, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandB:
    """A W&B run in ``<run>/wandb/``: offline unless ``WANDB_MODE`` (or ``WANDB_PROJECT`` for the
    project) says otherwise, named after the run folder, with the config as its config. Its id is
    kept in ``<run>/wandb/mi_plateau.json``, so a resume continues the same W&B run."""

    def __init__(self, cfg: RunConfig, run: Run, step: int):
        import wandb

        try:
            self.run = wandb.init(
                dir=str(run.path),
                project=os.environ.get("WANDB_PROJECT", "mi-plateau"),
                name=run.path.name,
                id=_wandb_id(run),
                resume="allow",
                config=cfg.to_dict(),
                mode=None if os.environ.get("WANDB_MODE") else "offline",
                # the trainer's output stays its own: W&B neither captures it nor prints the run's history
                settings=wandb.Settings(console="off", quiet=True),
            )
        except wandb.Error as e:  # online without a login, a bad project name, ...: one line, before training
            raise RunError(f"train.log='wandb': W&B did not start ({one_line(e)})") from None

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.run.log(scalars, step=step)

    def close(self) -> None:
        self.run.finish()


TRACKERS = {"tensorboard": TensorBoard, "wandb": WandB}


def open_tracker(cfg: RunConfig, run: Run, step: int) -> TensorBoard | WandB | None:
    """The tracker ``train.log`` names, opened on ``run`` at ``step`` (None for "none")."""
    if cfg.train.log == "none":
        return None
    require_tracker(cfg)
    return TRACKERS[cfg.train.log](cfg, run, step)


def _own_folder(run: Run, name: str) -> Path:
    """``<run>/<name>``, refused where it is a symbolic link (the writers' rule: a run's files
    stay inside its folder)."""
    path = run.path / name
    if path.is_symlink():
        raise RunError(f"{path}: is a symbolic link; a tracker writes into the run folder itself")
    return path


def _wandb_id(run: Run) -> str:
    """The run's W&B id: read from ``<run>/wandb/mi_plateau.json``, or made (random) and written
    there on the first log."""
    folder = _own_folder(run, "wandb")
    path = folder / "mi_plateau.json"
    if path.exists():
        got = read_json(path)
        if isinstance(got, dict) and isinstance(got.get("id"), str) and got["id"]:
            return got["id"]
    folder.mkdir(exist_ok=True)
    rid = uuid.uuid4().hex[:16]
    atomic_write_json(path, {"id": rid})
    return rid
