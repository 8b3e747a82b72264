import hashlib
import json

import numpy as np
import pytest
import torch

from mi_plateau.checkpoints import RunError
from mi_plateau.config import AnalysisConfig, preset
from mi_plateau.metrics import example_correct, group_accuracy
from mi_plateau.model.forward import Weights, block, forward, run_cached
from mi_plateau.passes.curves import half_rise_step
from mi_plateau.passes.per_checkpoint import checkpoint_passes
from mi_plateau.passes.table6_9 import phase_steps, table6, table9
from mi_plateau.task import make_eval_set, make_task


@pytest.fixture(scope="module")
def setup(perturbed_tiny):
    cfg, model, ev = perturbed_tiny({}, seed=0, scale=0.3)  # random, not tiny init: make heads matter
    m = cfg.model
    W = Weights.from_state_dict(model.state_dict(), m.n_layers, m.n_heads, m.d_head)
    return model, W, ev


def test_functional_forward_matches_bridge(setup):
    model, W, ev = setup
    with torch.no_grad():
        ref = model(ev.tokens)
    logits, resid, pats, zs = run_cached(W, ev.tokens)
    assert torch.allclose(logits, ref, atol=1e-4)
    _, cache = model.run_with_cache(ev.tokens[:8])
    assert torch.allclose(resid[1][:8], cache["blocks.0.hook_resid_post"], atol=1e-5)
    assert torch.allclose(pats[1][:8], cache["blocks.1.attn.hook_pattern"], atol=1e-5)
    # the last block at the read positions only gives the same logits as the full forward
    fp = ev.task.layout.first_pred
    assert torch.allclose(forward(W, ev.tokens, fp), logits[:, fp:], atol=1e-4)


def test_batched_ablation_matches_transformer_lens_hooks(setup, tiny_cfg):
    """dLc of every head equals a run_with_hooks forward that zeroes that head's hook_z."""
    from mi_plateau.metrics import candidate_losses

    model, W, ev = setup
    out = checkpoint_passes(W, ev)
    fp = ev.task.layout.first_pred
    with torch.no_grad():
        clean = candidate_losses(model(ev.tokens)[:, fp], ev.candidates, ev.cand_index)[0].mean()
        for r in out["heads"]:
            l, h = r["layer"], r["head_index"]

            def zero(z, hook, h=h):
                z[:, :, h] = 0.0
                return z

            lg = model.run_with_hooks(ev.tokens, fwd_hooks=[(f"blocks.{l}.attn.hook_z", zero)])
            abl = candidate_losses(lg[:, fp], ev.candidates, ev.cand_index)[0].mean()
            assert r["dLc"] == pytest.approx((abl - clean).item(), abs=1e-4)


def test_mean_ablation_matches_hooks(setup):
    from mi_plateau.metrics import candidate_losses

    model, W, ev = setup
    out = checkpoint_passes(W, ev, head_ablation="mean")
    fp = ev.task.layout.first_pred
    _, cache = model.run_with_cache(ev.tokens)
    r = next(r for r in out["heads"] if r["head"] == "L1H0")
    mean_z = cache["blocks.1.attn.hook_z"][:, :, 0].mean(0)  # [pos, d_head]

    def fill(z, hook):
        z[:, :, 0] = mean_z
        return z

    with torch.no_grad():
        clean = candidate_losses(model(ev.tokens)[:, fp], ev.candidates, ev.cand_index)[0].mean()
        lg = model.run_with_hooks(ev.tokens, fwd_hooks=[("blocks.1.attn.hook_z", fill)])
    abl = candidate_losses(lg[:, fp], ev.candidates, ev.cand_index)[0].mean()
    assert r["dLc"] == pytest.approx((abl - clean).item(), abs=1e-4)


def test_ablating_a_head_with_zero_output_changes_nothing(setup):
    model, W, ev = setup
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    sd["blocks.0.attn.o.weight"][:, 16:32] = 0  # head 1 of layer 0 writes nothing (d_head 16)
    m = preset("tiny").model
    W0 = Weights.from_state_dict(sd, m.n_layers, m.n_heads, m.d_head)
    out = checkpoint_passes(W0, ev)
    r = next(r for r in out["heads"] if r["head"] == "L0H1")
    assert abs(r["dLc"]) < 1e-6 and abs(r["dL1"]) < 1e-6 and abs(r["swap_contrib"]) < 1e-6
    assert any(abs(x["dLc"]) > 1e-3 for x in out["heads"] if x["head"] != "L0H1")


