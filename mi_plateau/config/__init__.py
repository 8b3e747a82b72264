"""Run configuration (SPEC sections 2-5): ``schema`` (the dataclasses, each field declared once with
its help, choices, bounds, alias and flag; layout; validation) and ``presets`` (named recipes,
overrides, run names). Everything is importable from here."""

from .presets import (
    ALIASES, PRESETS, aliases, compare_name, config_diff, extends, parse_override, preset, run_name, with_overrides,
)
from .schema import (
    A_TARGET_DIRECTIONS, BATCHINGS, DIRECTIONS, IMPLS, INITS, LABEL_NOISE_MODES, LEN_A, LEN_B, MAX_NB, N_CHARS,
    QUIET_GAP, SECTIONS, SELECTOR_DIRECTIONS, SETTING, STOPS, TAU_ON, Bounds, ConfigError, EvalConfig, Layout,
    ModelConfig, RunConfig, Setting, TaskConfig, TrainConfig, coerce, kind, layout_for, setting, settings, validate,
)

__all__ = [
    "A_TARGET_DIRECTIONS", "ALIASES", "BATCHINGS", "DIRECTIONS", "IMPLS", "INITS", "LABEL_NOISE_MODES", "LEN_A",
    "LEN_B", "MAX_NB", "N_CHARS", "PRESETS", "QUIET_GAP", "SECTIONS", "SELECTOR_DIRECTIONS", "SETTING", "STOPS",
    "TAU_ON", "Bounds", "ConfigError", "EvalConfig", "Layout", "ModelConfig", "RunConfig", "Setting", "TaskConfig",
    "TrainConfig", "aliases", "coerce", "compare_name", "config_diff", "extends", "kind", "layout_for",
    "parse_override", "preset", "run_name", "setting", "settings", "validate", "with_overrides",
]
