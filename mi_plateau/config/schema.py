"""The configuration's schema: frozen dataclasses with their derived values (the task section
and the token layout: ``task_section``; validation: ``validation``; the metadata helper and
reading values: ``settings``).

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
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any

from .settings import (
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    SETTING,
    Bounds,
    ConfigError,
    Setting,
    coerce,
    setting,
)
from .task_section import TaskConfig, layout_for

# nats of swap gap below which a plateau counts as quiet: the checkpoint spacing may widen there
# (train.next_interval)
QUIET_GAP = 0.02
# a widened spacing on a quiet plateau is at most this share of the step reached (train.next_interval)
QUIET_SPACING_FRAC = 0.125
SPACING_HI = 0.95  # the checkpoint spacing is dense below this fraction of log K (either family)
MAX_BATCH = 1 << 16

# --- the configuration ----------------------------------------------------------------


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
    """Optimiser, schedule, batching and checkpoint density (docs/design.md, docs/analyses.md)."""

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
    precision: str = setting(
        "auto",
        choices=("auto", "fp32", "bf16"),
        alias="precision",
        flag="--precision",
        help="the training forward and backward's arithmetic: auto (bf16 where the device has bf16 units: a CUDA GPU "
        "with bf16, a CPU with AVX512-BF16 or AMX-BF16; fp32 elsewhere), fp32, or bf16 autocast (weights, optimizer "
        "state, softmax and loss stay fp32); a new run's config records what auto chose; evaluation stays fp32",
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
        20000,
        help="stop here if not converged earlier",
        bounds=Bounds(ge=1, le=10**9, text="must be in 1..10^9 (a step budget)"),
        alias="max_steps",
        flag="--max-steps",
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
        help="on a quiet plateau the spacing doubles up to this and to an eighth of the step reached (0: never wider "
        "than ckpt_every): a run that sits 100,000 steps on the plateau does not spend its time evaluating "
        "(train.next_interval; summary --spacing-check replays it on a dense run)",
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
    log: str = setting(
        "none",
        choices=("none", "tensorboard", "wandb"),
        alias="log",
        flag="--log",
        help="where each checkpoint's record and crossings are also logged: none (default), tensorboard (event files "
        "in <run>/tb/) or wandb (a W&B run in <run>/wandb/, offline unless WANDB_MODE says otherwise); the training is "
        "the same either way (train.tracking)",
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
    live_groups: int = setting(
        20,
        bounds=NON_NEGATIVE,
        note="0 = every evaluation group",
        help="while training, L_seq is scored on this many seeded evaluation groups (an estimate with its standard "
        "error: each crossing an estimate with its interval), the first-token family on every group; `mi-plateau "
        "settle` scores a crossing's interval on the full set on request. 0 scores every group at every checkpoint; a "
        "new run on a CUDA device takes 0 for the default where a measured full scoring costs at most 5% of the steps "
        "between checkpoints (``train.timing.live_groups_for``; the run records what it chose)",
    )
    width_hi: float = setting(
        0.95,
        help="the transition width (the original's clock for Tables 4 and 8 and the learning-rate sweep): "
        "t_end = the first evaluation with loss < width_lo log K, t_start = the last one before t_end with loss > "
        "width_hi log K (0 if none), tau_width = t_end - t_start",
    )
    width_lo: float = setting(0.05, help="the transition width's lower end, a fraction of log K (see width_hi)")


SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig, "eval": EvalConfig}


def settings(sections: Mapping[str, type] = SECTIONS) -> Iterator[tuple[str, Field, Setting]]:
    """Every config field as ("section.name", its dataclass Field, its Setting), in stored order."""
    for section, kls in sections.items():
        for f in fields(kls):
            yield f"{section}.{f.name}", f, f.metadata[SETTING]


def _choices(key: str) -> tuple[str, ...]:
    return next(s.choices for k, _, s in settings() if k == key)


# the choice lists other modules name, read from the fields that declare them
STOPS = _choices("train.stop")
PRECISIONS = _choices("train.precision")


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    preset: str = "custom"

    def spacing_thresholds(self) -> tuple[float, float]:
        """The fractions of log K between which the checkpoint spacing is dense (``train.next_interval``):
        below SPACING_HI in either family and above max(converge_Lc, 0.1 log K)."""
        return max(self.train.converge_Lc / self.task.log_K, 0.1), SPACING_HI

    def seq_thresholds(self) -> tuple[float, ...]:
        """Every fraction of log K at which the run reports a crossing or acts on one: the alphas
        (eval.alpha, Table 5's 0.3-0.7), the width's ends, the floor stop, the spacing's ends."""
        fr = {0.3, 0.4, 0.5, 0.6, 0.7, self.eval.alpha, self.eval.width_hi, self.eval.width_lo, self.train.stop_floor}
        return tuple(sorted(fr | set(self.spacing_thresholds())))

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

        if not isinstance(d, dict):
            raise ConfigError(f"config: expected an object of sections, got {type(d).__name__} ({str(d)[:40]!r})")
        unknown = set(d) - {*SECTIONS, "preset"}
        if unknown:
            raise ConfigError(f"config: unknown keys {sorted(unknown)}")
        d = retire_eval_keys(d)
        cfg = cls(
            **{name: build(kls, d.get(name, {}), name) for name, kls in SECTIONS.items()},
            preset=d.get("preset", "custom"),
        )
        if not isinstance(cfg.preset, str):
            raise ConfigError(f"preset={cfg.preset!r}: expected a string")
        return cfg


RETIRED_EVAL = ("seq_max_strings", "seq_subset", "seq_rows", "seq_guard", "guard_first_token")


def retire_eval_keys(d: dict[str, Any]) -> dict[str, Any]:
    """A stored config with the retired evaluation settings (the staged guard's and the older cap's,
    in run folders written before ``eval.live_groups``) mapped onto ``eval.live_groups``: a
    guarded subset of n groups (records with standard errors) becomes n; the older cap becomes 0
    where it covered every group, else the default subset (its records, without a standard error,
    then read as estimates of unknown error that ``settle`` scores where needed)."""
    ev = d.get("eval")
    if not isinstance(ev, dict) or not any(k in ev for k in RETIRED_EVAL):
        return d
    ev = dict(ev)
    old = {k: ev.pop(k) for k in RETIRED_EVAL if k in ev}
    if "live_groups" not in ev:
        n = int(old.get("seq_subset") or 0)
        cap = int(old.get("seq_max_strings") or 0)
        if not n and cap:
            task = d.get("task") if isinstance(d.get("task"), dict) else {}
            K = int(task.get("K", TaskConfig.K))
            groups = min(int(ev.get("n_groups", EvalConfig.n_groups)), int(task.get("n_b", TaskConfig.n_b)))
            n = 0 if K < 2 or max(1, cap // (K * (K - 1))) >= groups else EvalConfig.live_groups
        ev["live_groups"] = n
    return {**d, "eval": ev}