def test_ablation_removes_exactly_the_heads_contribution(setup):
    """With the MLP silenced, a block adds b_O and every head's z_h @ W_O[h] to the residual:
    the decomposition head ablation restarts from (clean mid-point minus z_h W_O[h])."""
    model, W, ev = setup
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    for k in ("blocks.0.mlp.in.weight", "blocks.0.mlp.in.bias", "blocks.0.mlp.out.weight", "blocks.0.mlp.out.bias"):
        sd[k].zero_()
    m = preset("tiny").model
    W0 = Weights.from_state_dict(sd, m.n_layers, m.n_heads, m.d_head)
    x = W0.W_E[ev.tokens[:16]] + W0.W_pos[:16]
    out, _, z = block(W0, 0, x, want_pattern=True)
    b = W0.blocks[0]
    heads = torch.einsum("bhpe,hed->hbpd", z, b["W_O"])
    assert torch.allclose(out, x + b["b_O"] + heads.sum(0), atol=1e-5)
    assert heads[1].abs().max() > 1e-2  # the removed head really writes something


def test_z_blind_model_has_zero_swap_gap_and_no_routing(setup):
    model, W, ev = setup
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    for l in range(2):
        sd[f"blocks.{l}.attn.o.weight"].zero_()  # no position reads another: blind to z
    m = preset("tiny").model
    out = checkpoint_passes(Weights.from_state_dict(sd, m.n_layers, m.n_heads, m.d_head), ev)
    assert out["checkpoint"][0]["swap_gap"] == pytest.approx(0.0, abs=1e-6)
    assert all(abs(r["swap_contrib"]) < 1e-6 for r in out["heads"])


def test_patching_layer0_moves_everything(setup):
    """Patching the embeddings at the selector positions is the swapped input: fraction 1."""
    _, W, ev = setup
    out = checkpoint_passes(W, ev)
    p = {(r["hook"], r["layer"]): r["patch_frac"] for r in out["patching"]}
    assert p[("resid_pre", 0)] == pytest.approx(1.0, abs=1e-4)
    # resid_post of layer l is resid_pre of layer l + 1; after the last layer nothing reaches fp
    L = W.n_layers
    assert all(p[("resid_post", l)] == p[("resid_pre", l + 1)] for l in range(L - 1))
    assert p[("resid_post", L - 1)] == 0.0


def test_oracle_scores_100_percent_per_group(tiny_cfg):
    ev = make_eval_set(make_task(tiny_cfg.task), tiny_cfg.eval)
    lay = ev.task.layout
    logits = torch.nn.functional.one_hot(ev.tokens.roll(-1, dims=1), 40).float() * 10
    correct = example_correct(logits, ev.tokens, lay)
    acc = group_accuracy(correct, tiny_cfg.task.K)
    assert correct.all() and np.all(acc == 1.0) and len(acc) == ev.n_groups
    wrong = logits.clone()
    wrong[0, lay.target_start + 1] = 0  # one token of one example of the first group
    acc = group_accuracy(example_correct(wrong, ev.tokens, lay), tiny_cfg.task.K)
    assert acc[0] == pytest.approx(0.75) and np.all(acc[1:] == 1.0)


