"""Table 11's original z-gap: the training batches' first-token losses the trainer records
(each checked against the plain bridge), and Q over the window that gap opens and closes."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mi_plateau.checkpoints import Run
from mi_plateau.config import layout_for
from mi_plateau.config.presets import preset, with_overrides
from mi_plateau.settle import run_summary
from mi_plateau.summaries import dissipation
from mi_plateau.task import derangement, make_sampler, make_task
from mi_plateau.train import Member


def test_q_by_the_training_batch_gap_on_hand_built_records():
    log_K = math.log(10)
    # the original's gap: deranged last batch minus the window's mean clean loss
    pairs = [(None, None), (2.3, 2.3), (2.3, 2.5), (2.0, 3.0), (0.4, 2.9), (0.1, 3.0)]  # gaps 0, .2, 1, 2.5, 2.9
    recs = [
        {"step": 50 * i, "lr": 1e-3, "grad_norm_sq_mean": float(i), "metrics": {"swap_gap": 0.0},
         "train_first_loss": c, "train_first_loss_z_deranged": d}
        for i, (c, d) in enumerate(pairs)
    ]  # fmt: skip
    d = dissipation(recs, log_K, gap="train")
    assert (d["window_start"], d["window_end"]) == (100, 200)  # first > 0.1 nats, first > 0.9 log K (2.07)
    assert d["Q"] == pytest.approx(1e-3 * 50 * (2 + 3 + 4))  # both end blocks summed
    assert dissipation(recs, log_K)["Q"] is None  # our swap gap never opens a window here
    del recs[3]["train_first_loss"]  # a record written before the trainer kept it
    d = dissipation(recs, log_K, gap="train")
    assert d["Q"] is None and "without the training batches" in d["missing"]


def test_the_trainer_records_the_batch_losses_the_plain_bridge_gives(tmp_path):
    from mi_plateau.model import training_forward
    from mi_plateau.train import train_step

    cfg = with_overrides(preset("tiny"), {"max_steps": 40})
    m = Member(cfg, Run(tmp_path / "run"))
    lay = layout_for(cfg.task)
    fp = lay.first_pred
    batch = make_sampler(make_task(cfg.task), cfg.train.batching, cfg.train.batch_size, 5).sample()
    with torch.no_grad():  # the whole sequence through the bridge, before the step
        plain = F.cross_entropy(m.model(batch[:, :-1])[:, fp], batch[:, fp + 1]).item()
    _, _, first = train_step(cfg, training_forward(cfg, m.model), m.opt, batch, 0)
    assert first == pytest.approx(plain, abs=1e-5)  # the step's own logits, read before its update
    # the deranged side, at the weights after the step: every example shown another example's
    # selector (only the z positions change, each row's from another row), its own target
    m.last_batch = batch
    perm = derangement(len(batch), 7)
    z = lay.span("z")
    shown = batch.clone()
    shown[:, z.start : z.stop] = batch[perm, z.start : z.stop]
    other = [c for c in range(batch.shape[1]) if c not in z]
    assert torch.equal(shown[:, other], batch[:, other]) and (perm != np.arange(len(batch))).all()
    with torch.no_grad():
        want = F.cross_entropy(m.model(shown[:, : fp + 1])[:, fp], batch[:, fp + 1]).item()
    assert m._deranged_first_loss(7) == pytest.approx(want, abs=1e-5)
    assert abs(want - F.cross_entropy(m.model(batch[:, : fp + 1])[:, fp], batch[:, fp + 1]).item()) > 0


def test_a_trained_run_has_the_gap_at_every_checkpoint_but_the_first(tmp_path):
    from mi_plateau.train import train

    run = train(with_overrides(preset("tiny"), {"max_steps": 60}), tmp_path / "run", progress=False)
    recs = [c["record"] for c in run.manifest()["checkpoints"]]
    assert recs[0]["train_first_loss"] is None and recs[0]["train_first_loss_z_deranged"] is None
    for r in recs[1:]:
        assert math.isfinite(r["train_first_loss"]) and math.isfinite(r["train_first_loss_z_deranged"])
    want = dissipation(recs, run.config().task.log_K, gap="train")
    s = run_summary(run)
    assert "missing" not in want and "dissipation_train_missing" not in s
    assert [s[f"dissipation_train_{k}"] for k in ("Q", "window_start", "window_end")] == [
        want[k] for k in ("Q", "window_start", "window_end")
    ]
