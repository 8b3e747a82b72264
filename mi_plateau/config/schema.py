"""The configuration's schema: frozen dataclasses with their derived values, the token
layout, validation, and reading values from JSON or the command line (``coerce``).

One ``RunConfig`` travels through the whole pipeline. It is built from a preset plus
overrides (``presets``), validated before any work starts, and stored as JSON in every run
folder so that a run can be rebuilt from its folder alone. Nothing heavy is imported.

Each field is declared once, with ``setting(default, help=..., choices=..., bounds=...,
alias=..., flag=...)``: its metadata is the single source of its help, the values it allows
(checked by ``validate``), its short override key (``presets.ALIASES``) and its
``mi-plateau train`` flag (``cli.TRAIN_FLAGS``). A new setting is one field.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any

N_CHARS = 36  # the alphabet a-z0-9
# nats of swap gap below which a plateau counts as quiet: the checkpoint spacing may widen there
# (train.next_interval), and the guarded evaluation watches it (metrics.eval_guard)
QUIET_GAP = 0.02
MAX_BATCH = 1 << 16
A_TARGET_DIRECTIONS = ("backward", "b_a")
SELECTOR_DIRECTIONS = ("backward", "az_b")
LEN_B = 6
LEN_A = 4
MAX_NB = 20000


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the value and the reason."""


# --- a field's metadata -------------------------------------------------------------


