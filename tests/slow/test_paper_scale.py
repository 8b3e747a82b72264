"""Paper-scale checks: minutes on a laptop CPU. Run with `pytest -m slow`."""

import pytest

pytestmark = pytest.mark.slow


def test_paper_configuration_plateaus_at_log_K_and_transitions(tmp_path):
    from mi_plateau.config import preset
    from mi_plateau.summaries import summarize
    from mi_plateau.train import train

    cfg = preset("paper")
    run = train(cfg, tmp_path / "paper_K10", progress=True)
    s = summarize(cfg, run.records())
    assert 0.98 <= s["plateau_ratio"] <= 1.05
    assert s["tau"] is not None and 900 <= s["tau"] <= 4000  # the paper reports 1850
