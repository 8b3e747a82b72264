"""A diverged run is a result: recorded as diverged (the step, the first quantity that is not
finite), read by every reader, resumed as finished, shown in a sweep's table; and a summary
piped into a reader that goes away ends quietly."""

import json
import subprocess
import sys

from mi_plateau.checkpoints import Run


def test_a_diverged_run_is_recorded_read_and_resumed(run_cli, tmp_path):
    out = tmp_path / "div"
    p = run_cli("train", "--preset", "tiny", "--lr", "1e30", "--max-steps", "40", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "diverged: at step 20 (train_loss not finite)" in p.stdout
    m = Run(out).manifest()
    assert m["status"] == "finished" and m["checkpoints"][-1]["record"]["diverged"] == {
        "step": 20,
        "quantity": "train_loss",
    }
    s = json.loads(run_cli("summary", str(out), "--json").stdout)
    assert s["diverged"] == {"step": 20, "quantity": "train_loss"} and s["last_step"] == 20
    p = run_cli("train", "--preset", "tiny", "--lr", "1e30", "--max-steps", "40", "--out", str(out), "--resume")
    assert p.returncode == 0 and "Traceback" not in p.stderr and Run(out).steps()[-1] == 20


def test_a_diverged_point_is_a_row_of_its_sweep(run_cli, tmp_path):
    f = tmp_path / "d.toml"
    f.write_text('name = "d"\npreset = "tiny"\n[overrides]\nmax_steps = 40\n[[points]]\nlr = 1e30\n')
    p = run_cli("sweep", str(f), "--root", str(tmp_path / "root"), "--jobs", "1", "--quiet")
    assert p.returncode == 0, p.stderr
    rows = json.loads((tmp_path / "root" / "d" / "table.json").read_text())
    assert rows[0]["status"] == "finished" and rows[0]["diverged_step"] == 20 and not rows[0].get("error")


def test_a_summary_piped_into_head_ends_quietly(tiny_run):
    cmd = f"{sys.executable} -m mi_plateau summary {tiny_run.path} --json | head -1"
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    assert p.stdout.strip() == "{" and "Broken pipe" not in p.stderr and "Traceback" not in p.stderr