@dataclass(frozen=True)
class Bounds:
    """The interval a number must lie in: ``ge``/``gt`` its lower end (inclusive/strict), ``le``/``lt``
    its upper one; ``text`` words the rule where the interval reads poorly."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    text: str = ""

    def holds(self, v: float) -> bool:
        return (
            (self.ge is None or v >= self.ge)
            and (self.gt is None or v > self.gt)
            and (self.le is None or v <= self.le)
            and (self.lt is None or v < self.lt)
        )

    def words(self, integer: bool) -> str:
        """The rule as an error message states it: "must be in [0, 1)", "must be in 2..36", "must be >= 0"."""
        if self.text:
            return self.text
        lo = self.ge if self.gt is None else self.gt
        hi = self.le if self.lt is None else self.lt
        if lo is not None and hi is not None:
            if integer and self.gt is None and self.lt is None:
                return f"must be in {lo}..{hi}"
            left, right = "[" if self.gt is None else "(", "]" if self.lt is None else ")"
            return f"must be in {left}{_num(lo)}, {_num(hi)}{right}"
        if lo is not None:
            if integer and self.ge == 1:
                return "must be a positive integer"
            return f"must be {'>=' if self.gt is None else '>'} {_num(lo)}"
        return f"at most {_num(hi)}" if self.lt is None else f"must be < {_num(hi)}"


POSITIVE = Bounds(ge=1)  # a count
NON_NEGATIVE = Bounds(ge=0)
SEED = Bounds(ge=0, lt=2**63, text="seeds must be in [0, 2^63)")
FRACTION = Bounds(gt=0, lt=1)


@dataclass(frozen=True)
class Setting:
    """What a config field says about itself (the metadata ``setting`` attaches to it)."""

    help: str  # what it sets, in the words of ``mi-plateau train --help``
    choices: tuple[str, ...] = ()  # the values allowed (a string field)
    bounds: Bounds | None = None  # the interval allowed (a number field)
    note: str = ""  # why the rule holds: appended to its error message in parentheses
    alias: str = ""  # a short override key ("lr" for train.lr), accepted everywhere (presets.ALIASES)
    flag: str = ""  # the flag of ``mi-plateau train`` that sets it ("--lr"; cli.TRAIN_FLAGS)

    def check(self, key: str, value: Any, integer: bool) -> None:
        """Raise ConfigError, one line naming ``key`` and the values allowed, if ``value`` breaks the rule."""
        if self.choices and value not in self.choices:
            rule = (
                f"only {self.choices[0]!r} is supported"
                if len(self.choices) == 1
                else f"must be one of {', '.join(self.choices)}"
            )
        elif self.bounds is not None and not self.bounds.holds(value):
            rule = self.bounds.words(integer)
        else:
            return
        raise ConfigError(f"{key}={_show(value)}: {rule}" + (f" ({self.note})" if self.note else ""))


SETTING = "setting"  # the key of a field's Setting in its metadata


def setting(
    default: Any,
    *,
    help: str,
    choices: tuple[str, ...] = (),
    bounds: Bounds | None = None,
    note: str = "",
    alias: str = "",
    flag: str = "",
) -> Any:
    """A config field: ``dataclasses.field(default=default)`` carrying its ``Setting`` as metadata."""
    return field(default=default, metadata={SETTING: Setting(help, tuple(choices), bounds, note, alias, flag)})


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _show(v: Any) -> str:
    """A value for an error message, with an integer of many digits shortened (1e308 read as an int)."""
    if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) > 15:
        digits = str(abs(v))
        return f"{'-' if v < 0 else ''}{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    return repr(v)


# --- the configuration ----------------------------------------------------------------


@dataclass(frozen=True)
class TaskConfig:
    """The K-fold ambiguous lookup task (SPEC section 2)."""

    K: int = setting(
        10,
        help="targets per base string (= number of selectors), 2..36",
        bounds=Bounds(ge=2, le=N_CHARS),
        note="ambiguity needs 2; the K targets of a group need distinct first characters",
        alias="K",
        flag="--K",
    )
    n_b: int = setting(1000, help="number of base strings (groups)", bounds=POSITIVE, alias="n_b", flag="--n-b")
    len_z: int = setting(
        2, help="selector length (1-4 in Table 7)", bounds=Bounds(ge=1, le=8), alias="len_z", flag="--len-z"
    )
    direction: str = setting(
        "backward",
        help="backward (B,z)->A | forward A->B | az_b (A,z)->B | b_a B->A",
        choices=("backward", "forward", "az_b", "b_a"),
        alias="direction",
        flag="--direction",
    )
    label_noise: float = setting(
        0.0,
        help="probability a training target is another A of its group",
        bounds=Bounds(ge=0, lt=1),
        alias="label_noise",
        flag="--label-noise",
    )
    label_noise_mode: str = setting(
        "fixed",
        choices=("fixed", "per_draw"),
        help="fixed: a fraction label_noise of the examples corrupted once, for the whole run (the original's); "
        "per_draw: each training draw corrupted with probability label_noise (ours; runs older than this setting "
        "trained that way: checkpoints.LEGACY_DEFAULTS)",
    )
    selector_groups: int = setting(
        0,
        bounds=NON_NEGATIVE,
        note="0 = one global selector set",
        help="the gradient-cancellation control (Table 12): 0 = one global selector set shared by every group; "
        "G > 0 = G selector sets of K selectors each, all G*K strings distinct, group g using set g mod G "
        "(so the groups that share a set number about n_b / G)",
    )
    distinct_first: bool = setting(
        True,
        help="the K targets of a group start with K different characters (ours and the K sweep's); false: "
        "first characters drawn freely, as the original's direction experiment (Table 2) drew them",
    )
    data_seed: int = setting(0, help="seed of the task's strings", bounds=SEED)

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

    n_layers: int = setting(4, help="transformer blocks", bounds=POSITIVE)
    n_heads: int = setting(4, help="attention heads per block", bounds=POSITIVE)
    d_model: int = setting(128, help="width of the residual stream", bounds=POSITIVE)
    d_head: int = setting(32, help="width of one head", bounds=POSITIVE)
    d_mlp: int = setting(512, help="hidden width of the MLPs", bounds=POSITIVE)
    act_fn: str = setting("gelu", help="the MLPs' activation", choices=("gelu", "gelu_new", "relu", "silu"))
    # the analysis passes' functional forward implements LayerNorm with weight and bias only
    normalization_type: str = setting("LN", help="LayerNorm (with weight and bias)", choices=("LN",))
    init_seed: int = setting(0, help="seed of the initial weights", bounds=SEED, alias="init_seed")
    init: str = setting(
        "tl4",
        choices=("tl4", "gpt2"),
        alias="init",
        help="tl4: TransformerLens 4's native init (every matrix N(0, (0.8/sqrt(d_model))^2), W_O and W_out a "
        "further 1/sqrt(2 n_layers) smaller); gpt2: HookedTransformer's GPT-2 init, the original code's (every "
        "weight matrix N(0, (0.8/sqrt(d_model))^2), biases 0, LN weights 1)",
    )
    train_b_U: bool = setting(False, help="a trainable unembedding bias (TL4 native has a fixed zero one)")
    fixed_init: bool = setting(
        False,
        help="the seed shorthand leaves init_seed alone: seeds vary data and batch order only (the original's "
        "Table 4 convention); false keeps the older meaning (one seed for all)",
    )


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser, schedule, batching and checkpoint density (SPEC sections 3-4)."""

    lr: float = setting(1e-3, help="peak learning rate", bounds=Bounds(gt=0), alias="lr", flag="--lr")
    beta1: float = setting(0.9, help="AdamW's beta1", bounds=Bounds(ge=0, lt=1))
    beta2: float = setting(0.999, help="AdamW's beta2", bounds=Bounds(ge=0, lt=1))
    eps: float = setting(1e-8, help="AdamW's eps", bounds=Bounds(gt=0))
    weight_decay: float = setting(0.01, help="AdamW's (decoupled) weight decay", bounds=NON_NEGATIVE)
    warmup_steps: int = setting(500, help="steps of linear warm-up to lr (0: none)", bounds=NON_NEGATIVE)
    schedule: str = setting(
        "constant",
        help="constant (paper) or cosine after warm-up",
        choices=("constant", "cosine"),
        alias="schedule",
        flag="--schedule",
    )
    grad_clip: float = setting(
        0.0,
        help="max gradient norm (0 = off, the paper's default)",
        bounds=NON_NEGATIVE,
        alias="grad_clip",
        flag="--grad-clip",
    )
    impl: str = setting(
        "standard",
        choices=("standard", "fast", "bridge"),
        alias="impl",
        flag="--impl",
        help="training step: standard (default) | fast (loss positions only in the last block, fused AdamW) | bridge",
    )
    compile: bool = setting(
        False, help="run the training forward under torch.compile (opt-in; 12-15 s to compile)", alias="compile"
    )
    batch_size: int = setting(128, help="batch size", bounds=POSITIVE, alias="batch_size", flag="--batch-size")
    batching: str = setting(
        "uniform",
        choices=("uniform", "epoch"),
        alias="batching",
        help="uniform: examples drawn uniformly with replacement; epoch: a fresh permutation of the D examples each "
        "epoch, consecutive slices, the last partial batch kept (DataLoader(shuffle=True))",
    )
    max_steps: int = setting(
        20000, help="stop here if not converged earlier", bounds=POSITIVE, alias="max_steps", flag="--max-steps"
    )
    batch_seed: int = setting(0, help="seed of the batch order", bounds=SEED)
    ckpt_every: int = setting(50, help="steps between checkpoints", bounds=POSITIVE)
    ckpt_every_transition: int = setting(
        25, help="steps between checkpoints while 0.1 log K < Lc < 0.95 log K", bounds=POSITIVE
    )
    ckpt_every_max: int = setting(
        0,
        bounds=NON_NEGATIVE,
        note="0: the spacing never widens",
        help="on a quiet plateau the spacing doubles up to this (0: never wider than ckpt_every): a run that sits "
        "100,000 steps on the plateau does not spend its time evaluating (train.next_interval)",
    )
    converge_Lc: float = setting(0.05, help="Lc (nats) below which the run counts as converged", bounds=Bounds(gt=0))
    margin_steps: int = setting(200, help="keep training this long after convergence", bounds=NON_NEGATIVE)
    post_tau_frac: float = setting(1.6, help="and at least until this multiple of tau (Table 6 reads 1.5 tau)")
    stop: str = setting(
        "converge",
        choices=("converge", "tau", "floor", "budget"),
        alias="stop",
        help="converge: the rule above; tau: stop once the tau of the families named by tau_on are known and "
        "tau_margin * tau has passed (a tau-only sweep does not pay for the convergence tail); floor: once the loss "
        "of those families is below stop_floor * log K (the original's phase-boundary early stop: L_seq < 0.01 log "
        "K), or at max_steps; budget: every step to max_steps (Table 2's 20,000-step forward pretraining)",
    )
    tau_margin: float = setting(
        1.2, help="the tau stop waits until this multiple of tau", bounds=Bounds(ge=1), note="a multiple of tau"
    )
    tau_on: str = setting(
        "both",
        choices=("both", "paper", "first_token"),
        alias="tau_on",
        help="both, paper (L_seq) or first_token (Lc): whose tau the tau and floor stops wait for",
    )
    stop_floor: float = setting(
        0.01, help="the floor stop's loss, a fraction of log K", bounds=FRACTION, note="a fraction of log K"
    )
    init_from: str = setting(
        "",
        help="start from another run's weights instead of the init (Table 2's transfer): its folder (a relative "
        "path is read from this run's parent folder, so a sweep names a sibling point); the optimizer and the step "
        "count start fresh",
    )
    init_step: int = setting(
        -1,
        help="init_from's checkpoint (-1: the last of a finished run)",
        bounds=Bounds(ge=-1),
        note="a checkpoint step, or -1 for the last",
    )