def test_phase_selection_on_synthetic_run():
    """Each family reads its own tau and its own columns; the paper family's accuracy exists
    only at the checkpoints that had the sequence scoring."""
    steps = list(range(0, 4001, 50))
    assert phase_steps(steps, 1850) == {"Pre": 450, "Mid": 1850, "Post": 3700}  # 0.25*1850=462.5
    nan = float("nan")
    ck = [
        {
            "step": s,
            "groups_ge80": s / 4000,
            "groups_100": 0.0,
            "acc_mean": 0.5,
            "cand_acc": 0.7 if s % 100 == 0 else nan,
            "cand_groups_ge80": 0.3,
            "cand_groups_100": 0.1,
        }
        for s in steps
    ]
    t6 = table6("r", 10, {"paper": 1700, "first_token": 1800}, ck)
    assert list(t6["definition"]) == ["paper"] * 4 + ["first_token"] * 4
    paper, first = t6[t6.definition == "paper"], t6[t6.definition == "first_token"]
    assert list(paper["step"]) == [400, 800, 1700, 2500]  # 425 -> 400 and 2550 -> 2500 (ties go to the earlier step)
    assert list(first["step"]) == [450, 900, 1800, 2700]
    assert first.iloc[2]["paper_ge80_pct"] == 31.5  # nearest paper row in fraction of tau (0.97)
    assert paper.iloc[0]["mean_acc"] == 0.7 and first.iloc[0]["ge80_pct"] == pytest.approx(100 * 450 / 4000)
    heads = [
        {"step": s, "head": f"L0H{h}", "dLc": h * s / 1000, "dL": (3 - h) * s / 1000, "dL1": 0.0}
        for s in (450, 1800, 3600)
        for h in range(4)
    ]
    t9 = table9("r", 10, {"paper": 1800, "first_token": 1800}, heads)
    pre = t9[t9.phase == "Pre"]
    assert list(pre[pre.definition == "first_token"]["head"][:2]) == ["L0H3", "L0H2"]  # ranked by Delta Lc
    assert list(pre[pre.definition == "paper"]["head"][:2]) == ["L0H0", "L0H1"]  # ranked by Delta L
    assert set(t9[t9.phase == "Post"]["step"]) == {3600}  # 2 tau
    assert t9.iloc[0]["paper_head"] == "L0H3"


def test_half_rise():
    assert half_rise_step([0, 100, 200, 300], [0.0, 0.2, 0.6, 1.0]) == 200
    assert half_rise_step([0, 100], [1.0, 0.5]) is None


