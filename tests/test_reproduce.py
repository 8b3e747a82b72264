import xml.etree.ElementTree as ET

from mi_plateau.reproduce import RECIPES, plan
from mi_plateau.svgplot import line_plot

from conftest import run_cli


def test_core_recipe_plan_names_the_paper_runs(tmp_path):
    runs = plan("core", tmp_path)
    assert [(c.task.K, c.task.data_seed) for _, c in runs] == RECIPES["core"]
    assert all(c.task.n_b == 1000 and c.model.d_model == 128 and c.train.lr == 1e-3 for _, c in runs)
    assert runs[1][0].name == "paper_K10_nb1000_s0"
    p = run_cli("reproduce", "core", "--dry-run")
    assert p.returncode == 0 and p.stdout.count("K=") == 8


def test_svg_plot_is_valid_and_escapes_labels():
    svg = line_plot([{"x": [0, 1, 2], "y": [2.3, 2.3, 0.1], "label": "K=10 <b>"}], title="t & t", xlabel="step", ylabel="Lc",
                    hlines=[{"y": 2.302}], vlines=[1.0])
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "<b>" not in svg and "&lt;b&gt;" in svg


def test_recipe_resumes_a_started_run_only_if_it_is_the_recipes(tmp_path):
    """A started run continues with its stored config; the step implementation may differ
    (older runs trained with the bridge), anything else is refused with the difference named."""
    import json

    import pytest

    from mi_plateau.checkpoints import RunError
    from mi_plateau.config import with_overrides
    from mi_plateau.reproduce import _check_recipe_config

    path, cfg = plan("core", tmp_path)[0]
    path.mkdir(parents=True)
    (path / "config.json").write_text(with_overrides(cfg, {"impl": "bridge"}).to_json())
    _check_recipe_config(path, cfg)
    (path / "config.json").write_text(with_overrides(cfg, {"lr": 3e-3}).to_json())
    with pytest.raises(RunError, match="train.lr"):
        _check_recipe_config(path, cfg)
    assert json.loads((path / "config.json").read_text())["train"]["lr"] == 3e-3  # nothing touched