@dataclass(frozen=True)
class EvalConfig:
    """The fixed evaluation set and the thresholds of the summary metrics."""

    n_groups: int = setting(200, help="groups of the fixed evaluation set", bounds=POSITIVE)
    eval_seed: int = setting(12345, help="seed of the evaluation set", bounds=SEED)
    alpha: float = setting(
        0.5, help="tau threshold as a fraction of log K", bounds=FRACTION, alias="alpha", flag="--alpha"
    )
    plateau_start: int = setting(
        300, help="the plateau window starts after the first few hundred steps", bounds=NON_NEGATIVE
    )
    seq_plateau_start: int = setting(
        100,
        bounds=NON_NEGATIVE,
        help="the paper's plateau height (Table 7): mean L_seq over steps [seq_plateau_start, seq_plateau_end]",
    )
    seq_plateau_end: int = setting(500, help="the end of the paper's plateau window (steps)")
    seq_max_strings: int = setting(
        0,
        bounds=NON_NEGATIVE,
        note="0 = every evaluation group",
        help="at most this many candidate strings (besides each example's own target) are scored at a checkpoint: "
        "the first n groups of the evaluation set with n K (K - 1) <= seq_max_strings (at least one group); 0 scores "
        "every group (exact). The analysis passes score them all.",
    )
    seq_subset: int = setting(
        0,
        bounds=NON_NEGATIVE,
        note="0 = every evaluation group",
        help="both families on a seeded subset of this many groups at each checkpoint, and on every group wherever "
        "the subset's estimate lies within seq_guard standard errors of a threshold the run reports or acts on "
        "(metrics.EvalGuard: each tau, width and stop stays the full-set one); 0 scores every group at every "
        "checkpoint",
    )
    seq_guard: float = setting(
        5.0, help="the guard's margin, in standard errors", bounds=Bounds(gt=0), note="standard errors"
    )
    width_hi: float = setting(
        0.95,
        help="the transition width (the original's clock for Tables 4 and 8 and the learning-rate sweep): "
        "t_end = the first evaluation with loss < width_lo log K, t_start = the last one before t_end with loss > "
        "width_hi log K (0 if none), tau_width = t_end - t_start",
    )
    width_lo: float = setting(0.05, help="the transition width's lower end, a fraction of log K (see width_hi)")

    def seq_groups(self, K: int) -> int:
        """Groups whose candidate strings a checkpoint scores (0: all)."""
        if not self.seq_max_strings:
            return 0
        n = max(1, self.seq_max_strings // (K * (K - 1)))
        return 0 if n >= self.n_groups else n


SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig, "eval": EvalConfig}


