"""Presets (the paper's recipe, the earlier tl4 recipe, demo, tiny), overrides with short
aliases, and the one place runs are named and configs compared."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .schema import SECTIONS, EvalConfig, ModelConfig, RunConfig, TrainConfig, settings
from .settings import ConfigError, coerce
from .task_section import TaskConfig


def _presets() -> dict[str, RunConfig]:
    # The original code's K-sweep recipe (docs/design.md): no warm-up, epoch batches, GPT-2 init
    # of every weight matrix with a fixed init seed (42), a trainable unembedding bias.
    paper = RunConfig(
        model=ModelConfig(init="gpt2", train_b_U=True, init_seed=42, fixed_init=True),
        train=TrainConfig(warmup_steps=0, batching="epoch", max_steps=30000, post_tau_frac=2.1),
        preset="paper",
    )
    # What this toolkit trained before revision 2 of the spec (runs named paper_* before then).
    tl4 = RunConfig(preset="tl4")
    # The demo shrinks the data (the plateau length grows with D) and the model, so that
    # plateau and transition both show in a couple of minutes on two CPU cores.
    demo = RunConfig(
        task=TaskConfig(K=5, n_b=400),
        model=ModelConfig(n_layers=2, n_heads=4, d_model=64, d_head=16, d_mlp=256),
        train=TrainConfig(warmup_steps=200, max_steps=4000, margin_steps=100),
        eval=EvalConfig(plateau_start=100, seq_plateau_end=300),
        preset="demo",
    )
    tiny = RunConfig(
        task=TaskConfig(K=4, n_b=48),
        model=ModelConfig(n_layers=2, n_heads=2, d_model=32, d_head=16, d_mlp=64),
        train=TrainConfig(
            lr=3e-3,
            warmup_steps=50,
            batch_size=32,
            max_steps=1500,
            ckpt_every=20,
            ckpt_every_transition=10,
            margin_steps=40,
            # fp32 on every machine: its matmuls are too small for bf16 units to pay, and the tests
            # that compare it with plain references read the same arithmetic everywhere
            precision="fp32",
        ),
        # every group scored at every checkpoint (the tests' full-set reference; 48 groups are cheap)
        eval=EvalConfig(n_groups=48, plateau_start=60, seq_plateau_start=20, seq_plateau_end=80, live_groups=0),
        preset="tiny",
    )
    return {"paper": paper, "tl4": tl4, "demo": demo, "tiny": tiny}


PRESETS = tuple(_presets())


def preset(name: str) -> RunConfig:
    presets = _presets()
    if name not in presets:
        raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(presets)}")
    return presets[name]


def aliases(sections: Mapping[str, type] = SECTIONS) -> dict[str, str | None]:
    """Short override keys -> "section.name": each field's ``alias`` (its metadata), and ``seed``,
    which names no one field (it sets several: ``with_overrides``)."""
    out: dict[str, str | None] = {"seed": None}
    for key, _, s in settings(sections):
        if s.alias:
            if s.alias in out:
                raise ValueError(f"{key}: alias {s.alias!r} is taken by {out[s.alias]}")
            out[s.alias] = key
    return out


# Short names accepted everywhere (CLI flags and override keys), mapped to their section.
ALIASES = aliases()


def with_overrides(cfg: RunConfig, overrides: dict[str, Any], typed: bool = False) -> RunConfig:
    """Apply ``{"task.K": 20, "lr": 3e-3, "seed": 1, ...}``; unknown keys and bad types fail.

    ``seed`` sets the data and batch-order seeds, and the init seed too unless the config pins it
    (``model.fixed_init``, as the ``paper`` preset does); a specific seed key given in the same
    call wins over it. ``typed``: the values come from a typed file (``settings.coerce``).
    """
    sections = {name: dataclasses.asdict(getattr(cfg, name)) for name in SECTIONS}
    specific: list[tuple[str, str, Any]] = []
    for key, value in overrides.items():
        if key == "seed":
            s = coerce(TaskConfig, "data_seed", value, "seed", typed)
            sections["task"]["data_seed"] = s
            if not cfg.model.fixed_init:
                sections["model"]["init_seed"] = s
            sections["train"]["batch_seed"] = s
            continue
        full = ALIASES.get(key, key)
        if "." not in full:
            raise ConfigError(
                f"unknown setting {key!r}: use section.key (task, model, train, eval) or one of {', '.join(ALIASES)}"
            )
        section, name = full.split(".", 1)
        if section not in SECTIONS or name not in sections[section]:
            raise ConfigError(f"unknown setting {key!r}")
        specific.append((section, name, coerce(SECTIONS[section], name, value, full, typed)))
    for section, name, value in specific:
        sections[section][name] = value
    return replace(cfg, **{name: SECTIONS[name](**sections[name]) for name in SECTIONS})


def parse_override(text: str) -> tuple[str, str]:
    """Split ``key=value`` from the command line."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key=value, e.g. train.lr=3e-3")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


