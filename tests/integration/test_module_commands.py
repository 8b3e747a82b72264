"""The module commands (``python -m mi_plateau.X``) answer bad input as the CLI does: a non-zero
exit and one line naming what is wrong, before any work; never a traceback."""

import subprocess
import sys

import pytest

TRIES = [
    (["mi_plateau.passes.noise", "RUN", "--out", "MISSING/d/f.json"], "no folder"),
    (["mi_plateau.passes.noise", "MISSING"], "config.json"),
    (["mi_plateau.passes.noise", "RUN", "--every", "0"], "every must be positive"),
    (["mi_plateau.passes.sampled", "RUN", "--draws", "0"], "--draws 0"),
    (["mi_plateau.passes.sampled", "MISSING"], "config.json"),
    (["mi_plateau.passes.llc", "MISSING", "--out", "OUT/x.json"], "config.json"),
    (["mi_plateau.passes.llc", "RUN", "--out", "MISSING/d/x.json"], "no folder"),
    (["mi_plateau.bench.spread", "RUN", "--every", "0"], "--every 0"),
    (["mi_plateau.bench.spread", "RUN", "--subset", "0"], "--subset 0"),
    (["mi_plateau.bench.spread", "RUN", "--rows", "0"], "--rows 0"),
    (["mi_plateau.bench.spread", "MISSING"], "config.json"),
]


@pytest.mark.parametrize("args, says", TRIES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_bad_input_is_one_line(args, says, tiny_run, tmp_path):
    sub = {"RUN": str(tiny_run.path), "MISSING": str(tmp_path / "missing"), "OUT": str(tmp_path)}
    argv = [next((a.replace(k, v) for k, v in sub.items() if a.startswith(k)), a) for a in args]
    p = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=300)
    assert p.returncode in (1, 2), p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr and says in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