def settings(sections: Mapping[str, type] = SECTIONS) -> Iterator[tuple[str, Field, Setting]]:
    """Every config field as ("section.name", its dataclass Field, its Setting), in stored order."""
    for section, kls in sections.items():
        for f in fields(kls):
            yield f"{section}.{f.name}", f, f.metadata[SETTING]


def kind(f: Field) -> str:
    """A field's declared type as a word (int, float, str, bool), whether or not its module
    postpones annotations."""
    return f.type if isinstance(f.type, str) else f.type.__name__


def _choices(key: str) -> tuple[str, ...]:
    return next(s.choices for k, _, s in settings() if k == key)


# the choice lists other modules name, read from the fields that declare them
DIRECTIONS = _choices("task.direction")
LABEL_NOISE_MODES = _choices("task.label_noise_mode")
INITS = _choices("model.init")
IMPLS = _choices("train.impl")  # model.training_forward
BATCHINGS = _choices("train.batching")
STOPS = _choices("train.stop")
TAU_ON = _choices("train.tau_on")


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    preset: str = "custom"

    def seq_thresholds(self) -> tuple[float, ...]:
        """Every fraction of log K at which the run reports a crossing of L_seq or acts on one:
        tau's alpha and Table 5's (0.3-0.7), the transition width's ends, the floor stop, and the
        ends of the dense checkpoint spacing (``train.next_interval``)."""
        dense_lo = max(self.train.converge_Lc / self.task.log_K, 0.1)
        fr = {
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            self.eval.alpha,
            self.eval.width_hi,
            self.eval.width_lo,
            self.train.stop_floor,
            dense_lo,
        }
        return tuple(sorted(fr))

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
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        def build(kls, sub, where):
            if not isinstance(sub, dict):
                raise ConfigError(f"{where}: expected an object, got {type(sub).__name__}")
            known = {f.name for f in fields(kls)}
            unknown = set(sub) - known
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
            return kls(**{k: coerce(kls, k, v, f"{where}.{k}") for k, v in sub.items()})

        unknown = set(d) - {*SECTIONS, "preset"}
        if unknown:
            raise ConfigError(f"config: unknown keys {sorted(unknown)}")
        cfg = cls(
            **{name: build(kls, d.get(name, {}), name) for name, kls in SECTIONS.items()},
            preset=d.get("preset", "custom"),
        )
        if not isinstance(cfg.preset, str):
            raise ConfigError(f"preset={cfg.preset!r}: expected a string")
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
    return Layout(seq_len=pos + target_len + 1, segments=tuple(segments), target_start=pos, target_len=target_len)


