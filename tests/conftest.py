"""Shared fixtures. Tiers: tests/unit (tiny hand-built configs and models, known answers),
tests/integration (tiny runs trained end to end, the CLI, the report in Chromium), tests/slow
(paper scale; ``pytest -m slow``). The package is installed (``pip install -e .``): no path edits."""

import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="session")
def tiny_cfg():
    from mi_plateau.config import preset

    return preset("tiny")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_cfg):
    """One tiny run trained to convergence, shared by the tests that only read it."""
    from mi_plateau.train import train

    out = tmp_path_factory.mktemp("runs") / "tiny"
    return train(tiny_cfg, out, progress=False)


def _run_cli(*args, env=None, cwd=None):
    """``mi-plateau ARGS`` in a fresh interpreter; returns the CompletedProcess."""
    e = {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "mi_plateau", *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=600)


@pytest.fixture(scope="session")
def run_cli():
    """The command line as the user runs it: ``run_cli("summary", path)``."""
    return _run_cli
