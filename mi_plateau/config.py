"""Run configuration: frozen dataclasses, presets, validation and overrides.

One ``RunConfig`` travels through the whole pipeline. It is built from a preset plus
overrides, validated before any work starts, and stored as JSON in every run folder so
that a run can be rebuilt from its folder alone. This module imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

N_CHARS = 36  # the alphabet a-z0-9
IMPLS = ("standard", "fast", "bridge")  # model.training_forward
INITS = ("tl4", "gpt2")
BATCHINGS = ("uniform", "epoch")
STOPS = ("converge", "tau")
DIRECTIONS = ("backward", "forward", "az_b", "b_a")
A_TARGET_DIRECTIONS = ("backward", "b_a")
SELECTOR_DIRECTIONS = ("backward", "az_b")
LEN_B = 6
LEN_A = 4
MAX_NB = 20000


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the value and the reason."""


@dataclass(frozen=True)
class TaskConfig:
    """The K-fold ambiguous lookup task (SPEC section 2)."""

    K: int = 10  # targets per base string, = number of selectors
    n_b: int = 1000  # number of base strings (groups)
    len_z: int = 2  # selector length in characters
    direction: str = "backward"  # backward (B,z)->A, forward A->B, az_b (A,z)->B, b_a B->A
    label_noise: float = 0.0  # probability a training draw's target is another A of its group
    data_seed: int = 0

    @property
    def D(self) -> int:
        return self.n_b * self.K

    @property
    def log_K(self) -> float:
        return math.log(self.K)

    @property
    def has_selector(self) -> bool:
        return self.direction in SELECTOR_DIRECTIONS

    @property
    def targets_A(self) -> bool:
        return self.direction in A_TARGET_DIRECTIONS


