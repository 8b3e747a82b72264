"""The example sweep files in docs/sweeps/ parse and validate (the recipes are checked in
test_sweep_recipes): a typo in one would otherwise surface only when someone starts hours of
training."""

from pathlib import Path

import pytest

from mi_plateau.sweeps import load_sweep

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "docs" / "sweeps").glob("*.toml"))


def test_the_shipped_sweep_files_are_found():
    names = {f.stem for f in FILES}
    assert {"lr_probe_k5", "paper_small", "tiny_grid"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_shipped_sweep_file_validates(path):
    assert load_sweep(path).points, path


def test_the_lr_probe_sets_what_each_point_names():
    points = {p.name: p.cfg for p in load_sweep(ROOT / "docs" / "sweeps" / "lr_probe_k5.toml").points}
    warm = points["lr0.005_warmup500"].train
    assert (warm.lr, warm.warmup_steps, warm.grad_clip, warm.schedule) == (0.005, 500, 0.0, "constant")
    assert points["lr0.005_clip1"].train.grad_clip == 1.0 and points["lr0.005_clip1"].train.warmup_steps == 0
    assert {cfg.task.K for cfg in points.values()} == {5}
