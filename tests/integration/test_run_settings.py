"""Settings a run cannot or need not honour: one the trainer cannot meet is refused before any
folder exists, one it adjusts is said in the run's summary, and a raised step cap on a run its
stopping rule finished changes nothing on disk.
"""

from __future__ import annotations

import shutil

from mi_plateau.checkpoints import Run
from mi_plateau.config import with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.summaries import summarize
from mi_plateau.train import train


def test_an_absurd_batch_size_is_refused_before_any_folder(tmp_path, run_cli):
    """A batch size past the bound (20000000 would need some 38 GB) is a one-line refusal, and
    no run folder is created."""
    p = run_cli("train", "--preset", "tiny", "--batch-size", "20000000", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "train.batch_size=20000000: at most 65536" in p.stderr
    assert not (tmp_path / "r").exists()


def test_a_clamped_evaluation_set_is_said(tiny_run):
    """eval.n_groups above the task's n_b evaluates all n_b groups, and the summary says so."""
    s = run_summary(tiny_run)
    cfg = tiny_run.config()
    assert s["eval_groups"] == min(cfg.eval.n_groups, cfg.task.n_b)
    big = with_overrides(cfg, {"eval.n_groups": cfg.task.n_b + 10})
    s2 = summarize(big, tiny_run.records())
    assert s2["eval_groups"] == cfg.task.n_b and f"holds all {cfg.task.n_b} groups" in s2["eval_groups_note"]


def test_resume_with_a_higher_cap_leaves_a_converged_run_alone(tiny_run, tmp_path):
    """--resume with a higher --max-steps on a run its stopping rule finished rewrites neither
    config.json nor the manifest."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run.path, copy)
    before = {f: (copy / f).read_bytes() for f in ("config.json", "manifest.json")}
    cfg = Run(copy).config()
    assert Run(copy).manifest()["status"] == "finished" and Run(copy).records()[-1]["step"] < cfg.train.max_steps
    train(with_overrides(cfg, {"max_steps": cfg.train.max_steps + 1000}), copy, resume=True, progress=False)
    assert {f: (copy / f).read_bytes() for f in before} == before