# --- validation -------------------------------------------------------------------


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
        raise ConfigError(f"{key}={_show(v)}: expected {'a finite number' if typ == 'float' else 'a ' + typ}")
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
    if ev.seq_subset and ev.seq_max_strings:
        raise ConfigError(
            f"eval.seq_subset={ev.seq_subset} and eval.seq_max_strings={ev.seq_max_strings}: choose one "
            "(the subset with its guard keeps every tau exact; the cap does not)"
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
            f"train.batch_size={_show(B)}: at most {MAX_BATCH} sequences per step (a larger batch does not "
            f"fit in memory with this model; the paper uses 128)"
        )
    if m.n_layers > MAX_LAYERS:
        raise ConfigError(f"model.n_layers={_show(m.n_layers)}: at most {MAX_LAYERS}")
    for name in ("d_model", "n_heads", "d_head", "d_mlp"):
        v = getattr(m, name)
        if v > MAX_WIDTH:
            raise ConfigError(
                f"model.{name}={_show(v)}: at most {MAX_WIDTH} (a model this wide does not fit in memory)"
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


# --- reading values (config.json, CLI strings) -------------------------------------


def _field_type(kls, key):
    return {f.name: kind(f) for f in fields(kls)}[key]


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def coerce(kls, key: str, value: Any, where: str) -> Any:
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
        kind = {
            "int": "an integer",
            "float": "a number",
            "str": "a string",
            "bool": "true or false (true/false, 1/0, yes/no)",
        }[typ]
        raise ConfigError(f"{where}={value!r}: expected {kind}") from None
    raise ConfigError(f"{where}: field type {typ!r} has no parser")
