import json
import xml.etree.ElementTree as ET

import pytest

from mi_plateau.checkpoints import RunError
from mi_plateau.config import AnalysisConfig, run_name
from mi_plateau.reproduce.core import plan

CORE = [
    ("paper", 10, 0),
    ("paper", 20, 0),
    ("tl4", 10, 0),
    ("paper", 5, 0),
    ("paper", 10, 1),
    ("paper", 10, 2),
    ("paper", 20, 1),
    ("paper", 20, 2),
    ("paper", 36, 0),
]


def test_core_recipe_plan_names_the_paper_runs(run_cli, tmp_path):
    runs = plan("core", tmp_path)  # read from its sweep file, core.toml
    assert [(c.preset, c.task.K, c.task.data_seed) for _, c in runs] == CORE
    # each run sits where `mi-plateau train` puts it: directly under the root, named by run_name
    assert all(p == tmp_path / run_name(c) for p, c in runs)
    assert all(c.task.n_b == 1000 and c.model.d_model == 128 and c.train.lr == 1e-3 for _, c in runs)
    assert runs[0][0].name == "paper_K10_nb1000_s0" and runs[2][0].name == "tl4_K10_nb1000_s0"
    paper = runs[0][1]
    # the original code's K-sweep recipe; seeds vary data and order, the init seed stays 42
    assert (paper.train.warmup_steps, paper.train.batching, paper.model.init, paper.model.train_b_U) == (
        0,
        "epoch",
        "gpt2",
        True,
    )
    assert {c.model.init_seed for _, c in runs if c.preset == "paper"} == {42}
    p = run_cli("reproduce", "core", "--dry-run")
    assert p.returncode == 0 and p.stdout.count("| not started |") == len(CORE)


@pytest.mark.browser
def test_static_figures_are_exported_from_the_plotly_figures(tmp_path):
    """docs/ figures are the plotly figure definitions exported by kaleido (Chromium): a valid SVG
    that holds the run labels and the log K annotations."""
    from mi_plateau import figures
    from mi_plateau.outputs import write_figure

    curves = {
        f"K={K}": {"steps": [0, 50, 100], "L_seq": [2.4, 2.3, 0.1], "Lc": [2.4, 2.3, 0.2], "log_K": 2.302}
        for K in (5, 10)
    }
    path = write_figure(tmp_path / "f1.svg", figures.figure1(curves))
    svg = path.read_text()
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "K=10" in svg and "log 10" in svg


def test_recipe_resumes_a_started_run_only_if_it_is_the_recipes(tmp_path):
    """A started run continues with its stored config; the step implementation may differ
    (older runs trained with the bridge), anything else is refused with the difference named."""
    import json

    import pytest

    from mi_plateau.config import with_overrides
    from mi_plateau.reproduce.core import _check_recipe_config

    path, cfg = plan("core", tmp_path)[0]
    path.mkdir(parents=True)
    (path / "config.json").write_text(with_overrides(cfg, {"impl": "bridge"}).to_json())
    _check_recipe_config(path, cfg)
    (path / "config.json").write_text(with_overrides(cfg, {"lr": 3e-3}).to_json())
    with pytest.raises(RunError, match="train.lr"):
        _check_recipe_config(path, cfg)
    assert json.loads((path / "config.json").read_text())["train"]["lr"] == 3e-3  # nothing touched


@pytest.mark.browser
@pytest.mark.long  # static figure export through Chromium: CI's second step
def test_write_assets_builds_the_docs_tables_and_figures(tiny_run, tmp_path):
    """The recipe's docs assets from analysed runs: tables.md with both definitions, Figure 1 of
    the paper-preset runs and Figure 3 (exported SVG)."""
    import dataclasses

    from mi_plateau.api import analyze
    from mi_plateau.config import with_overrides
    from mi_plateau.reproduce.core import write_assets
    from mi_plateau.train import train

    other = train(with_overrides(tiny_run.config(), {"seed": 1}), tmp_path / "other", progress=False)
    res = analyze(
        [tiny_run, other],
        tmp_path / "an",
        progress=False,
        pass_config=AnalysisConfig(max_checkpoints=4),
        with_figure3=True,
    )
    runs = [(r.path, dataclasses.replace(r.config(), preset="paper")) for r in (tiny_run, other)]
    results = {
        "summaries": {n: r["summary"] for n, r in res["runs"].items()},
        "routing": {n: r["routing"] for n, r in res["runs"].items()},
        "comparison": res["comparison"],
        "figure3": {n: r["figure3"] for n, r in res["runs"].items()},
        "train_wall": {r.path.name: 1.0 for r in (tiny_run, other)},
    }
    written, note = write_assets(results, runs, tmp_path / "docs")
    assert note == ""
    assert {p.name for p in written} == {"figure1.svg", "figure3.svg", "tables.md", "tables.json"}
    md = (tmp_path / "docs" / "tables.md").read_text()
    assert "| paper |" in md and "| first_token |" in md and "tau_paper" in md
    twin = json.loads((tmp_path / "docs" / "tables.json").read_text())  # the same rows, for readers
    assert {r["run"] for r in twin["table3"]} == {tiny_run.path.name, other.path.name} and twin["table6"]
    assert ET.fromstring((tmp_path / "docs" / "figure3.svg").read_text()).tag.endswith("svg")


def test_core_rebuilds_its_tables_from_its_log_alone(tmp_path):
    """Without its run folders (another machine), ``reproduce core --no-train`` writes tables.md
    and tables.json from the committed log: the committed files, unchanged."""
    import shutil
    from pathlib import Path

    from mi_plateau.reproduce import RECIPES
    from mi_plateau.sweeps import RunOptions

    committed = Path(__file__).resolve().parents[2] / "docs" / "reproduction"
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(committed / "recipe_log.json", docs)
    log = RECIPES["core"].run(RunOptions(train=False, progress=False, root=tmp_path / "none", docs=docs))
    assert (docs / "tables.md").read_text() == (committed / "tables.md").read_text()
    assert json.loads((docs / "tables.json").read_text()) == json.loads((committed / "tables.json").read_text())
    assert "Table 6: collective transition" in log["tables"] and "need the run folders" in log["static_note"]
    (docs / "recipe_log.json").write_text("{}")  # a log without the tables: one line, nothing written
    (docs / "tables.md").unlink()
    with pytest.raises(RunError, match="holds no tables; run it without --no-train first"):
        RECIPES["core"].run(RunOptions(train=False, progress=False, root=tmp_path / "none", docs=docs))
    assert not (docs / "tables.md").exists()


def test_core_without_a_usable_run_names_the_damaged_ones_and_does_not_read_its_log(tmp_path):
    """A root where a core run was started but cannot be analysed is not "another machine": the
    rebuild from the log is refused, naming the run and its state."""
    import shutil
    from pathlib import Path

    from mi_plateau.reproduce import RECIPES
    from mi_plateau.reproduce.core import plan
    from mi_plateau.sweeps import RunOptions

    committed = Path(__file__).resolve().parents[2] / "docs" / "reproduction"
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(committed / "recipe_log.json", docs)
    damaged = plan("core", tmp_path / "root")[0][0]
    damaged.mkdir(parents=True)
    (damaged / "manifest.json").write_text("{ not json")
    with pytest.raises(RunError, match=f"no run of this recipe can be analysed: {damaged} \\(damaged\\)"):
        RECIPES["core"].run(RunOptions(train=False, progress=False, root=tmp_path / "root", docs=docs))
    assert not (docs / "tables.md").exists()
