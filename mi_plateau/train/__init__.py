"""Training with dense checkpoints and exact resume.

AdamW (paper defaults), linear warm-up then constant (or cosine) learning rate, batches drawn
uniformly with replacement from the sampler's own generator, fp32. A checkpoint (weights, record,
optimizer and sampler state) is written at step 0 and every ``ckpt_every`` steps, every
``ckpt_every_transition`` steps while the transition is under way. Training stops once Lc has
fallen below ``converge_Lc``, ``margin_steps`` have passed since, and the step is at least
``post_tau_frac * tau``; or at ``max_steps``.

Resume restores weights, optimizer moments and the sampler's RNG state from the last checkpoint,
so an interrupted run continues exactly as if it had not stopped.

Layout: ``step`` (the update and its parts), ``rules`` (checkpoint spacing, stopping),
``init_from`` (starting from another run's weights), ``member`` (the run being trained),
``folder`` (opening a run folder, raising its step cap), ``loop`` (``train``), ``tracking``
(each checkpoint logged to TensorBoard or W&B, ``train.log``), ``batched`` (the batched trainer:
several runs of the same shapes as one stacked model, ``train_batched``) and ``stack`` (their
stacked parameters and AdamW state).
"""

from .folder import open_config
from .init_from import init_source, load_init
from .loop import train
from .member import Member
from .rules import next_interval, should_stop
from .step import (
    apply_update,
    batch_loss,
    first_token_loss,
    load_optimizer,
    lr_at,
    make_optimizer,
    optimizer_tensors,
    train_step,
)
from .tracking import checkpoint_scalars, open_tracker, require_tracker

__all__ = [
    "Member",
    "apply_update",
    "batch_loss",
    "checkpoint_scalars",
    "first_token_loss",
    "init_source",
    "load_init",
    "load_optimizer",
    "lr_at",
    "make_optimizer",
    "next_interval",
    "open_config",
    "open_tracker",
    "optimizer_tensors",
    "require_tracker",
    "should_stop",
    "train",
    "train_step",
]
