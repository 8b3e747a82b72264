"""Run configuration (docs/design.md, docs/analyses.md): ``schema`` (the dataclasses, each field declared once with
its help, choices, bounds, alias and flag), ``task_section`` (the task's section and the layout it
implies), ``layout`` (the vocabulary and the token positions), ``settings`` (that declaration's helper
and the reading of values), ``validation`` and ``presets`` (named recipes, overrides, run names).
Declared the same way beside the run's sections: ``analysis`` (``AnalysisConfig``, the pass
settings) and ``estimators`` (``SGLDSettings``, ``HessianSettings``). ``options`` (``RunOptions``:
how a run, a sweep, a recipe or an analysis is run, beside what it trains). Everything is
importable from here."""

from .analysis import ANALYSIS, AnalysisConfig
from .estimators import HessianSettings, SGLDSettings
from .layout import LEN_A, LEN_B, N_CHARS, Layout
from .options import RunOptions
from .presets import (
    ALIASES,
    PRESETS,
    aliases,
    compare_name,
    config_diff,
    extends,
    parse_override,
    preset,
    run_name,
    same_training,
    with_overrides,
)
from .schema import (
    PRECISIONS,
    QUIET_GAP,
    QUIET_SPACING_FRAC,
    SECTIONS,
    SPACING_HI,
    STOPS,
    EvalConfig,
    ModelConfig,
    RunConfig,
    TrainConfig,
    settings,
)
from .settings import (
    NON_NEGATIVE,
    POSITIVE,
    SETTING,
    Bounds,
    ConfigError,
    Setting,
    check_depth,
    coerce,
    kind,
    parse_json,
    setting,
)
from .task_section import A_TARGET_DIRECTIONS, MAX_NB, SELECTOR_DIRECTIONS, TaskConfig, layout_for
from .validation import reductions, validate

__all__ = [
    "A_TARGET_DIRECTIONS",
    "ALIASES",
    "ANALYSIS",
    "AnalysisConfig",
    "LEN_A",
    "LEN_B",
    "MAX_NB",
    "N_CHARS",
    "NON_NEGATIVE",
    "POSITIVE",
    "PRESETS",
    "QUIET_GAP",
    "QUIET_SPACING_FRAC",
    "RunOptions",
    "SPACING_HI",
    "SECTIONS",
    "SELECTOR_DIRECTIONS",
    "SETTING",
    "PRECISIONS",
    "STOPS",
    "Bounds",
    "HessianSettings",
    "SGLDSettings",
    "ConfigError",
    "check_depth",
    "parse_json",
    "EvalConfig",
    "Layout",
    "ModelConfig",
    "RunConfig",
    "Setting",
    "TaskConfig",
    "TrainConfig",
    "aliases",
    "coerce",
    "compare_name",
    "config_diff",
    "extends",
    "same_training",
    "kind",
    "layout_for",
    "parse_override",
    "preset",
    "run_name",
    "setting",
    "settings",
    "reductions",
    "validate",
    "with_overrides",
]
