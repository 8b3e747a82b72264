"""The configuration's schema: frozen dataclasses with their derived values, the token
layout, validation, and reading values from JSON or the command line (``coerce``).

One ``RunConfig`` travels through the whole pipeline. It is built from a preset plus
overrides (``presets``), validated before any work starts, and stored as JSON in every run
folder so that a run can be rebuilt from its folder alone. Nothing heavy is imported.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

N_CHARS = 36  # the alphabet a-z0-9
IMPLS = ("standard", "fast", "bridge")  # model.training_forward
INITS = ("tl4", "gpt2")
BATCHINGS = ("uniform", "epoch")
STOPS = ("converge", "tau", "floor", "budget")
TAU_ON = ("both", "paper", "first_token")
LABEL_NOISE_MODES = ("fixed", "per_draw")
# nats of swap gap below which a plateau counts as quiet: the checkpoint spacing may widen there
# (train.next_interval), and the guarded evaluation watches it (metrics.eval_guard)
QUIET_GAP = 0.02
MAX_BATCH = 1 << 16
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
    label_noise: float = 0.0  # p: the share of training targets replaced by another A of their group
    # "fixed": a fraction p of the examples corrupted once, for the whole run (the original's);
    # "per_draw": each training draw corrupted with probability p (ours; runs older than this
    # setting trained that way: checkpoints.LEGACY_DEFAULTS)
    label_noise_mode: str = "fixed"
    # the gradient-cancellation control (Table 12): 0 = one global selector set shared by every
    # group; G > 0 = G selector sets of K selectors each, all G*K strings distinct, group g using
    # set g mod G (so the groups that share a set number about n_b / G)
    selector_groups: int = 0
    # the K targets of a group start with K different characters (ours and the K sweep's); False:
    # first characters drawn freely, as the original's direction experiment (Table 2) drew them
    distinct_first: bool = True
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
    # on a quiet plateau the spacing doubles up to this (0: never wider than ckpt_every): a run
    # that sits 100,000 steps on the plateau does not spend its time evaluating (train.next_interval)
    ckpt_every_max: int = 0
    converge_Lc: float = 0.05
    margin_steps: int = 200  # keep training this long after convergence
    post_tau_frac: float = 1.6  # and at least until this multiple of tau (Table 6 reads 1.5 tau)
    # "converge": the rule above; "tau": stop once the tau of the families named by tau_on are
    # known and tau_margin * tau has passed (a tau-only sweep does not pay for the convergence tail)
    stop: str = "converge"
    tau_margin: float = 1.2
    tau_on: str = "both"  # "both", "paper" (L_seq) or "first_token" (Lc): whose tau the "tau" rule waits for
    # "floor": stop once the loss of the families named by tau_on is below stop_floor * log K (the
    # original's phase-boundary early stop: L_seq < 0.01 log K), or at max_steps; "budget": run
    # every step to max_steps (Table 2's 20,000-step forward pretraining)
    stop_floor: float = 0.01
    # start from another run's weights instead of the init (Table 2's transfer): its folder (a
    # relative path is read from this run's parent folder, so a sweep names a sibling point) and
    # its checkpoint (-1: the last of a finished run). The optimizer and the step count start fresh.
    init_from: str = ""
    init_step: int = -1


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
    # both families on a seeded subset of this many groups at each checkpoint, and on every
    # group wherever the subset's estimate lies within seq_guard standard errors of a threshold the
    # run reports or acts on (metrics.EvalGuard: each tau, width and stop stays the full-set one);
    # 0 scores every group at every checkpoint
    seq_subset: int = 0
    seq_guard: float = 5.0
    # the transition width (the original's clock for Tables 4 and 8 and the learning-rate sweep):
    # t_end = the first evaluation with loss < width_lo log K, t_start = the last one before t_end
    # with loss > width_hi log K (0 if none), tau_width = t_end - t_start
    width_hi: float = 0.95
    width_lo: float = 0.05

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

    def seq_thresholds(self) -> tuple[float, ...]:
        """Every fraction of log K at which the run reports a crossing of L_seq or acts on one:
        tau's alpha and Table 5's (0.3-0.7), the transition width's ends, the floor stop, and the
        ends of the dense checkpoint spacing (``train.next_interval``)."""
        dense_lo = max(self.train.converge_Lc / self.task.log_K, 0.1)
        fr = {0.3, 0.4, 0.5, 0.6, 0.7, self.eval.alpha, self.eval.width_hi, self.eval.width_lo, self.train.stop_floor, dense_lo}
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
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        def build(kls, sub, where):
            if not isinstance(sub, dict):
                raise ConfigError(f"{where}: expected an object, got {type(sub).__name__}")
            known = {f.name for f in fields(kls)}
            unknown = set(sub) - known
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
            return kls(**{k: coerce(kls, k, v, f"{where}.{k}") for k, v in sub.items()})

        unknown = set(d) - {"task", "model", "train", "eval", "preset"}
        if unknown:
            raise ConfigError(f"config: unknown keys {sorted(unknown)}")
        cfg = cls(
            task=build(TaskConfig, d.get("task", {}), "task"),
            model=build(ModelConfig, d.get("model", {}), "model"),
            train=build(TrainConfig, d.get("train", {}), "train"),
            eval=build(EvalConfig, d.get("eval", {}), "eval"),
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
    return Layout(
        seq_len=pos + target_len + 1, segments=tuple(segments), target_start=pos, target_len=target_len
    )


# --- validation -------------------------------------------------------------------


def validate(cfg: RunConfig) -> RunConfig:
    """Raise ConfigError naming the first bad value; return cfg unchanged if valid."""
    _check_kinds(cfg)
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
    if t.selector_groups < 0:
        raise ConfigError(f"task.selector_groups={t.selector_groups}: must be >= 0 (0 = one global selector set)")
    if t.selector_groups > 0 and not t.has_selector:
        raise ConfigError(f"task.selector_groups={t.selector_groups}: task.direction={t.direction!r} has no selector")
    if t.selector_groups > t.n_b:
        raise ConfigError(f"task.selector_groups={t.selector_groups}: at most n_b={t.n_b} (one selector set per group)")
    if N_CHARS**t.len_z < t.selector_groups * t.K:
        raise ConfigError(
            f"task.selector_groups={t.selector_groups}: {t.selector_groups} sets of K={t.K} distinct selectors need "
            f"{t.selector_groups * t.K} strings, but len_z={t.len_z} gives only {N_CHARS**t.len_z}; raise task.len_z"
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
        if not 0 <= v < 2**63:
            raise ConfigError(f"{name}={v}: seeds must be in [0, 2^63)")
    if not 0.0 <= t.label_noise < 1.0:
        raise ConfigError(f"task.label_noise={t.label_noise}: must be in [0, 1)")
    if t.label_noise_mode not in LABEL_NOISE_MODES:
        raise ConfigError(f"task.label_noise_mode={t.label_noise_mode!r}: must be one of {', '.join(LABEL_NOISE_MODES)}")
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
    if tr.batch_size > MAX_BATCH:
        raise ConfigError(f"train.batch_size={tr.batch_size}: at most {MAX_BATCH} sequences per step (a larger batch does not "
                          f"fit in memory with this model; the paper uses 128)")
    for name, v in (("train.ckpt_every", tr.ckpt_every), ("train.ckpt_every_transition", tr.ckpt_every_transition)):
        if v <= 0:
            raise ConfigError(f"{name}={v}: must be a positive number of steps")
    if tr.ckpt_every_max < 0:
        raise ConfigError(f"train.ckpt_every_max={tr.ckpt_every_max}: must be >= 0 (0: the spacing never widens)")
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
    if tr.tau_on not in TAU_ON:
        raise ConfigError(f"train.tau_on={tr.tau_on!r}: must be one of {', '.join(TAU_ON)}")
    if tr.tau_on == "paper" and not t.targets_A:
        raise ConfigError(f"train.tau_on='paper': the paper family (L_seq) is undefined for task.direction={t.direction!r}; use first_token")
    if tr.init_step < -1:
        raise ConfigError(f"train.init_step={tr.init_step}: must be a checkpoint step, or -1 for the last")
    if not 0.0 < tr.stop_floor < 1.0:
        raise ConfigError(f"train.stop_floor={tr.stop_floor}: must be in (0, 1) (a fraction of log K)")
    if not 0.0 < ev.width_lo < ev.width_hi:
        raise ConfigError(f"eval.width_lo={ev.width_lo}, eval.width_hi={ev.width_hi}: need 0 < width_lo < width_hi "
                          "(fractions of log K)")
    if tr.tau_margin < 1.0:
        raise ConfigError(f"train.tau_margin={tr.tau_margin}: must be >= 1 (a multiple of tau)")
    if not 0 <= ev.seq_plateau_start < ev.seq_plateau_end:
        raise ConfigError(f"eval.seq_plateau_start={ev.seq_plateau_start}, eval.seq_plateau_end={ev.seq_plateau_end}: need 0 <= start < end")
    if ev.seq_subset < 0:
        raise ConfigError(f"eval.seq_subset={ev.seq_subset}: must be >= 0 (0 = every evaluation group)")
    if ev.seq_subset and ev.seq_max_strings:
        raise ConfigError(f"eval.seq_subset={ev.seq_subset} and eval.seq_max_strings={ev.seq_max_strings}: choose one "
                          "(the subset with its guard keeps every tau exact; the cap does not)")
    if not ev.seq_guard > 0:
        raise ConfigError(f"eval.seq_guard={ev.seq_guard}: must be > 0 (standard errors)")
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
    _check_sizes(cfg)
    return cfg


def _check_kinds(cfg: RunConfig) -> None:
    """Every field holds a value of its declared type, and every number is finite: a config
    built in Python gets the checks that ``coerce`` gives values read from JSON or the CLI."""
    want = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}
    for section, kls in SECTIONS.items():
        sub = getattr(cfg, section)
        for f in fields(kls):
            v = getattr(sub, f.name)
            ok = isinstance(v, want[f.type]) and (f.type == "bool" or not isinstance(v, bool))
            if ok and f.type == "float":
                ok = math.isfinite(v)
            if not ok:
                raise ConfigError(f"{section}.{f.name}={_show(v)}: expected {'a finite number' if f.type == 'float' else 'a ' + f.type}")


# Bounds far above anything this task trains (the paper's model has 0.8 M parameters and one
# step holds about 30 M activations); a config past them cannot fit in memory and would die in
# the allocator, so it is refused here, before any folder or tensor is made.
MAX_LAYERS = 256
MAX_WIDTH = 1 << 16  # each of d_model, n_heads, d_head, d_mlp
MAX_PARAMS = 1 << 31  # 8 GiB of float32 weights, 24 GiB with AdamW's moments
MAX_ACTIVATIONS = 1 << 35  # floats one training step keeps for the backward pass (128 GiB)


def _show(v: Any) -> str:
    """A value for an error message, with an integer of many digits shortened (1e308 read as an int)."""
    if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) > 15:
        digits = str(abs(v))
        return f"{'-' if v < 0 else ''}{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    return repr(v)


def _check_sizes(cfg: RunConfig) -> None:
    """The model and one training step fit in memory (generous bounds, see MAX_*); the error
    names the fields that make the size."""
    m, B = cfg.model, cfg.train.batch_size
    if m.n_layers > MAX_LAYERS:
        raise ConfigError(f"model.n_layers={_show(m.n_layers)}: at most {MAX_LAYERS}")
    for name in ("d_model", "n_heads", "d_head", "d_mlp"):
        v = getattr(m, name)
        if v > MAX_WIDTH:
            raise ConfigError(f"model.{name}={_show(v)}: at most {MAX_WIDTH} (a model this wide does not fit in memory)")
    T, V, H = layout_for(cfg.task).seq_len, N_CHARS + 8, m.n_heads * m.d_head
    params = m.n_layers * (4 * m.d_model * H + 2 * m.d_model * m.d_mlp) + (2 * V + T) * m.d_model
    shape = (f"model.n_layers={m.n_layers}, model.d_model={m.d_model}, model.n_heads={m.n_heads}, "
             f"model.d_head={m.d_head}, model.d_mlp={m.d_mlp}")
    if params > MAX_PARAMS:
        raise ConfigError(f"{shape}: about {params:.2g} parameters, more than fit in memory (at most {MAX_PARAMS:.2g})")
    acts = B * T * (m.n_layers * (6 * m.d_model + 4 * H + 2 * m.n_heads * T + 2 * m.d_mlp) + V)
    if acts > MAX_ACTIVATIONS:
        raise ConfigError(f"train.batch_size={B} with {shape}: one training step would hold about {acts:.2g} activations, "
                          f"more than fit in memory (at most {MAX_ACTIVATIONS:.2g})")


# --- reading values (config.json, CLI strings) -------------------------------------


SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig, "eval": EvalConfig}


def _field_type(kls, key):
    return {f.name: f.type for f in fields(kls)}[key]


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
        kind = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false (true/false, 1/0, yes/no)"}[typ]
        raise ConfigError(f"{where}={value!r}: expected {kind}") from None
    raise ConfigError(f"{where}: field type {typ!r} has no parser")
