"""docs/tutorial.md's code runs as written (on the shared tiny run)."""

import re
from pathlib import Path

import mi_plateau
from mi_plateau.settle import run_summary


def test_tutorial_code_runs(tiny_run, capsys):
    text = (Path(mi_plateau.__file__).parents[1] / "docs" / "tutorial.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code.replace("checkpoints/demo_K5_nb400_s0", str(tiny_run.path)), "tutorial.md", "exec"), {})
    out = capsys.readouterr().out
    m = re.search(r"Lc clean ([\d.]+), L0H0 ablated ([\d.]+), z patched at layer 1 ([\d.]+) nats", out)
    clean, ablated, patched = map(float, m.groups())
    assert clean < 0.1 and ablated >= clean and patched > clean  # a converged run uses z
    assert "BOS" in out and "Run(" in out


def test_run_api_speaks_dataframes_and_snaps_steps(tiny_run, capsys):
    import pandas as pd

    df = tiny_run.records_df()
    assert isinstance(df, pd.DataFrame) and len(df) == len(tiny_run.steps())
    assert {"step", "L_seq", "Lc", "swap_gap", "examples_seen"} <= set(df.columns)
    r = repr(tiny_run)
    assert "preset tiny" in r and f"{len(df)} checkpoints" in r and "finished" in r
    steps = tiny_run.steps()
    between = (steps[3] + steps[4]) // 2 + 1
    tiny_run.load_model(between)
    assert f"nearest checkpoint to {between}: {steps[4]}" in capsys.readouterr().err
    seen = [s for s, _ in zip(tiny_run, range(3))]
    assert [s for s, _ in seen] == steps[:3]
    ev = tiny_run.eval_set()
    assert tiny_run.to_str_tokens(ev.tokens[:2])[0][0] == "BOS"


def test_a_b_target_summary_has_no_log_K_ratio(tmp_path):
    from mi_plateau.config import preset, with_overrides
    from mi_plateau.train import train

    run = train(
        with_overrides(preset("tiny"), {"direction": "forward", "max_steps": 40}), tmp_path / "fwd", progress=False
    )
    s = run_summary(run)
    assert s["reference"].startswith("none") and s["plateau_ratio"] is None and s["definition"] == "first_token"
