"""Run configuration (SPEC sections 2-5): ``schema`` (the dataclasses, layout, validation) and
``presets`` (named recipes, overrides, run names). Everything is importable from here."""

from .presets import (
    ALIASES, PRESETS, compare_name, config_diff, extends, parse_override, preset, run_name, with_overrides,
)
from .schema import (
    A_TARGET_DIRECTIONS, BATCHINGS, DIRECTIONS, IMPLS, INITS, LEN_A, LEN_B, MAX_NB, N_CHARS, QUIET_GAP, SECTIONS,
    SELECTOR_DIRECTIONS, STOPS, ConfigError, EvalConfig, Layout, ModelConfig, RunConfig, TaskConfig, TrainConfig,
    coerce, layout_for, validate,
)

__all__ = [
    "A_TARGET_DIRECTIONS", "ALIASES", "BATCHINGS", "DIRECTIONS", "IMPLS", "INITS", "LEN_A", "LEN_B", "MAX_NB", "N_CHARS",
    "PRESETS", "QUIET_GAP", "SECTIONS", "SELECTOR_DIRECTIONS", "STOPS", "ConfigError", "EvalConfig", "Layout", "ModelConfig",
    "RunConfig", "TaskConfig", "TrainConfig", "coerce", "compare_name", "config_diff", "extends", "layout_for", "parse_override",
    "preset", "run_name", "validate", "with_overrides",
]
