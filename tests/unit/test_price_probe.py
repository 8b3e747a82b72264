"""The dry run's prices: a short timed probe of a run's own configuration, cached per shape."""

from dataclasses import replace

import pytest
import torch

import mi_plateau.devices as devices
import mi_plateau.reproduce.price_probe as price_probe
from mi_plateau.reproduce.price_probe import CACHE, evaluations, prober, run_seconds
from mi_plateau.sweeps import RunOptions


def test_the_probe_times_a_step_and_an_evaluation_and_caches_them_per_shape(tmp_path, tiny_cfg, monkeypatch):
    price = prober(tmp_path)
    first = price(tiny_cfg)
    assert first["s_step"] > 0 and first["s_eval"] > 0 and (tmp_path / CACHE).exists()
    monkeypatch.setattr(price_probe, "probe", lambda cfg, device: pytest.fail("probed a cached shape again"))
    assert prober(tmp_path)(replace(tiny_cfg, task=replace(tiny_cfg.task, data_seed=7))) == first  # same shape
    monkeypatch.setattr(price_probe, "probe", lambda cfg, device: {"s_step": 1.0, "s_eval": 2.0})
    other = replace(tiny_cfg, train=replace(tiny_cfg.train, batch_size=tiny_cfg.train.batch_size * 2))
    assert prober(tmp_path)(other) == {"s_step": 1.0, "s_eval": 2.0}  # another shape: probed


def test_evaluations_and_seconds_follow_the_checkpoint_schedule(tiny_cfg):
    cfg = replace(tiny_cfg, train=replace(tiny_cfg.train, ckpt_every=50, ckpt_every_transition=25, tau_margin=1.2))
    # 1,200 steps: tau 1,000; 24 evaluations every 50 steps and 20 more in the transition's tau
    assert evaluations(cfg, 1200) == pytest.approx(44.0)
    assert run_seconds(cfg, {"s_step": 0.1, "s_eval": 2.0}, 1200) == pytest.approx(1200 * 0.1 + 44 * 2.0)


def test_the_dry_run_prices_each_run_by_its_probe(tmp_path, monkeypatch):
    import mi_plateau.reproduce.cost as cost

    seen = []

    def fake(root, device):
        def price(cfg):
            seen.append(cfg.task.K)
            return {"s_step": 0.01 * cfg.task.K, "s_eval": 1.0}

        return price

    monkeypatch.setattr(cost, "prober", fake)
    rows = cost.dry_run("k_sweep", RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs"))
    sweep = cost.recipe_sweep("k_sweep")
    for r, p in zip(rows, sweep.points):
        price = {"s_step": 0.01 * p.cfg.task.K, "s_eval": 1.0}
        assert r["priced_from"] == "probe"
        assert r["est_core_min"] == pytest.approx(run_seconds(p.cfg, price, r["expected_steps"]) / 60, rel=1e-3)
    assert sorted(set(seen)) == sorted({p.cfg.task.K for p in sweep.points})  # one probe per shape


def test_a_precision_the_device_cannot_run_is_refused_before_probing(tiny_cfg, monkeypatch):
    monkeypatch.setattr(devices, "bf16_supported", lambda device: False)
    with pytest.raises(devices.DeviceError, match="no fast bf16"):
        price_probe.probe(replace(tiny_cfg, train=replace(tiny_cfg.train, precision="bf16")))
    assert torch.get_num_threads() >= 1


def test_a_gpu_run_scores_every_group_live_only_where_a_full_scoring_is_cheap(tiny_cfg):
    """``live_groups_for``: the default live subset becomes every group (0) on a CUDA device where
    the measured full scoring is at most 5% of the steps between checkpoints; a CPU never probes,
    and a value the user chose is kept."""
    from mi_plateau.config import EvalConfig
    from mi_plateau.train.timing import FULL_SHARE, full_scoring_share, live_groups_for

    cfg = replace(tiny_cfg, eval=replace(tiny_cfg.eval, live_groups=EvalConfig.live_groups))
    gpu, cpu = torch.device("cuda"), torch.device("cpu")
    never = lambda c, d: pytest.fail("probed")  # noqa: E731
    assert live_groups_for(cfg, cpu, never) == EvalConfig.live_groups
    assert live_groups_for(cfg, gpu, lambda c, d: FULL_SHARE) == 0
    assert live_groups_for(cfg, gpu, lambda c, d: FULL_SHARE * 1.01) == EvalConfig.live_groups
    chosen = replace(cfg, eval=replace(cfg.eval, live_groups=7))
    assert live_groups_for(chosen, gpu, never) == 7
    # the measurement itself, on this CPU: a positive share, full scoring over ckpt_every steps
    assert full_scoring_share(cfg, cpu) > 0
