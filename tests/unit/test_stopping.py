"""The stopping rules on hand-built records: converge, and tau on both families or one."""

import math

import pytest

from mi_plateau.config import ConfigError, preset, validate, with_overrides
from mi_plateau.train import should_stop

LOG5 = math.log(5)


def _records(L_seq, Lc, every=100):
    return [{"step": i * every, "metrics": {"L_seq": a, "Lc": b}} for i, (a, b) in enumerate(zip(L_seq, Lc))]


# L_seq crosses 0.5 log K at step 300, Lc at step 600
SEQ = [LOG5, LOG5, LOG5, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02]
LC = [LOG5, LOG5, LOG5, LOG5, 1.0, 0.9, 0.5, 0.1, 0.04]


def _cfg(**kw):
    return with_overrides(preset("tiny"), {"K": 5, "stop": "tau", **kw})


@pytest.mark.parametrize("tau_on, first_stop", [("paper", 400), ("first_token", 800), ("both", 800)])
def test_tau_rule_waits_for_the_named_families(tau_on, first_stop):
    cfg = _cfg(tau_on=tau_on, **{"train.tau_margin": 1.2})
    recs = _records(SEQ, LC)
    stops = [r["step"] for i, r in enumerate(recs) if should_stop(cfg, recs[: i + 1])]
    assert stops[0] == first_stop  # 1.2 x 300 -> 400 (the next record); 1.2 x 600 -> 800


def test_converge_rule_needs_margin_and_a_multiple_of_tau():
    cfg = with_overrides(
        preset("tiny"), {"K": 5, "train.converge_Lc": 0.05, "train.margin_steps": 0, "train.post_tau_frac": 1.0}
    )
    recs = _records(SEQ, LC)
    stops = [r["step"] for i, r in enumerate(recs) if should_stop(cfg, recs[: i + 1])]
    assert stops[0] == 800  # Lc < 0.05 first at 800


def test_tau_on_is_validated():
    with pytest.raises(ConfigError, match="train.tau_on='both!'"):
        validate(_cfg(tau_on="both!"))
    with pytest.raises(ConfigError, match="undefined for task.direction"):
        validate(with_overrides(preset("tiny"), {"direction": "forward", "tau_on": "paper"}))
