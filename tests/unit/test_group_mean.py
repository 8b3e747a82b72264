"""Group-mean ablation (``interventions.group_mean``) against known answers; that its packed twin
equals its hook is ``test_interventions``'s parametrised test, as for every registered one."""

import pytest
import torch

from mi_plateau.interventions import head_ablation_named
from mi_plateau.model.forward import Weights
from mi_plateau.passes.per_checkpoint import checkpoint_passes


@pytest.fixture(scope="module")
def setup(perturbed_tiny):
    _, model, ev = perturbed_tiny({}, seed=0, scale=0.3)  # random, not tiny init: make heads matter
    return model, ev


def test_the_hook_keeps_the_shared_prefix_and_the_groups_mean(setup):
    """Before the selector a group's rows share their prefix, so the head's output there is the
    group's own and stays; from the selector on, every row of a group gets the same value, the
    group's mean, which the ablation leaves unchanged."""
    model, ev = setup
    K, first_sel = ev.task.cfg.K, ev.task.layout.selector_positions[0]
    iv = head_ablation_named("group_mean")
    with torch.no_grad():
        _, cache = model.run_with_cache(ev.tokens, names_filter=iv.hook_name(1))
    z = cache[iv.hook_name(1)]
    group = torch.arange(len(ev.tokens)) // K
    out = iv.hook(z.clone(), None, head=0, ctx=iv.context(z, K), group=group)
    assert torch.allclose(out[:, :first_sel], z[:, :first_sel], atol=1e-6)
    assert torch.equal(out[:, :, 1], z[:, :, 1])  # the other head untouched
    per_group = out[:, first_sel:, 0].unflatten(0, (-1, K))
    assert torch.equal(per_group, per_group[:, :1].expand_as(per_group))
    assert torch.allclose(per_group.mean(1), z[:, first_sel:, 0].unflatten(0, (-1, K)).mean(1), atol=1e-6)
    assert (z[:, first_sel:, 0] - out[:, first_sel:, 0]).abs().max() > 1e-2  # the selectors did differ


def test_a_head_that_writes_a_constant_loses_nothing(setup, tiny_cfg):
    """With its W_V zeroed, head 0 of layer 0 writes b_V at every position, its own group mean:
    group-mean ablation changes no loss; zero ablation (b_V removed) does."""
    model, ev = setup
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    E = tiny_cfg.model.d_head
    sd["blocks.0.attn.v.weight"][:E] = 0.0
    m = tiny_cfg.model
    W = Weights.from_state_dict(sd, m.n_layers, m.n_heads, m.d_head)
    by = {name: checkpoint_passes(W, ev, head_ablation=name)["heads"] for name in ("group_mean", "zero")}
    head = lambda rows: next(r for r in rows if r["head"] == "L0H0")  # noqa: E731
    assert all(abs(head(by["group_mean"])[k]) < 1e-5 for k in ("dL", "dLc", "dL1", "swap_contrib"))
    assert abs(head(by["zero"])["dL"]) > 1e-3
