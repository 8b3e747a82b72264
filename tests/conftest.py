import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


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


def run_cli(*args, env=None, cwd=None):
    import subprocess

    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "mi_plateau", *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=600
    )
