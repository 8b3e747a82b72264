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