def test_analyze_inspect_ablate_on_a_trained_run(tiny_run, tmp_path):
    from mi_plateau.api import ablation_report, analyze, inspect

    res = analyze([tiny_run], tmp_path, progress=False, pass_config=AnalysisConfig(max_checkpoints=6))
    folder = tmp_path / tiny_run.name
    for f in (
        "table6.md",
        "table6.csv",
        "table6.json",
        "table9.md",
        "table9.csv",
        "table9.json",
        "figure3.html",
        "routing.json",
    ):
        assert (folder / f).exists(), f
    import pandas as pd

    t6 = pd.read_json(folder / "table6.json")  # the file is the table itself
    assert set(t6["definition"]) == {"paper", "first_token"}
    for fam, rows in t6.groupby("definition"):
        assert len(rows) == 4 and rows["mean_acc"].iloc[-1] > rows["mean_acc"].iloc[0], fam
    t9 = pd.read_json(folder / "table9.json")
    assert set(t9["phase"]) == {"Pre", "Mid", "Post"} and set(t9["definition"]) == {"paper", "first_token"}
    assert t9["dL"].notna().all()
    ro = res["runs"][tiny_run.name]["routing"]
    assert ro["routing_head"] is not None
    # passes agree with the training-time metrics at every checkpoint
    rows = json.loads((folder / "pass_checkpoint.json").read_text())
    recs = {r["step"]: r["metrics"] for r in tiny_run.records()}
    for r in rows:
        assert r["Lc"] == pytest.approx(recs[r["step"]]["Lc"], abs=1e-4)
        assert r["swap_gap"] == pytest.approx(recs[r["step"]]["swap_gap"], abs=1e-4)
        assert r["acc_mean"] == pytest.approx(recs[r["step"]]["acc_mean"], abs=1e-6)
        if r["L_seq"] is not None:  # the paper family, at the checkpoints that had the per-head passes
            assert r["L_seq"] == pytest.approx(recs[r["step"]]["L_seq"], abs=1e-4)
            assert r["cand_acc"] == pytest.approx(recs[r["step"]]["cand_acc"], abs=1e-6)
    assert sum(r["L_seq"] is not None for r in rows) >= 4
    # figure3.json: the paper's panels (the lead from these pass rows, the displacement cosine
    # from the weights on the Delta = 200 grid) and our variants
    from mi_plateau.passes.descent import coherent_descent
    from mi_plateau.passes.lead import z_onsets

    f3 = json.loads((folder / "figure3.json").read_text())
    assert set(f3) == {"paper", "ours"} and set(f3["ours"]) == {"paper", "first_token"}
    assert f3["paper"]["onsets"] == z_onsets(rows, tiny_run.config().task.K)
    assert res["runs"][tiny_run.name]["figure3_onsets"] == f3["paper"]["onsets"]
    assert json.loads((folder / "figure3_a.json").read_text()) == f3["paper"]["a"]  # the series as a table too
    try:
        b = coherent_descent(tiny_run, 200)
    except RunError as e:  # the tiny run's checkpoints may not cover the grid: said in one line
        assert f3["paper"]["b"] == [] and f3["paper"]["b_error"] == str(e) and "\n" not in str(e)
    else:
        assert [r["step"] for r in f3["paper"]["b"]] == list(b["step"]) and f3["paper"]["b_error"] is None
        assert [r["cos"] for r in f3["paper"]["b"][1:]] == pytest.approx(list(b["cos"][1:]))
    b = coherent_descent(tiny_run, 20)  # the tiny run's own spacing: every grid step is a checkpoint
    assert len(b) >= 2 and b["cos"].iloc[1:].between(-1, 1).all()
    # second call reuses the cache and gives the same numbers
    again = analyze([tiny_run], tmp_path, progress=False, pass_config=AnalysisConfig(max_checkpoints=6))
    assert again["runs"][tiny_run.name]["routing"] == ro
    last = tiny_run.steps()[-1]
    ins = inspect(tiny_run, last, head="L0H0")
    assert ins["step"] == last and len(ins["heads"]) == 4 and len(ins["pattern"]["examples"]) == 3
    # Table 9's intervals: per-group deltas average to the head's Delta L; the interval and the
    # top share come from them
    import pandas as pd

    t9 = pd.read_json(folder / "table9.json")
    paper = t9[t9.definition == "paper"]
    assert len(paper) and (paper["dL_lo"] <= paper["dL"] + 1e-9).all() and (paper["dL"] <= paper["dL_hi"] + 1e-9).all()
    assert paper.groupby("phase")["top_share"].sum().le(1 + 1e-9).all()
    from mi_plateau.passes.analyze import PassConfig, analyze_run

    tabs = analyze_run(tiny_run, tmp_path, PassConfig(max_checkpoints=6), progress=False)
    hg, heads = tabs["head_groups"], tabs["heads"]
    mean_by = hg.groupby(["step", "head"])[["dL", "sel_attn", "swap_contrib"]].mean()
    for _, r in heads[heads["dL"].notna()].iterrows():
        m = mean_by.loc[(r["step"], r["head"])]
        assert m["dL"] == pytest.approx(r["dL"], abs=1e-5) and m["swap_contrib"] == pytest.approx(
            r["swap_contrib"], abs=1e-5
        )
    for _, r in heads.iterrows():  # selector attention per group at every checkpoint
        assert mean_by.loc[(r["step"], r["head"]), "sel_attn"] == pytest.approx(r["sel_attn"], abs=1e-5)
    # per-group swap gaps average to the checkpoint's; its interval holds it
    gap_by = tabs["groups"].groupby("step")["swap_gap"].mean()
    ck = tabs["checkpoint"].set_index("step")
    assert (gap_by - ck["swap_gap"]).abs().max() < 1e-5
    assert (ck["swap_gap_lo"] <= ck["swap_gap"] + 1e-9).all() and (ck["swap_gap"] <= ck["swap_gap_hi"] + 1e-9).all()
    assert ck["swap_gap_seq_lo"].notna().sum() >= 4
    # the leads' intervals (bootstrap over groups of the heads' score curves)
    for key in ("routing_lead_sel_attn", "swap_gap_0.1_frac_tau"):
        if ro.get(key) is not None and ro.get(f"{key}_lo") is not None:
            assert ro[f"{key}_lo"] <= ro[f"{key}_hi"]
    assert any(k.endswith("_lo") for k in ro)
    assert (
        ins["checkpoint"]["swap_gap_lo"]
        <= ins["checkpoint"]["swap_gap"] + 1e-9
        <= ins["checkpoint"]["swap_gap_hi"] + 2e-9
    )
    ab = ablation_report(tiny_run, last)
    assert [r["head"] for r in ab["heads"]] == [r["head"] for r in ins["heads"]] == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert [r["dL"] for r in ab["heads"]] == pytest.approx([r["dL"] for r in ins["heads"]])  # same ablation
    assert all(r["dL_lo"] <= r["dL"] + 1e-9 <= r["dL_hi"] + 2e-9 for r in ab["heads"])
    assert sum(r["top_share"] for r in ab["heads"]) == pytest.approx(1.0)