@dataclass(frozen=True)
class ModelConfig:
    """TransformerLens architecture; n_ctx and d_vocab are derived from the task."""

    n_layers: int = 4
    n_heads: int = 4
    d_model: int = 128
    d_head: int = 32
    d_mlp: int = 512
    act_fn: str = "gelu"
    normalization_type: str = "LN"
    init_seed: int = 0
    # "tl4": TransformerLens 4's native init (every matrix N(0, (0.8/sqrt(d_model))^2), W_O and
    # W_out a further 1/sqrt(2 n_layers) smaller); "gpt2": HookedTransformer's GPT-2 init, the
    # original code's (every weight matrix N(0, (0.8/sqrt(d_model))^2), biases 0, LN weights 1)
    init: str = "tl4"
    train_b_U: bool = False  # a trainable unembedding bias (TL4 native has a fixed zero one)
    # the ``seed`` shorthand leaves init_seed alone: seeds vary data and batch order only (the
    # original's Table 4 convention); False keeps the older meaning (one seed for all)
    fixed_init: bool = False


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser, schedule, batching and checkpoint density (SPEC sections 3-4)."""

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01
    warmup_steps: int = 500
    schedule: str = "constant"  # "constant" after warm-up, or "cosine" decay to 0 at max_steps
    grad_clip: float = 0.0  # max grad norm; 0 disables clipping (paper default)
    impl: str = "standard"  # the step's implementation: standard, fast (opt-in) or bridge (model.training_forward)
    compile: bool = False  # run the training forward under torch.compile (opt-in; 12-15 s to compile)
    batch_size: int = 128
    # "uniform": examples drawn uniformly with replacement; "epoch": a fresh permutation of the
    # D examples each epoch, consecutive slices, the last partial batch kept (DataLoader(shuffle=True))
    batching: str = "uniform"
    max_steps: int = 20000
    batch_seed: int = 0
    ckpt_every: int = 50
    ckpt_every_transition: int = 25  # spacing while 0.1 log K < Lc < 0.95 log K
    converge_Lc: float = 0.05
    margin_steps: int = 200  # keep training this long after convergence
    post_tau_frac: float = 1.6  # and at least until this multiple of tau (Table 6 reads 1.5 tau)
    # "converge": the rule above; "tau": stop once both families' tau are known and
    # tau_margin * tau has passed (a tau-only sweep does not pay for the convergence tail)
    stop: str = "converge"
    tau_margin: float = 1.2


@dataclass(frozen=True)
class EvalConfig:
    """The fixed evaluation set and the thresholds of the summary metrics."""

    n_groups: int = 200
    eval_seed: int = 12345
    alpha: float = 0.5
    plateau_start: int = 300  # the plateau window starts after the first few hundred steps
    # the paper's plateau height (Table 7): mean L_seq over steps [seq_plateau_start, seq_plateau_end]
    seq_plateau_start: int = 100
    seq_plateau_end: int = 500
    # at most this many candidate strings (besides each example's own target) are scored at a
    # checkpoint: the first n groups of the evaluation set with n K (K - 1) <= seq_max_strings
    # (at least one group); 0 scores every group (exact). The analysis passes score them all.
    seq_max_strings: int = 0

    def seq_groups(self, K: int) -> int:
        """Groups whose candidate strings a checkpoint scores (0: all)."""
        if not self.seq_max_strings:
            return 0
        n = max(1, self.seq_max_strings // (K * (K - 1)))
        return 0 if n >= self.n_groups else n


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    preset: str = "custom"

    # derived layout values -------------------------------------------------------
    @property
    def seq_len(self) -> int:
        return layout_for(self.task).seq_len

    def examples_seen(self, step: int) -> int:
        """Training examples drawn in the first ``step`` updates (epoch batching keeps the last
        partial batch of every epoch, so this is not simply step * batch_size)."""
        B = self.train.batch_size
        if self.train.batching != "epoch":
            return step * B
        D = self.task.D
        per_epoch = -(-D // B)
        return (step // per_epoch) * D + min((step % per_epoch) * B, D)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        def build(kls, sub, where):
            if not isinstance(sub, dict):
                raise ConfigError(f"{where}: expected an object, got {type(sub).__name__}")
            known = {f.name for f in fields(kls)}
            unknown = set(sub) - known
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
            return kls(**{k: _coerce(kls, k, v, f"{where}.{k}") for k, v in sub.items()})

        unknown = set(d) - {"task", "model", "train", "eval", "preset"}
        if unknown:
            raise ConfigError(f"config: unknown keys {sorted(unknown)}")
        cfg = cls(
            task=build(TaskConfig, d.get("task", {}), "task"),
            model=build(ModelConfig, d.get("model", {}), "model"),
            train=build(TrainConfig, d.get("train", {}), "train"),
            eval=build(EvalConfig, d.get("eval", {}), "eval"),
            preset=str(d.get("preset", "custom")),
        )
        return cfg


@dataclass(frozen=True)
class Layout:
    """Token positions of one sequence, computed from the task's lengths.

    A sequence is ``[BOS] prompt_1 [SEP] prompt_2 ... [SEP] target [EOS]``. The model
    predicts token ``i+1`` at position ``i``; the first target token is predicted at
    ``first_pred`` (the SEP just before the target).
    """

    seq_len: int
    segments: tuple[tuple[str, int, int], ...]  # (name, start, length) of prompt segments
    target_start: int
    target_len: int  # without EOS

    def span(self, name: str) -> range:
        for seg, start, length in self.segments:
            if seg == name:
                return range(start, start + length)
        raise KeyError(f"this layout has no segment {name!r}")

    @property
    def first_pred(self) -> int:
        return self.target_start - 1

    @property
    def pred_positions(self) -> range:
        """Positions whose next-token prediction is a target token or EOS."""
        return range(self.target_start - 1, self.seq_len - 1)

    @property
    def selector_positions(self) -> range:
        return self.span("z")


def layout_for(task: TaskConfig) -> Layout:
    prompts = {
        "backward": (("B", LEN_B), ("z", task.len_z)),
        "forward": (("A", LEN_A),),
        "az_b": (("A", LEN_A), ("z", task.len_z)),
        "b_a": (("B", LEN_B),),
    }[task.direction]
    target_len = LEN_A if task.targets_A else LEN_B
    segments, pos = [], 1  # position 0 is BOS
    for name, length in prompts:
        segments.append((name, pos, length))
        pos += length + 1  # each prompt segment is followed by SEP
    return Layout(
        seq_len=pos + target_len + 1, segments=tuple(segments), target_start=pos, target_len=target_len
    )


# --- validation -------------------------------------------------------------------


def validate(cfg: RunConfig) -> RunConfig:
    """Raise ConfigError naming the first bad value; return cfg unchanged if valid."""
    t, m, tr, ev = cfg.task, cfg.model, cfg.train, cfg.eval
    if t.direction not in DIRECTIONS:
        raise ConfigError(f"task.direction={t.direction!r}: must be one of {', '.join(DIRECTIONS)}")
    for name, v in (("task.K", t.K), ("task.n_b", t.n_b), ("task.len_z", t.len_z)):
        if v <= 0:
            raise ConfigError(f"{name}={v}: must be a positive integer")
    if t.K < 2:
        raise ConfigError(f"task.K={t.K}: needs at least 2 targets per base for any ambiguity")
    if t.K > N_CHARS:
        raise ConfigError(
            f"task.K={t.K}: at most {N_CHARS}, because the K targets of a group need distinct first characters"
        )
    if t.len_z > 8:
        raise ConfigError(f"task.len_z={t.len_z}: at most 8")
    if N_CHARS**t.len_z < t.K:
        raise ConfigError(
            f"task.len_z={t.len_z}: only {N_CHARS**t.len_z} distinct selectors of that length, fewer than K={t.K}"
        )
    # Each first character is used by at most one target per group, and targets are globally
    # unique, so every group needs its own 3-character suffix per first character: at most
    # 36^3 = 46656 groups. Generation draws suffixes with rejection, so we keep headroom.
    if t.n_b > MAX_NB:
        raise ConfigError(
            f"task.n_b={t.n_b}: at most {MAX_NB} groups (the target space holds 36^3 = {N_CHARS ** 3} "
            f"suffixes per first character, and targets must be globally unique)"
        )
    for name, v in (("task.data_seed", t.data_seed), ("model.init_seed", m.init_seed),
                    ("train.batch_seed", tr.batch_seed), ("eval.eval_seed", ev.eval_seed)):
        if v < 0:
            raise ConfigError(f"{name}={v}: seeds must be >= 0")
    if not 0.0 <= t.label_noise < 1.0:
        raise ConfigError(f"task.label_noise={t.label_noise}: must be in [0, 1)")
    if t.label_noise > 0 and not t.targets_A:
        raise ConfigError(f"task.label_noise={t.label_noise}: only defined for directions whose target is A")
    for name, v in (
        ("model.n_layers", m.n_layers),
        ("model.n_heads", m.n_heads),
        ("model.d_model", m.d_model),
        ("model.d_head", m.d_head),
        ("model.d_mlp", m.d_mlp),
    ):
        if v <= 0:
            raise ConfigError(f"{name}={v}: must be a positive integer")
    if m.act_fn not in ("gelu", "gelu_new", "relu", "silu"):
        raise ConfigError(f"model.act_fn={m.act_fn!r}: must be gelu, gelu_new, relu or silu")
    if m.normalization_type != "LN":
        # the analysis passes' functional forward implements LayerNorm with weight and bias only
        raise ConfigError(f"model.normalization_type={m.normalization_type!r}: only 'LN' is supported")
    for name, v in (("train.lr", tr.lr), ("train.batch_size", tr.batch_size), ("train.max_steps", tr.max_steps)):
        if v <= 0:
            raise ConfigError(f"{name}={v}: must be positive")
    for name, v in (("train.ckpt_every", tr.ckpt_every), ("train.ckpt_every_transition", tr.ckpt_every_transition)):
        if v <= 0:
            raise ConfigError(f"{name}={v}: must be a positive number of steps")
    if tr.warmup_steps < 0 or tr.margin_steps < 0:
        raise ConfigError("train.warmup_steps and train.margin_steps must be >= 0")
    if not (0 <= tr.beta1 < 1 and 0 <= tr.beta2 < 1):
        raise ConfigError(f"train.beta1={tr.beta1}, train.beta2={tr.beta2}: must be in [0, 1)")
    if tr.eps <= 0 or tr.weight_decay < 0 or tr.grad_clip < 0:
        raise ConfigError("train.eps must be > 0; train.weight_decay and train.grad_clip must be >= 0")
    if m.init not in INITS:
        raise ConfigError(f"model.init={m.init!r}: must be one of {', '.join(INITS)}")
    if tr.batching not in BATCHINGS:
        raise ConfigError(f"train.batching={tr.batching!r}: must be one of {', '.join(BATCHINGS)}")
    if tr.stop not in STOPS:
        raise ConfigError(f"train.stop={tr.stop!r}: must be one of {', '.join(STOPS)}")
    if tr.tau_margin < 1.0:
        raise ConfigError(f"train.tau_margin={tr.tau_margin}: must be >= 1 (a multiple of tau)")
    if not 0 <= ev.seq_plateau_start < ev.seq_plateau_end:
        raise ConfigError(f"eval.seq_plateau_start={ev.seq_plateau_start}, eval.seq_plateau_end={ev.seq_plateau_end}: need 0 <= start < end")
    if ev.seq_max_strings < 0:
        raise ConfigError(f"eval.seq_max_strings={ev.seq_max_strings}: must be >= 0 (0 = every evaluation group)")
    if tr.impl not in IMPLS:
        raise ConfigError(f"train.impl={tr.impl!r}: must be one of {', '.join(IMPLS)}")
    if tr.schedule not in ("constant", "cosine"):
        raise ConfigError(f"train.schedule={tr.schedule!r}: must be 'constant' or 'cosine'")
    if tr.converge_Lc <= 0:
        raise ConfigError(f"train.converge_Lc={tr.converge_Lc}: must be > 0")
    if ev.n_groups <= 0:
        raise ConfigError(f"eval.n_groups={ev.n_groups}: must be a positive integer")
    if not 0.0 < ev.alpha < 1.0:
        raise ConfigError(f"eval.alpha={ev.alpha}: must be in (0, 1)")
    if ev.plateau_start < 0:
        raise ConfigError(f"eval.plateau_start={ev.plateau_start}: must be >= 0")
    return cfg


# --- presets and overrides --------------------------------------------------------


def _presets() -> dict[str, RunConfig]:
    # The original code's K-sweep recipe (SPEC section 3): no warm-up, epoch batches, GPT-2 init
    # of every weight matrix with a fixed init seed (42), a trainable unembedding bias.
    paper = RunConfig(
        model=ModelConfig(init="gpt2", train_b_U=True, init_seed=42, fixed_init=True),
        train=TrainConfig(warmup_steps=0, batching="epoch", max_steps=30000, post_tau_frac=2.1),
        # exact up to K = 10 (200 groups x 10 x 9 strings); larger K score the first groups
        eval=EvalConfig(seq_max_strings=18000),
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
        train=TrainConfig(lr=3e-3, warmup_steps=50, batch_size=32, max_steps=1500, ckpt_every=20,
                          ckpt_every_transition=10, margin_steps=40),
        eval=EvalConfig(n_groups=48, plateau_start=60, seq_plateau_start=20, seq_plateau_end=80),
        preset="tiny",
    )
    return {"paper": paper, "tl4": tl4, "demo": demo, "tiny": tiny}


PRESETS = tuple(_presets())


def preset(name: str) -> RunConfig:
    presets = _presets()
    if name not in presets:
        raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(presets)}")
    return presets[name]


SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig, "eval": EvalConfig}


def _field_type(kls, key):
    return {f.name: f.type for f in fields(kls)}[key]


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _coerce(kls, key: str, value: Any, where: str) -> Any:
    """Convert value (possibly a CLI string) to the field's declared type, or fail clearly."""
    typ = _field_type(kls, key)
    try:
        if typ == "int":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError
                return int(value)
            if isinstance(value, str):
                return int(float(value)) if "e" in value.lower() and float(value).is_integer() else int(value)
            return int(value)
        if typ == "float":
            if isinstance(value, bool):
                raise ValueError
            out = float(value)
            if not math.isfinite(out):
                raise ValueError
            return out
        if typ == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
        if typ == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
                return _BOOL_WORDS[value.strip().lower()]
            raise ValueError
    except (TypeError, ValueError):
        kind = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false (true/false, 1/0, yes/no)"}[typ]
        raise ConfigError(f"{where}={value!r}: expected {kind}") from None
    raise ConfigError(f"{where}: field type {typ!r} has no parser")


