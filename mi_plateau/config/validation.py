"""Validation of a whole ``RunConfig``: each field's own rule from its metadata (type, choices,
bounds), then the rules that tie fields together, then the bounds of memory. One line per
refusal, naming the key."""

from __future__ import annotations

import math
from dataclasses import Field, fields
from typing import Any

from .schema import MAX_BATCH, SECTIONS, RunConfig
from .settings import SETTING, ConfigError, kind, show_value
from .task_section import MAX_NB, N_CHARS, TaskConfig, layout_for


def validate(cfg: RunConfig) -> RunConfig:
    """Raise ConfigError naming the first bad value; return cfg unchanged if valid.

    Each field's own rule (its type, choices and bounds) is read from its metadata (``setting``);
    the rules that tie fields together follow, then the bounds of memory."""
    for section in SECTIONS:
        sub = getattr(cfg, section)
        for f in fields(sub):
            _check_field(f"{section}.{f.name}", f, getattr(sub, f.name))
    _check_task(cfg.task)
    _check_across(cfg)
    _check_sizes(cfg)
    return cfg


_KINDS = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


def _check_field(key: str, f: Field, v: Any) -> None:
    """The value has the field's declared type (a finite number where a float is declared: a config built
    in Python gets the checks ``coerce`` gives values read from JSON or the CLI) and keeps its Setting's rule."""
    typ = kind(f)
    ok = isinstance(v, _KINDS[typ]) and (typ == "bool" or not isinstance(v, bool))
    if ok and typ == "float":
        ok = math.isfinite(v)
    if not ok:
        raise ConfigError(f"{key}={show_value(v)}: expected {'a finite number' if typ == 'float' else 'a ' + typ}")
    f.metadata[SETTING].check(key, v, integer=typ == "int")


def _check_task(t: TaskConfig) -> None:
    """The task's rules across fields: enough selectors, selector sets only where there is a selector,
    room for every target, label noise only where the target is A."""
    n_sel = N_CHARS**t.len_z  # len_z <= 8 here (its bounds)
    if n_sel < t.K:
        raise ConfigError(f"task.len_z={t.len_z}: only {n_sel} distinct selectors of that length, fewer than K={t.K}")
    if t.selector_groups > 0 and not t.has_selector:
        raise ConfigError(f"task.selector_groups={t.selector_groups}: task.direction={t.direction!r} has no selector")
    if t.selector_groups > t.n_b:
        raise ConfigError(f"task.selector_groups={t.selector_groups}: at most n_b={t.n_b} (one selector set per group)")
    if n_sel < t.selector_groups * t.K:
        raise ConfigError(
            f"task.selector_groups={t.selector_groups}: {t.selector_groups} sets of K={t.K} distinct selectors need "
            f"{t.selector_groups * t.K} strings, but len_z={t.len_z} gives only {n_sel}; raise task.len_z"
        )
    # Each first character is used by at most one target per group, and targets are globally
    # unique, so every group needs its own 3-character suffix per first character: at most
    # 36^3 = 46656 groups. Generation draws suffixes with rejection, so we keep headroom.
    if t.n_b > MAX_NB:
        raise ConfigError(
            f"task.n_b={t.n_b}: at most {MAX_NB} groups (the target space holds 36^3 = {N_CHARS**3} "
            f"suffixes per first character, and targets must be globally unique)"
        )
    if t.label_noise > 0 and not t.targets_A:
        raise ConfigError(f"task.label_noise={t.label_noise}: only defined for directions whose target is A")


def _check_across(cfg: RunConfig) -> None:
    """The rules that tie train and eval settings to each other and to the task."""
    tr, ev = cfg.train, cfg.eval
    if tr.tau_on == "paper" and not cfg.task.targets_A:
        raise ConfigError(
            f"train.tau_on='paper': the paper family (L_seq) is undefined for "
            f"task.direction={cfg.task.direction!r}; use first_token"
        )
    if not 0.0 < ev.width_lo < ev.width_hi:
        raise ConfigError(
            f"eval.width_lo={ev.width_lo}, eval.width_hi={ev.width_hi}: need 0 < width_lo < width_hi "
            "(fractions of log K)"
        )
    if not ev.seq_plateau_start < ev.seq_plateau_end:
        raise ConfigError(
            f"eval.seq_plateau_start={ev.seq_plateau_start}, eval.seq_plateau_end={ev.seq_plateau_end}: "
            "need 0 <= start < end"
        )


# Bounds far above anything this task trains (the paper's model has 0.8 M parameters and one
# step holds about 30 M activations); a config past them cannot fit in memory and would die in
# the allocator, so it is refused here, before any folder or tensor is made.
MAX_LAYERS = 256
MAX_WIDTH = 1 << 16  # each of d_model, n_heads, d_head, d_mlp
MAX_PARAMS = 1 << 31  # 8 GiB of float32 weights, 24 GiB with AdamW's moments
MAX_ACTIVATIONS = 1 << 35  # floats one training step keeps for the backward pass (128 GiB)


def _check_sizes(cfg: RunConfig) -> None:
    """The model and one training step fit in memory (generous bounds, see MAX_*); the error
    names the fields that make the size."""
    m, B = cfg.model, cfg.train.batch_size
    if B > MAX_BATCH:
        raise ConfigError(
            f"train.batch_size={show_value(B)}: at most {MAX_BATCH} sequences per step (a larger batch does not "
            f"fit in memory with this model; the paper uses 128)"
        )
    if m.n_layers > MAX_LAYERS:
        raise ConfigError(f"model.n_layers={show_value(m.n_layers)}: at most {MAX_LAYERS}")
    for name in ("d_model", "n_heads", "d_head", "d_mlp"):
        v = getattr(m, name)
        if v > MAX_WIDTH:
            raise ConfigError(
                f"model.{name}={show_value(v)}: at most {MAX_WIDTH} (a model this wide does not fit in memory)"
            )
    T, V, H = layout_for(cfg.task).seq_len, N_CHARS + 8, m.n_heads * m.d_head
    params = m.n_layers * (4 * m.d_model * H + 2 * m.d_model * m.d_mlp) + (2 * V + T) * m.d_model
    shape = (
        f"model.n_layers={m.n_layers}, model.d_model={m.d_model}, model.n_heads={m.n_heads}, "
        f"model.d_head={m.d_head}, model.d_mlp={m.d_mlp}"
    )
    if params > MAX_PARAMS:
        raise ConfigError(f"{shape}: about {params:.2g} parameters, more than fit in memory (at most {MAX_PARAMS:.2g})")
    acts = B * T * (m.n_layers * (6 * m.d_model + 4 * H + 2 * m.n_heads * T + 2 * m.d_mlp) + V)
    if acts > MAX_ACTIVATIONS:
        raise ConfigError(
            f"train.batch_size={B} with {shape}: one training step would hold about {acts:.2g} activations, "
            f"more than fit in memory (at most {MAX_ACTIVATIONS:.2g})"
        )


def reductions(cfg: RunConfig) -> list[str]:
    """The settings a valid config asks for that a run reduces, one line each: an evaluation
    set of more groups than the task has (``eval.n_groups`` above ``task.n_b``) holds every group."""
    out = []
    if cfg.eval.n_groups > cfg.task.n_b:
        out.append(
            f"eval.n_groups {cfg.eval.n_groups} is above task.n_b {cfg.task.n_b}: "
            f"the evaluation set holds all {cfg.task.n_b} groups"
        )
    return out
