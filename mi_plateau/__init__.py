"""mi_plateau: mechanistic interpretability of the marginal-to-conditional plateau.

Reproduces "Marginals Before Conditionals" (arXiv 2603.10074). The public API is importable
from here; heavy packages (torch, transformer_lens) load only when a function needs them.
Training and the HTML report share their module's name, so import them from it:
``from mi_plateau.train import train`` and ``from mi_plateau.report import report``.
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "RunConfig": "config",
    "TaskConfig": "config",
    "ModelConfig": "config",
    "TrainConfig": "config",
    "EvalConfig": "config",
    "AnalysisConfig": "config",
    "RunOptions": "config",
    "ConfigError": "config",
    "preset": "config",
    "with_overrides": "config",
    "validate": "config",
    "make_task": "task",
    "make_eval_set": "task",
    "build_model": "model",
    "Run": "checkpoints",
    "RunError": "checkpoints",
    "summarize": "summaries",
    "evaluate": "metrics",
    "summary": "api",
    "analyze": "api",
    "inspect": "api",
    "ablation_report": "api",
    "sampled_tau": "api",
    "sampled_width": "api",
    "exact_check": "api",
    "spacing_check": "api",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'mi_plateau' has no attribute {name!r}")