# --- names and differences (the one place runs are named and configs compared) ------


def config_diff(a: dict, b: dict, prefix: str = "") -> str:
    """The settings two config dicts disagree on, as "key: stored X, given Y; ..." ("" if none)."""
    out = []
    for k in sorted(set(a) | set(b)):
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            d = config_diff(a[k], b[k], f"{prefix}{k}.")
            if d:
                out.append(d)
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: stored {a.get(k)!r}, given {b.get(k)!r}")
    return "; ".join(out)


def extends(stored: RunConfig, cfg: RunConfig) -> bool:
    """``cfg`` continues the run ``stored`` began: it is ``stored`` with a larger ``train.max_steps``
    (under a constant learning rate: only the stopping rule differs) and/or another
    ``train.ckpt_every_max`` (which steps get a checkpoint from here on). Every step already
    taken stays the same, and so do the weights of every later one: the spacing never touches
    the training state, so a run continued under a wider spacing records a subset of the
    checkpoints the dense run would have, with the same values (also one that finished at the
    old cap). Another ``eval.live_groups`` too: the live subset changes which estimates are
    recorded, never the weights, and the settled crossings are the full set's either way. And
    another ``train.log``: a tracker reads the records after they are written, and touches nothing
    that trains."""
    t, old = cfg.train, stored.train
    same = dataclasses.replace(
        cfg,
        # "auto" (the default) continues a run in the precision it recorded (``devices.resolve_precision``)
        train=dataclasses.replace(
            t,
            max_steps=old.max_steps,
            ckpt_every_max=old.ckpt_every_max,
            log=old.log,
            precision=old.precision if t.precision == "auto" else t.precision,
        ),
        eval=dataclasses.replace(cfg.eval, live_groups=stored.eval.live_groups),
    )
    if same != stored or cfg == stored or t.max_steps < old.max_steps:
        return False
    return t.max_steps == old.max_steps or old.schedule == "constant"


def run_name(cfg: RunConfig) -> str:
    """<preset>_K<K>_nb<n_b>_s<seed>, plus a short hash of the settings that differ from the
    preset when some do (only those: a setting added to the config later, at its default, leaves
    every name as it was; ``train.log`` never counts, a tracker changes nothing the run trains)."""
    import hashlib
    import json

    t = cfg.task
    name = f"{cfg.preset}_K{t.K}_nb{t.n_b}_s{t.data_seed}"
    try:
        given = {"K": t.K, "n_b": t.n_b, "seed": t.data_seed, "train.log": cfg.train.log}
        base = with_overrides(preset(cfg.preset), given).to_dict()
        mine = cfg.to_dict()
        diff = {
            f"{sec}.{k}": v
            for sec, d in mine.items()
            if isinstance(d, dict)
            for k, v in d.items()
            if base[sec].get(k) != v
        }
        if diff:
            name += "_" + hashlib.sha1(json.dumps(diff, sort_keys=True).encode()).hexdigest()[:8]
    except ConfigError:
        pass
    return name


def compare_name(names: list[str]) -> str:
    """The folder name of an analysis or report of several runs: compare_<names>, or a hash of
    them when that would be too long for a file name."""
    import hashlib

    name = "compare_" + "__".join(names)
    return name if len(name) <= 120 else "compare_" + hashlib.sha1("|".join(names).encode()).hexdigest()[:10]


# train keys that decide when a run stops or what it reports, not the weights each step trains
STOP_KEYS = ("stop", "tau_on", "tau_margin", "stop_floor", "post_tau_frac", "margin_steps", "max_steps", "log")


def same_training(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two configs (dicts) that train the same weights step for step: equal but for when they stop
    and what they log (``STOP_KEYS``), and a precision one of them leaves to ``auto``."""
    auto = "auto" in (a.get("train", {}).get("precision"), b.get("train", {}).get("precision"))
    drop = STOP_KEYS + (("precision",) if auto else ())
    trained = lambda d: {
        k: ({x: y for x, y in v.items() if x not in drop} if k == "train" else v) for k, v in d.items()
    }
    return trained(a) == trained(b)