def test_analysis_does_not_depend_on_the_cache_history(tiny_run, tmp_path):
    """Checkpoints that had per-head passes under an earlier grid (an earlier tau, a larger
    --max-checkpoints) contribute only their cheap rows later: same tables as a fresh folder."""
    from mi_plateau.passes.analyze import PassConfig, analyze_run

    analyze_run(tiny_run, tmp_path / "a", PassConfig(max_checkpoints=8), progress=False)
    reused = analyze_run(tiny_run, tmp_path / "a", PassConfig(max_checkpoints=3), progress=False)
    fresh = analyze_run(tiny_run, tmp_path / "b", PassConfig(max_checkpoints=3), progress=False)
    for k in fresh:
        assert reused[k].equals(fresh[k]), k
    assert (
        fresh["patching"]["step"].nunique()
        < analyze_run(tiny_run, tmp_path / "a", PassConfig(max_checkpoints=8), progress=False)["patching"][
            "step"
        ].nunique()
    )


def _v4_key(pc) -> str:
    """The pass settings' key as the hand-numbered version 4 wrote it."""
    d = {"shifts": list(pc.shifts), "mean": pc.head_ablation == "mean", "min_gap": pc.min_gap, "v": 4}
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]


def test_a_declared_head_score_is_a_column_and_a_new_cache_key(setup):
    """One declaration in passes.head_scores: a column of the head rows at every checkpoint
    (NaN-free where it reads no ablation), of inspect's table with its legend, and a pass cache
    key of its own."""
    from mi_plateau.commands.text import head_columns, legend_line
    from mi_plateau.passes.analyze import PassConfig
    from mi_plateau.passes.head_scores import HEAD_SCORES, head_score

    _, W, ev = setup
    before = PassConfig().key()
    assert before != _v4_key(PassConfig())

    @head_score(ablation=False, legend="mean |selector attention - baseline|")
    def toy(at):
        return at.run.sel_attn.abs().mean(0)

    try:
        with pytest.raises(ValueError, match="registered already"):
            head_score(ablation=False, legend="again")(toy)
        assert PassConfig().key() != before
        for ablation in (True, False):
            out = checkpoint_passes(W, ev, ablation=ablation)
            assert list(out["heads"][0])[-1] == "toy" and "toy" not in out["head_groups"][0]
            for r in out["heads"]:
                assert r["toy"] >= abs(r["sel_attn"]) - 1e-6  # mean |x| >= |mean x|
        # a column of inspect's head table, with its legend line; not of ablate's (it reads no ablation)
        assert head_columns()[-1] == "toy" and "toy" not in head_columns(ablation_only=True, top_share=True)
        assert legend_line("toy") == "toy = mean |selector attention - baseline|"
    finally:
        HEAD_SCORES.pop("toy")
    assert PassConfig().key() == before


def test_a_cache_of_the_hand_numbered_version_is_recomputed(tiny_run, tmp_path):
    """A checkpoint cached under the version-4 key (same settings, same weights) is a miss:
    computed again and rewritten, never read."""
    from mi_plateau.passes.analyze import PassConfig, analyze_run

    pc, last = PassConfig(n_boot=0), tiny_run.steps()[-1]
    fresh = analyze_run(tiny_run, tmp_path, pc, steps=[last], progress=False)
    f = tmp_path / "passes" / f"step_{last:06d}.json"
    c = json.loads(f.read_text())
    key = c["key"]
    c["key"] = _v4_key(pc) + key[len(pc.key()) :]
    for r in c["tables"]["heads"]:
        r["sel_attn"] = 123.0
    f.write_text(json.dumps(c))
    again = analyze_run(tiny_run, tmp_path, pc, steps=[last], progress=False)
    assert again["heads"].equals(fresh["heads"]) and json.loads(f.read_text())["key"] == key


