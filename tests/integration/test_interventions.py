"""Every registered intervention (``mi_plateau.interventions``) run both ways: with its
TransformerLens hooks, the definition (``bench.reference.loop_passes``: ``run_with_hooks`` per
head or layer on the bridge), and with its packed fast twin (``passes.per_checkpoint``), on three
task layouts whose sequences share different prefixes. A new intervention is in the
parametrisation as soon as it is registered."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mi_plateau.bench.reference import loop_passes
from mi_plateau.interventions import INTERVENTIONS, HeadAblation, ResidPatch, register
from mi_plateau.model.forward import Weights
from mi_plateau.passes.per_checkpoint import checkpoint_passes

# backward with len_z 2 (the group's B and the selectors' first characters shared), len_z 1, az_b
LAYOUTS = {"backward": {}, "len_z_1": {"len_z": 1, "K": 6}, "az_b": {"direction": "az_b"}}
HEAD_COLUMNS = ("dL", "dLc", "dL1", "swap_contrib")
TOL = 1e-4
REFERENCE = Path(__file__).resolve().parents[2] / "analyses" / "intervention_reference.py"


@pytest.fixture(scope="module", params=list(LAYOUTS))
def layout(request, perturbed_tiny):
    """A tiny model with random weights (large enough that every head matters), its evaluation
    set, and a memo of both ways' results per head ablation."""
    cfg, model, ev = perturbed_tiny(LAYOUTS[request.param], seed=3, scale=0.6)
    m = cfg.model
    W = Weights.from_state_dict(model.state_dict(), m.n_layers, m.n_heads, m.d_head)
    return {"model": model, "W": W, "ev": ev, "runs": {}}


def both_ways(layout, head_ablation: str = "zero") -> tuple[dict, dict]:
    """(packed passes, TransformerLens loop) with the head ablation ``head_ablation``, once."""
    if head_ablation not in layout["runs"]:
        out = checkpoint_passes(layout["W"], layout["ev"], chunk=40, head_ablation=head_ablation)
        ref = loop_passes(layout["model"], layout["ev"], batch=50, head_ablation=head_ablation)
        layout["runs"][head_ablation] = (out, ref)
    return layout["runs"][head_ablation]


@pytest.mark.parametrize("name", list(INTERVENTIONS))
def test_the_fast_twin_equals_the_hooks(name, layout):
    """The packed twin gives the numbers the hooks give: every head's dL, dLc, dL1 and
    swap_contrib under a head ablation; every layer's patch_frac at a patch's hook."""
    iv = INTERVENTIONS[name]
    if isinstance(iv, HeadAblation):
        out, ref = both_ways(layout, name)
        got = {(r["layer"], r["head_index"], k): r[k] for r in out["heads"] for k in HEAD_COLUMNS}
        want = {(l, h, k): ref[k][l][h] for l, h, k in got}
        assert max(abs(v) for (_, _, k), v in want.items() if k == "dLc") > 1e-3  # the ablation does something
    else:
        out, ref = both_ways(layout)
        ck = out["checkpoint"][0]
        if ck["ld_swap"] == ck["ld_clean"]:  # az_b: the first target token does not depend on z
            pytest.skip("the selector swap moves no logit difference: no fraction to compare")
        got = {r["layer"]: r["patch_frac"] for r in out["patching"] if r["hook"] == name}
        want = {l: ref["patch_frac"][name][l] for l in got}
        assert len(got) == layout["W"].n_layers
    assert max(abs(got[k] - want[k]) for k in got) < TOL, name


def test_a_registered_name_is_refused_twice():
    with pytest.raises(ValueError, match="registered already"):
        register(INTERVENTIONS["zero"])


def test_the_kinds_restart_where_their_hook_is():
    """Each patch's twin restarts at a layer of the model, or nowhere past the last one."""
    for iv in INTERVENTIONS.values():
        if isinstance(iv, ResidPatch):
            assert all(iv.restart(l, 4) in (*range(4), None) for l in range(4)), iv.name


def test_the_intervention_reference_is_current():
    """docs/interventions.md is what the registry says now (``python analyses/intervention_reference.py``)."""
    spec = importlib.util.spec_from_file_location("intervention_reference", REFERENCE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    stale = "docs/interventions.md is stale: run python analyses/intervention_reference.py"
    assert mod.OUT.read_text() == mod.reference(), stale
