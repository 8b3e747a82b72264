"""The single-run trainer: ``train`` opens (or resumes) a run folder under its lock and steps its
``Member`` until the stopping rule or the step cap ends it."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ..checkpoints import Run, RunError, RunLock
from ..config import RunConfig, RunOptions, validate
from ..config.options import with_old_keywords
from ..devices import check_precision, use_threads
from ..devices import resolve as resolve_device
from ..model import training_forward
from .folder import open_config
from .member import Member
from .step import train_step
from .tracking import require_tracker


def train(
    cfg: RunConfig | None,
    out: str | os.PathLike,
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
    options: RunOptions | None = None,
    **old: Any,
) -> Run:
    """Train a run into folder `out` and return it.

    With ``resume=True`` an existing folder continues from its last checkpoint (its stored
    config is used; a different `cfg` is refused). Without it, an existing run is refused.
    ``options.device``: where the model, the optimizer and the evaluation live
    (``devices.resolve``: "auto" takes a GPU when there is one); the folder holds CPU tensors
    whatever it is. ``options.threads``: torch's threads (``devices.use_threads``). The older
    ``device=`` keyword is accepted for one release, with a DeprecationWarning.
    ``train.log``: each checkpoint is also logged to that tracker, in the run folder (``tracking``).
    """
    options = with_old_keywords(options, old, "train")
    use_threads(options.threads)
    dev = resolve_device(options.device)
    run = Run(out)
    if cfg is not None:
        validate(cfg)  # before the lock creates the folder
        check_precision(dev, cfg.train.precision)
        require_tracker(cfg)  # a tracker's package (train.log)
    if run.path.is_symlink():
        raise RunError(f"{run.path}: is a symbolic link; give the run folder itself")
    with RunLock(run.path):
        member = Member(open_config(cfg, run, resume, argv, dev), run, dev)
        try:
            _train_loop(member, progress=progress)
        finally:
            member.close()
    return run


def _train_loop(m: Member, *, progress: bool) -> None:
    if m.done:
        return
    cfg = m.cfg
    # The step runs on the bridge's own parameters without its hooks (model.training_forward);
    # evaluation, checkpoints and every analysis still read the TransformerBridge.
    forward = training_forward(cfg, m.model)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=cfg.train.max_steps, initial=m.step, desc=m.run.name, unit="step", dynamic_ncols=True, file=sys.stderr
        )
    try:
        while not m.done:
            batch = m.sampler.sample().to(m.device, non_blocking=True)
            loss, norm, first = train_step(cfg, forward, m.opt, batch, m.step)
            wrote = m.after_step(loss, norm, first, batch)
            if bar is not None:
                bar.update(1)
                if wrote:
                    x = m.records[-1]["metrics"]
                    bar.set_postfix(
                        L_seq=f"{x['L_seq']:.3f}",
                        Lc=f"{x['Lc']:.3f}",
                        gap=f"{x['swap_gap']:.3f}",
                        acc=f"{x['acc_mean']:.2f}",
                    )
    finally:
        if bar is not None:
            bar.close()