def test_cli_analysis_commands(run_cli, tiny_run, tmp_path):
    p = run_cli("ablate", str(tiny_run.path), "--step", "100")
    assert p.returncode == 0, p.stderr
    assert "L0H0" in p.stdout and "dLc" in p.stdout
    q = run_cli("inspect", str(tiny_run.path))  # --step defaults to the last checkpoint
    assert q.returncode == 0 and f"at step {tiny_run.steps()[-1]}" in q.stdout
    heads = lambda out: [ln.split()[0] for ln in out.splitlines() if ln[:1] == "L" and ln[1:2].isdigit()]  # noqa: E731
    assert heads(p.stdout) == heads(q.stdout) == ["L0H0", "L0H1", "L1H0", "L1H1"]  # one order
    assert p.stdout.count(" * ") + p.stdout.count("  *") >= 1 and "* = the head with the largest dL" in q.stdout
    assert len(set(p.stdout.splitlines())) == len(p.stdout.splitlines())  # no duplicated lines
    p = run_cli("inspect", str(tiny_run.path), "--step", "100", "--head", "L1H1", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["pattern"]["head"] == "L1H1"
    p = run_cli("inspect", str(tiny_run.path), "--step", "999999")
    assert p.returncode == 2 and "checkpoints exist from step 0 to" in p.stderr
    p = run_cli("inspect", str(tiny_run.path), "--step", "100", "--head", "L9H0")
    assert p.returncode == 2 and "layers 0..1" in p.stderr
    p = run_cli("analyze", str(tiny_run.path), "--out", str(tmp_path), "--max-checkpoints", "4", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "routing head" in p.stdout


@pytest.mark.parametrize("overrides", [{}, {"direction": "az_b"}, {"len_z": 1, "K": 6}])
def test_passes_equal_the_transformer_lens_loop(overrides, perturbed_tiny):
    """Every number of checkpoint_passes equals the plain TransformerLens loop (hooks per head,
    per input), whatever prefixes the task's sequences share (backward: the group's B and the
    selectors' first characters; az_b: the example's own A only)."""
    from mi_plateau.bench.reference import loop_passes, max_diff

    cfg, model, ev = perturbed_tiny(overrides, seed=3, scale=0.6)
    m = cfg.model
    W = Weights.from_state_dict(model.state_dict(), m.n_layers, m.n_heads, m.d_head)
    out, ref = checkpoint_passes(W, ev, chunk=40), loop_passes(model, ev, batch=50)
    assert abs(out["checkpoint"][0]["swap_gap"]) > 0.005 and max(abs(r["dLc"]) for r in out["heads"]) > 0.01
    assert max_diff(out, ref) < 1e-4


def test_llc_record_names_its_run_command_and_code(tiny_run, tmp_path):
    from mi_plateau.checkpoints.files import code_commit
    from mi_plateau.estimators.llc import _stamp

    out = tmp_path / "llc.json"
    doc = _stamp(tiny_run, out, ["--n", "2"], [{"step": 0, "llc": float("nan")}])
    assert json.loads(out.read_text()) == doc
    assert doc["commit"] == code_commit() and doc["run"] == str(tiny_run.path)
    assert doc["command"] == f"mi-plateau llc {tiny_run.path} --out {out} --n 2" and doc["rows"] == [
        {"step": 0, "llc": None}
    ]


def test_the_older_mean_keyword_still_asks_for_mean_ablation_with_a_warning(tiny_run):
    from mi_plateau.api import ablation_report

    with pytest.warns(DeprecationWarning, match='head_ablation="mean"'):
        old = ablation_report(tiny_run, step=100, n_boot=0, mean=True)
    new = ablation_report(tiny_run, step=100, n_boot=0, head_ablation="mean")
    assert old["mode"] == "mean" and old["heads"] == new["heads"]


def test_pass_configs_older_fields_still_set_the_fields_they_became_with_a_warning():
    from mi_plateau.passes.analyze import PassConfig

    with pytest.warns(DeprecationWarning, match=r"PassConfig\(max_checkpoints=\.\.\.\)"):
        old = PassConfig(max_head_checkpoints=7)
    with pytest.warns(DeprecationWarning, match=r"PassConfig\(head_ablation=\.\.\.\)"):
        mean, zero = PassConfig(mean_ablation=True), PassConfig(mean_ablation=False)
    assert old == PassConfig(max_checkpoints=7) and old.key() == PassConfig(max_checkpoints=7).key()
    assert (mean.head_ablation, zero.head_ablation) == ("mean", "zero")
    with pytest.raises(TypeError):
        PassConfig(max_head_checkpoint=7)  # any other keyword stays Python's TypeError


def test_an_older_pass_config_field_that_contradicts_the_new_one_is_refused():
    import inspect

    from mi_plateau.passes.analyze import PassConfig

    with pytest.raises(TypeError, match=r"max_head_checkpoints=\.\.\.\) contradicts max_checkpoints=5"):
        PassConfig(max_checkpoints=5, max_head_checkpoints=9)
    with pytest.raises(TypeError, match="contradicts head_ablation='group_mean'"):
        PassConfig(head_ablation="group_mean", mean_ablation=False)
    assert "max_checkpoints" in inspect.signature(PassConfig).parameters  # the dataclass's own signature