# Short names accepted everywhere (CLI flags and override keys), mapped to their section.
ALIASES = {
    "seed": None,  # sets data_seed and batch_seed, and init_seed unless model.fixed_init
    "K": "task.K",
    "n_b": "task.n_b",
    "len_z": "task.len_z",
    "direction": "task.direction",
    "label_noise": "task.label_noise",
    "lr": "train.lr",
    "batch_size": "train.batch_size",
    "max_steps": "train.max_steps",
    "grad_clip": "train.grad_clip",
    "schedule": "train.schedule",
    "impl": "train.impl",
    "compile": "train.compile",
    "batching": "train.batching",
    "stop": "train.stop",
    "init": "model.init",
    "init_seed": "model.init_seed",
    "alpha": "eval.alpha",
}


def with_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """Apply ``{"task.K": 20, "lr": 3e-3, "seed": 1, ...}``; unknown keys and bad types fail.

    ``seed`` sets the data and batch-order seeds, and the init seed too unless the config pins it
    (``model.fixed_init``, as the ``paper`` preset does); a specific seed key given in the same
    call wins over it.
    """
    sections = {name: dataclasses.asdict(getattr(cfg, name)) for name in SECTIONS}
    specific: list[tuple[str, str, Any]] = []
    for key, value in overrides.items():
        if key == "seed":
            s = _coerce(TaskConfig, "data_seed", value, "seed")
            sections["task"]["data_seed"] = s
            if not cfg.model.fixed_init:
                sections["model"]["init_seed"] = s
            sections["train"]["batch_seed"] = s
            continue
        full = ALIASES.get(key, key)
        if "." not in full:
            raise ConfigError(f"unknown setting {key!r}: use section.key (task, model, train, eval) or one of {', '.join(ALIASES)}")
        section, name = full.split(".", 1)
        if section not in SECTIONS or name not in sections[section]:
            raise ConfigError(f"unknown setting {key!r}")
        specific.append((section, name, _coerce(SECTIONS[section], name, value, full)))
    for section, name, value in specific:
        sections[section][name] = value
    return replace(
        cfg, **{name: SECTIONS[name](**sections[name]) for name in SECTIONS}
    )


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


def run_name(cfg: RunConfig) -> str:
    """<preset>_K<K>_nb<n_b>_s<seed>, plus a short hash when other settings differ from the preset."""
    import hashlib

    t = cfg.task
    name = f"{cfg.preset}_K{t.K}_nb{t.n_b}_s{t.data_seed}"
    try:
        base = with_overrides(preset(cfg.preset), {"K": t.K, "n_b": t.n_b, "seed": t.data_seed})
        if base.to_dict() != cfg.to_dict():
            name += "_" + hashlib.sha1(cfg.to_json().encode()).hexdigest()[:8]
    except ConfigError:
        pass
    return name


def compare_name(names: list[str]) -> str:
    """The folder name of an analysis or report of several runs: compare_<names>, or a hash of
    them when that would be too long for a file name."""
    import hashlib

    name = "compare_" + "__".join(names)
    return name if len(name) <= 120 else "compare_" + hashlib.sha1("|".join(names).encode()).hexdigest()[:10]
