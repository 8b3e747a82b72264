"""The paper's sweep recipes: every shipped recipe parses and validates; the builders turn a
tiny sweep's runs into tables whose numbers are the runs' own, and one page that renders."""

import math

import pandas as pd
import pytest
from conftest import fake_export, stub_svg

from mi_plateau.checkpoints import RunError
from mi_plateau.cli import RECIPE_NAMES
from mi_plateau.fits import power_law
from mi_plateau.report import sweep_report
from mi_plateau.reproduce import RECIPES, SWEEP_RECIPES
from mi_plateau.reproduce.boundary import build_lr_width, build_phase_boundary
from mi_plateau.reproduce.cost import dry_run
from mi_plateau.reproduce.records import collect
from mi_plateau.reproduce.scaling import build_batch_size, build_fixed_d, build_k_sweep
from mi_plateau.reproduce.seeds import build_seeds, compare_seed_stats, phase_boundary
from mi_plateau.reproduce.shipped import recipe_file, recipe_sweep
from mi_plateau.reproduce.writer import write_built
from mi_plateau.sweeps import RunOptions, load_sweep, run_sweep

TINY = """
name = "tiny_k"
preset = "tiny"
stop = "tau"
[overrides]
max_steps = 600
[[points]]
K = 3
[[points]]
K = 4
[[points]]
K = 5
[[points]]
K = 4
n_b = 36
"""


@pytest.fixture(autouse=True)
def _stub_static_export(monkeypatch):
    """The recipes' figures written by ``stub_svg``: these tests check which figures a recipe
    writes, not the browser (the ``browser`` tests do)."""
    fake_export(monkeypatch, stub_svg)


def built(builder, sweep, root, docs, n_boot, seed):
    """A builder's tables and figures from the runs under ``root``, written under ``docs`` as a
    recipe writes them (``records.collect`` -> builder -> ``writer.write_built``)."""
    out = builder(collect(sweep, root, docs), sweep, n_boot, seed)
    write_built(docs, out)
    return {"tables": out.rows(), "figures": out.figs()}


def test_a_sweep_file_with_a_recipe_table_is_a_recipe(tmp_path, monkeypatch):
    """A new sweep recipe is its file (with ``[recipe]``) and its builder: the registry reads the
    declaration from the shipped folder, in file-name order, and a file without one (core's run
    list) is no sweep recipe."""
    import mi_plateau.reproduce.registry as registry

    (tmp_path / "b_toy.toml").write_text(
        'name = "b_toy"\npreset = "tiny"\n[recipe]\nshows = "a toy"\nbuilder = "toy.build"\n'
        'reads = { other = "a_toy" }\n[grid]\nK = [3]\n'
    )
    (tmp_path / "a_toy.toml").write_text('name = "a_toy"\npreset = "tiny"\n[recipe]\nshows = "x"\nbuilder = "toy.b"\n')
    (tmp_path / "plain.toml").write_text('name = "plain"\npreset = "tiny"\n[grid]\nK = [3]\n')
    monkeypatch.setattr(registry, "SHIPPED", tmp_path)
    found = registry.shipped_sweep_recipes()
    assert [r.name for r in found] == ["a_toy", "b_toy"] and all(r.is_sweep and r.module == "sweeps" for r in found)
    assert (found[1].shows, found[1].builder, found[1].reads) == ("a toy", "toy.build", {"other": "a_toy"})


def test_every_recipe_parses_and_the_cli_lists_them():
    assert RECIPE_NAMES == tuple(RECIPES)  # the command line's list is the registry's
    shipped = {p.stem for p in recipe_file("k_sweep").parent.glob("*.toml")}
    # every shipped sweep file is a recipe with a builder, and back; and core's run list (core.toml)
    assert shipped == set(SWEEP_RECIPES) | {"core"}
    for name in SWEEP_RECIPES:
        sw = recipe_sweep(name)
        # the crossing recipes stop soon after tau; the width and duration recipes once L_seq is
        # below a floor; Table 2's forward runs go the whole 20,000 steps (their weights seed the
        # transfer runs), and its B -> A controls without z a fixed budget
        want = "floor" if name in ("phase_boundary", "lr_sweep", "selector_groups") else "tau"
        assert sw.points and all(
            p.cfg.train.stop == ("budget" if p.cfg.task.direction in ("az_b", "b_a") else want) for p in sw.points
        ), name
    d = recipe_sweep("direction")
    assert sorted({p.cfg.task.K for p in d.points}) == [5, 10, 20, 36] and len(d.points) == 14
    assert {p.name: p.cfg.train.max_steps for p in d.points if p.cfg.task.direction == "b_a"} == {
        "control_K5": 2500,
        "control_K10": 4000,
    }
    assert {(p.cfg.train.grad_clip, p.cfg.task.distinct_first) for p in d.points} == {(1.0, False)}
    by = {p.name: p.cfg for p in d.points}
    for K in (5, 10, 20, 36):
        assert by[f"fwd_K{K}"].train.max_steps == 20000 and by[f"transfer_K{K}"].train.init_from == f"fwd_K{K}"
        assert by[f"bwd_K{K}"].task.direction == by[f"transfer_K{K}"].task.direction == "backward"
    k = recipe_sweep("k_sweep")
    assert [p.cfg.task.K for p in k.points] == [3, 5, 7, 10, 13, 17, 20, 25, 30, 36, 5, 5, 10, 10, 20, 20]
    assert [p.cfg.task.data_seed for p in k.points] == [0] * 10 + [1, 2] * 3  # seeds at K = 5, 10, 20
    assert {p.cfg.task.n_b for p in k.points} == {1000} and {p.cfg.train.tau_on for p in k.points} == {"paper"}
    fd = recipe_sweep("fixed_d")
    assert sorted({p.cfg.task.K * p.cfg.task.n_b for p in fd.points}) == [10000, 10008, 20000, 20016]
    assert sorted({p.cfg.task.K for p in fd.points}) == [5, 10, 20, 25, 36]
    assert {p.cfg.train.grad_clip for p in fd.points} == {1.0}
    assert {p.cfg.train.grad_clip for p in recipe_sweep("fixed_d_noclip").points} == {0.0}
    warm, init = recipe_sweep("seeds_warmup"), recipe_sweep("seeds_init")
    assert (
        len({p.cfg.model.init_seed for p in warm.points}) == 1
        and len({p.cfg.model.init_seed for p in init.points}) == 3
    )
    # Table 4's six conditions, three seeds each, and one rate past the paper's boundary per K,
    # with 500 warm-up steps (the original's recipe without one is phase_boundary)
    conds = {(p.cfg.task.K, p.cfg.train.lr) for p in warm.points}
    assert conds == {(5, 5e-3), (5, 7e-3), (5, 1e-2), (5, 1.5e-2), (10, 3e-3), (10, 5e-3), (10, 7e-3), (10, 1e-2)}
    assert len(warm.points) == 3 * len(conds) and {p.cfg.train.max_steps for p in warm.points} == {20000}
    assert {p.cfg.train.warmup_steps for p in warm.points} == {500}
    assert {(p.cfg.model.init_seed, p.cfg.train.schedule) for p in warm.points} == {(42, "constant")}
    with pytest.raises(RunError, match="seeds"):
        recipe_sweep("seeds")  # retired: phase_boundary is the no-warm-up recipe
    # init varied: the warm-up recipe's conditions and budget, each seed its own init
    assert {p.cfg.train.warmup_steps for p in init.points} == {500} and {
        p.cfg.train.max_steps for p in init.points
    } == {20000}
    assert {(p.cfg.task.K, p.cfg.train.lr) for p in init.points} == {(5, 5e-3), (5, 1e-2), (10, 3e-3), (10, 7e-3)}
    assert all(p.cfg.model.init_seed == p.cfg.task.data_seed for p in init.points)
    # the original's learning-rate sweep: four rates over a 7x range, their budgets, no clipping
    lr = recipe_sweep("lr_sweep")
    budgets = {p.cfg.train.lr: p.cfg.train.max_steps for p in lr.points}
    assert budgets == {3e-4: 120000, 5e-4: 80000, 1e-3: 50000, 2e-3: 50000}
    assert {
        (p.cfg.task.K, p.cfg.train.batch_size, p.cfg.train.grad_clip, p.cfg.train.warmup_steps) for p in lr.points
    } == {(20, 128, 0.0, 0)}
    # a smaller budget caps every point's own and keeps the run names
    capped = recipe_sweep("lr_sweep", max_steps=20000)
    assert [p.name for p in capped.points] == [p.name for p in lr.points]
    assert {p.cfg.train.max_steps for p in capped.points} == {20000}
    # Table 1 as the original ran it: clipping 1.0, 200,000 steps, an evaluation every 200 steps
    bs = recipe_sweep("batch_size")
    assert {p.cfg.train.batch_size for p in bs.points} == {32, 64, 128, 256, 512}
    setting = lambda c: (c.train.grad_clip, c.train.ckpt_every, c.train.lr, c.train.schedule, c.task.K)  # noqa: E731
    assert {(setting(p.cfg), p.cfg.train.max_steps) for p in bs.points if p.cfg.task.K == 20} == {
        ((1.0, 200, 1e-3, "constant", 20), 200000)
    }
    # and one point of the kind the paper's B >= 64 rows most likely are: K = 10, cosine, warm-up
    (cos,) = [p.cfg for p in bs.points if p.cfg.task.K != 20]
    assert (setting(cos), cos.train.batch_size, cos.train.warmup_steps) == ((1.0, 200, 1e-3, "cosine", 10), 128, 500)
    assert {p.cfg.train.grad_clip for p in recipe_sweep("batch_size_noclip").points} == {0.0}
    # Figure 2b: fixed label noise, clipping 1.0, K 10 / 20 / 36 x six rates
    ln = recipe_sweep("label_noise")
    assert {(p.cfg.task.K, p.cfg.task.label_noise) for p in ln.points} == {
        (K, q) for K in (10, 20, 36) for q in (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)
    }
    assert {(p.cfg.task.label_noise_mode, p.cfg.train.grad_clip, p.cfg.train.max_steps) for p in ln.points} == {
        ("fixed", 1.0, 200000)
    }
    # the phase boundary: the original's grid, seeds 42 / 123 / 7 with the init fixed, 200,000 steps,
    # no warm-up, no clipping, early stop at 0.01 log K on L_seq
    pb = recipe_sweep("phase_boundary")
    grid = {(p.cfg.task.K, p.cfg.train.lr) for p in pb.points}
    assert grid == {(5, a) for a in (5e-3, 7e-3, 1e-2, 1.5e-2, 2e-2)} | {(10, a) for a in (3e-3, 5e-3, 7e-3, 1e-2)} | {
        (20, a) for a in (2e-3, 3e-3, 5e-3, 7e-3)
    } | {(36, a) for a in (1e-3, 2e-3, 3e-3, 5e-3)}
    assert len(pb.points) == 3 * len(grid) and {p.cfg.task.data_seed for p in pb.points} == {42, 123, 7}
    assert {
        (
            p.cfg.model.init_seed,
            p.cfg.train.max_steps,
            p.cfg.train.warmup_steps,
            p.cfg.train.grad_clip,
            p.cfg.train.stop_floor,
            p.cfg.train.tau_on,
        )
        for p in pb.points
    } == {(42, 200000, 0, 0.0, 0.01, "paper")}
    # Table 12's cancellation control: K = 20, G in five values x five seeds, the original's
    # warm-up, cosine schedule, clipping and budget; stops once L_seq is below 0.5 nats
    sg = recipe_sweep("selector_groups")
    assert {(p.cfg.task.selector_groups, p.cfg.task.data_seed) for p in sg.points} == {
        (G, s) for G in (10, 50, 100, 500, 1000) for s in range(5)
    }
    assert {
        (p.cfg.task.K, p.cfg.task.len_z, p.cfg.train.warmup_steps, p.cfg.train.schedule, p.cfg.train.grad_clip)
        for p in sg.points
    } == {(20, 3, 500, "cosine", 1.0)}
    assert {(p.cfg.train.max_steps, p.cfg.eval.live_groups) for p in sg.points} == {(30000, 20)}
    assert all(abs(p.cfg.train.stop_floor * p.cfg.task.log_K - 0.5) < 1e-12 for p in sg.points)


def test_dry_run_estimates_cost_without_training(tmp_path):
    rows = dry_run("k_sweep", RunOptions(root=tmp_path, docs=tmp_path / "docs"), sec_per_step=0.1)  # no log there
    assert [r["status"] for r in rows] == ["not started"] * 16
    assert all(r["est_core_min"] > 0 for r in rows) and not any(tmp_path.iterdir())


def test_dry_run_expects_the_tau_measured_here_for_the_other_seeds(tmp_path):
    """Once one seed of a condition has run, the others are expected to take its tau (x 1.2),
    not the paper's; a finished run has nothing left to cost."""
    text = 'name = "two"\npreset = "tiny"\nstop = "tau"\n[overrides]\nmax_steps = 600\nK = 3\n'
    one = tmp_path / "one.toml"
    one.write_text(text + "[[points]]\nseed = 0\n")
    table = run_sweep(load_sweep(one), RunOptions(root=tmp_path / "ck", progress=False))
    tau = int(max(table["tau_paper"].iloc[0], table["tau_first_token"].iloc[0]))  # the tiny preset stops on both
    both = tmp_path / "both.toml"
    both.write_text(text + "[[points]]\nseed = 0\n[[points]]\nseed = 1\n")
    sweep = load_sweep(both)
    # seconds per step at batch 128
    rows = dry_run(sweep, RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs"), sec_per_step=0.5)
    assert [r["status"] for r in rows] == ["finished", "not started"]
    assert rows[0]["est_core_min"] == 0 and rows[1]["tau_from"] == "1 run measured"
    want = min(600, 1.2 * tau)
    assert rows[1]["expected_steps"] == int(want) and rows[1]["est_core_min"] == pytest.approx(
        want * 0.5 * sweep.points[1].cfg.train.batch_size / 128 / 60
    )


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("recipes")
    f = root / "s.toml"
    f.write_text(TINY)
    sweep = load_sweep(f)
    table = run_sweep(sweep, RunOptions(root=root / "ck", jobs=2, progress=False))
    return sweep, root, table


def test_k_sweep_builder_reports_the_runs_own_taus_and_their_fit(tiny_sweep):
    sweep, root, table = tiny_sweep
    out = built(build_k_sweep, sweep, root / "ck", root / "docs", 300, 0)
    t3 = pd.read_json(root / "docs" / "table3.json")
    assert list(t3["tau_paper"]) == list(table["tau_paper"]) and list(t3["D"]) == [144, 192, 240, 144]
    fit = pd.read_json(root / "docs" / "table3_fit.json")
    want = power_law(list(t3["D"]), list(t3["tau_paper"]), n_boot=300, seed=0)
    assert fit.loc[0, "slope"] == pytest.approx(want["slope"]) and fit.loc[0, "ci_lo"] == pytest.approx(want["ci"][0])
    t5 = pd.DataFrame(out["tables"]["Table 5"])
    row = t5[(t5.alpha == 0.5) & (t5.definition == "paper")].iloc[0]
    assert row["delta"] == pytest.approx(want["slope"])  # tau at alpha = 0.5 is the summary's tau
    assert sorted(t5.alpha.unique()) == [0.3, 0.4, 0.5, 0.6, 0.7]
    assert (root / "docs" / "figure4.svg").read_text().lstrip().startswith("<svg")


def test_fixed_d_points_a_whole_number_of_groups_off_fit_with_their_nominal_d():
    from mi_plateau.reproduce.scaling import nominal_d

    assert nominal_d([10000, 20000, 10008, 20016, 192, 384]) == [10000, 20000, 10000, 20000, 192, 384]
    assert nominal_d([1000, 1011]) == [1000, 1011]  # 1.1% apart: two Ds


def test_other_builders_group_and_ratio_the_same_rows(tiny_sweep):
    sweep, root, table = tiny_sweep
    fd = built(build_fixed_d, sweep, root / "ck", root / "d2", 100, 0)
    fit = fd["tables"]["fit"][0]
    rows = fd["tables"]["Figure 5"]
    want = power_law(
        [r["K"] for r in rows], [r["tau_paper"] for r in rows], groups=[r["D"] for r in rows], n_boot=100, seed=0
    )  # the tiny sweep's Ds lie more than 1% apart: one level each
    assert fit["slope"] == pytest.approx(want["slope"])
    b1 = built(build_batch_size, sweep, root / "ck", root / "d3", 100, 0)
    t1 = b1["tables"]["Table 1"]
    assert all(r["tau_examples_k"] == pytest.approx(r["tau_steps"] * r["B"] / 1000) for r in t1 if r["tau_steps"])
    # the examples figure plots tau x B: the same numbers as the table's column
    ex = b1["figures"]["tau in examples against B"].data[0]
    assert sorted(ex.y) == sorted(r["tau_steps"] * r["B"] for r in t1 if r["definition"] == "paper" and r["tau_steps"])
    assert (root / "d3" / "table1_noclip_steps.svg").is_file() and (
        root / "d3" / "table1_noclip_examples.svg"
    ).is_file()
    b4 = built(build_seeds, sweep, root / "ck", root / "d4", 100, 0)
    t4 = b4["tables"]["Table 4"]
    assert sum(len(tr.x) for tr in b4["figures"]["Table 4"].data[:-1]) == int(table["tau_paper"].notna().sum())
    k4 = next(r for r in t4 if r["K"] == 4 and r["D"] == 192 and r["definition"] == "paper")
    assert k4["mean_tau"] == float(table[table.run == "K4"]["tau_paper"].iloc[0])


def _row(K, lr, tau, st="finished"):
    return {"K": K, "D": 1000 * K, "lr": lr, "tau_paper": tau, "status": st}


def test_phase_boundary_known_answers():
    rows = [
        _row(5, 5e-3, 900),
        _row(5, 5e-3, 1200),
        _row(5, 1e-2, 800),
        _row(5, 1e-2, 700),
        _row(5, 1.5e-2, 3000),
        _row(5, 1.5e-2, None),  # one seed of three failed: 1.5e-2 is past the boundary
        _row(5, 2e-2, None),
        _row(5, 2e-2, None),
        _row(10, 3e-3, 2000),
        _row(10, 3e-3, None, "running"),  # undecided: not all-succeed, not failed
        _row(10, 7e-3, None),
        _row(10, 1e-2, 500),
    ]  # non-monotone: the smallest failing rate counts
    t8 = {r["K"]: r for r in phase_boundary(rows)}
    k5 = t8[5]
    assert k5["lrs"] == [5e-3, 1e-2, 1.5e-2, 2e-2] and k5["escaped"] == [2, 2, 1, 0] and k5["failed"] == [0, 0, 1, 2]
    assert k5["max_all_succeed"] == 1e-2 and k5["min_any_fail"] == 1.5e-2
    assert k5["eta_star"] == pytest.approx((1e-2 * 1.5e-2) ** 0.5) and k5["paper_eta_star"] == 1.2e-2
    k10 = t8[10]
    assert k10["undecided"] == [1, 0, 0] and k10["max_all_succeed"] == 1e-2 and k10["min_any_fail"] == 7e-3
    assert phase_boundary([_row(20, 1e-3, None, "running")])[0]["eta_star"] is None


@pytest.mark.browser
def test_sweep_page_renders(tiny_sweep, tmp_path, render_status):
    sweep, root, _ = tiny_sweep
    out = built(build_k_sweep, sweep, root / "ck", root / "docs5", 100, 0)
    page = sweep_report(
        tmp_path / "sweep.html",
        sweep.name,
        out["tables"],
        out["figures"],
        {"K3": {"steps": [0, 10], "L_seq": [1.0, 0.5], "Lc": [1.0, 0.4], "log_K": 1.1}},
    )
    st = render_status(page, tmp_path)
    assert st["errors"] == [] and st["expected"] == 2 and st["plots"] == st["svgs"] == 2


def test_seed_stats_and_the_init_comparison_known_answers():
    def row(lr, tau, ft=None):
        return {"D": 5000, "K": 5, "lr": lr, "tau_paper": tau, "tau_first_token": ft}

    varied = [row(5e-3, 1000), row(5e-3, 2000), row(5e-3, 3000), row(1e-2, None)]
    fixed = [row(5e-3, 1800), row(5e-3, 1900), row(5e-3, None)]  # one seed failed: left out of the mean
    comp = {(r["lr"], r["definition"]): r for r in compare_seed_stats(varied, fixed)}
    v = comp[(5e-3, "paper")]
    assert v["varied_init_taus"] == [1000, 2000, 3000] and v["varied_init_mean_tau"] == 2000
    assert v["varied_init_std_tau"] == pytest.approx(1000) and v["varied_init_cv"] == pytest.approx(0.5)
    assert v["fixed_init_runs"] == 3 and v["fixed_init_taus"] == [1800, 1900] and v["fixed_init_mean_tau"] == 1850
    assert v["fixed_init_std_tau"] == pytest.approx(50 * 2**0.5) and v["paper_mean"] == 2850
    x = (1000 / 1727) ** 2  # against the paper's std at this condition, three seeds each: F(2, 2)
    assert v["varied_init_p_smaller_spread"] == pytest.approx(x / (1 + x))
    assert comp[(5e-3, "first_token")]["varied_init_mean_tau"] is None  # no first-token tau in these rows
    assert comp[(1e-2, "paper")]["varied_init_runs"] == 1 and comp[(1e-2, "paper")]["fixed_init_runs"] is None


def test_dry_run_counts_an_unfinished_seed_without_a_tau_as_a_lower_bound(tmp_path, monkeypatch):
    """Hand-built rows: a seed still on the plateau at step s takes at least 1.2 s; a bound below
    the measured seeds adds nothing; a condition with only unfinished seeds is costed at least at
    their bound, whatever the paper's guess."""
    from mi_plateau.reproduce import cost

    text = 'name = "bounds"\npreset = "tiny"\nstop = "tau"\n[overrides]\nmax_steps = 600\nK = 3\n'
    f = tmp_path / "s.toml"
    f.write_text(text + "".join(f"[[points]]\nseed = {s}\n" for s in range(4)))
    sweep = load_sweep(f)
    base = {"K": 3, "source": "recorded", "wall_s": None, "batch_size": 128}
    rows = [
        dict(base, tau_paper=100, tau_first_token=120, status="finished", steps=150),  # 1.2 x 120 = 144
        dict(base, tau_paper=None, tau_first_token=None, status="running", steps=300),  # at least 360
        dict(base, tau_paper=None, tau_first_token=None, status="running", steps=50),  # at least 60 < 144
        dict(base, tau_paper=None, tau_first_token=None, status="not started", steps=None),
    ]
    monkeypatch.setattr(cost, "collect", lambda *a, **k: (rows, {}))
    got = cost.dry_run(sweep, RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs"), sec_per_step=1.0)
    mean = (144 + 360 + 144) / 3
    assert [r["expected_steps"] for r in got] == [int(mean), 360, int(mean), int(mean)]
    assert got[3]["tau_from"] == "3 runs measured (2 unfinished without a tau: at least)"
    assert got[3]["est_core_min"] == pytest.approx(mean * sweep.points[3].cfg.train.batch_size / 128 / 60)

    only_bounds = [dict(rows[1], steps=400), rows[3]]  # 1.2 x 400 = 480
    monkeypatch.setattr(cost, "collect", lambda *a, **k: (only_bounds, {}))
    f.write_text(text + "[[points]]\nseed = 0\n[[points]]\nseed = 1\n")
    two = load_sweep(f)
    guess = cost._paper_tau_guess(two.points[1].cfg)
    paper = min(600, 1.2 * guess) if guess else 600
    got = cost.dry_run(two, RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs"), sec_per_step=1.0)
    assert [r["expected_steps"] for r in got] == [int(max(paper, 480))] * 2
    assert got[1]["tau_from"].endswith("at least 1 unfinished run")


def test_dry_run_costs_a_running_seed_by_its_own_stopping_family(tmp_path, monkeypatch):
    """tau_on = "paper": a running run with only a first-token tau has no stopping tau yet, so it
    keeps its own bound; one with its L_seq tau stops at 1.2 x that tau, whatever the others do."""
    from mi_plateau.reproduce import cost

    text = (
        'name = "own"\npreset = "tiny"\nstop = "tau"\n[overrides]\nmax_steps = 600\nK = 3\n"train.tau_on" = "paper"\n'
        + "".join(f"[[points]]\nseed = {s}\n" for s in range(3))
    )
    f = tmp_path / "s.toml"
    f.write_text(text)
    sweep = load_sweep(f)
    assert sweep.points[0].cfg.train.tau_on == "paper"
    base = {"K": 3, "source": "recorded", "wall_s": None, "batch_size": 128}
    rows = [
        dict(base, tau_paper=100, tau_first_token=None, status="finished", steps=120),  # 120 steps
        dict(base, tau_paper=None, tau_first_token=90, status="running", steps=300),  # at least 360
        dict(base, tau_paper=250, tau_first_token=None, status="running", steps=260),
    ]  # stops at 300
    monkeypatch.setattr(cost, "collect", lambda *a, **k: (rows, {}))
    got = cost.dry_run(sweep, RunOptions(root=tmp_path / "ck", docs=tmp_path / "docs"), sec_per_step=1.0)
    assert [r["expected_steps"] for r in got] == [int((120 + 360 + 300) / 3), 360, 300]


TINY_FLOOR = """
name = "tiny_floor"
preset = "tiny"
stop = "floor"
[overrides]
max_steps = 900
"train.stop_floor" = 0.05
tau_on = "paper"
[grid]
lr = [0.003, 0.006]
seed = [0, 1]
"""


@pytest.mark.long
def test_width_builders_report_each_runs_own_width(tmp_path):
    """The phase boundary's and the lr sweep's tables read each run's width off its own records
    (the same numbers ``summaries.transition_width`` gives), and write every table and figure."""
    from mi_plateau.checkpoints import Run
    from mi_plateau.summaries import transition_width

    f = tmp_path / "s.toml"
    f.write_text(TINY_FLOOR)
    sweep = load_sweep(f)
    run_sweep(sweep, RunOptions(root=tmp_path / "ck", jobs=2, progress=False))
    want = {}
    for p in sweep.points:
        recs = Run(tmp_path / "ck" / sweep.name / p.name).records()
        want[p.name] = transition_width(
            [r["step"] for r in recs], [r["metrics"]["L_seq"] for r in recs], p.cfg.task.log_K
        )
        # the floor rule stopped every run at its first checkpoint below 0.05 log K, or at the cap
        below = [r["step"] for r in recs if r["metrics"]["L_seq"] < 0.05 * p.cfg.task.log_K]
        assert below == [recs[-1]["step"]] or (not below and recs[-1]["step"] == 900)
    assert any(w[2] for w in want.values())
    pb = built(build_phase_boundary, sweep, tmp_path / "ck", tmp_path / "d", 0, 0)
    runs = {r["run"]: r for r in pb["tables"]["runs"]}
    assert {n: (r["t_start_paper"], r["t_end_paper"], r["tau_width_paper"]) for n, r in runs.items()} == want
    t4 = [r for r in pb["tables"]["Table 4 (width)"] if r["definition"] == "paper"]
    assert sorted(w for r in t4 for w in r["widths"]) == sorted(w[2] for w in want.values() if w[2] is not None)
    for name in (
        "phase_boundary_table4.md",
        "phase_boundary_table8.json",
        "phase_boundary_runs.csv",
        "phase_boundary_widths.svg",
        "phase_boundary_diagram.svg",
        "phase_boundary_curves.svg",
    ):
        assert (tmp_path / "d" / name).is_file(), name
    lr = built(build_lr_width, sweep, tmp_path / "ck", tmp_path / "d2", 0, 0)
    rows = [r for r in lr["tables"]["widths"] if r["definition"] == "paper"]
    assert sorted((r["tau_width"] or -1) for r in rows) == sorted((w[2] or -1) for w in want.values())
    assert (tmp_path / "d2" / "lr_sweep_ratio.json").is_file() and (tmp_path / "d2" / "lr_sweep_widths.svg").is_file()
    assert (tmp_path / "d2" / "lr_sweep_curves.svg").is_file()
    # Table 11 from the same runs: each run's Q is summaries.dissipation of its own records
    from mi_plateau.reproduce.mechanisms import build_dissipation
    from mi_plateau.summaries import dissipation

    t11 = built(build_dissipation, sweep, tmp_path / "ck", tmp_path / "d3", 0, 0)["tables"]["Table 11"]
    want = [dissipation(Run(tmp_path / "ck" / sweep.name / p.name).records(), p.cfg.task.log_K) for p in sweep.points]
    want_q = sorted(d["Q"] or -1.0 for d in want)
    assert sorted((r["Q"] or -1.0) for r in t11) == pytest.approx(want_q) and any(q > 0 for q in want_q)
    windows = sorted((d["window_start"] or -1, d["window_end"] or -1) for d in want)
    assert sorted((r["window_start"] or -1, r["window_end"] or -1) for r in t11) == windows  # the log keeps them
    assert (tmp_path / "d3" / "table11.md").is_file()


def test_label_noise_delay_is_over_the_same_K_without_noise():
    from mi_plateau.reproduce.mechanisms import noise_delays

    rows = [
        {"K": 10, "label_noise": 0.0, "tau_paper": 2000, "status": "finished", "steps": 2400},
        {"K": 10, "label_noise": 0.2, "tau_paper": 5000, "status": "finished", "steps": 6000},
        {"K": 10, "label_noise": 0.1, "tau_paper": None, "status": "finished", "steps": 20000},
        {"K": 20, "label_noise": 0.2, "tau_paper": 9000, "status": "running", "steps": 9100},
    ]
    out = {(r["K"], r["label_noise"]): r for r in noise_delays(rows)}
    assert out[(10, 0.2)]["delay"] == 2.5 and out[(10, 0.0)]["delay"] == 1.0
    assert out[(10, 0.1)]["delay"] is None and out[(10, 0.1)]["no_escape_by"] == 20000
    assert out[(20, 0.2)]["delay"] is None  # no p = 0 run at K = 20 yet
    # the figure: delays as points, the p = 0.1 run as a lower bound at its last step over tau(0)
    from mi_plateau.reproduce.mechanisms import noise_figure

    tr = {t.name: t for t in noise_figure(noise_delays(rows)).data}
    assert list(tr["K=10"].x) == [0.0, 0.2] and list(tr["K=10"].y) == [1.0, 2.5]
    bound = tr["K=10: no tau by this step (tau is above)"]
    assert list(bound.x) == [0.1] and list(bound.y) == [10.0]
    assert "K=20" not in tr or not [y for y in tr["K=20"].y if y is not None]  # no tau(0): no delay drawn
    assert list(tr["the paper's values"].x) == [0.2] and list(tr["the paper's values"].y) == [16]


def test_cancellation_durations_and_beta_known_answers():
    from mi_plateau.reproduce.mechanisms import cancellation_beta, cancellation_runs

    lk = math.log(20)
    rows = [
        {
            "run": f"g{G}_s{s}",
            "task.selector_groups": G,
            "seed": s,
            "n_b": 1000,
            "K": 20,
            "status": "finished",
            "steps": 900,
        }
        for G, s in ((10, 0), (10, 1), (1000, 0), (100, 0), (50, 0), (50, 1))
    ]
    rows[-1]["status"] = "running"  # G = 50: one run with a duration, one still going
    steps = [0, 100, 200, 300, 400, 500]
    curves = {
        "g10_s0": {"step": steps, "L_seq": [3.2, lk - 0.01, 2.0, 0.49, 0.2, 0.1]},  # 100 -> 300: 200
        "g10_s1": {"step": steps, "L_seq": [3.2, 3.1, None, lk - 0.5, 0.3, 0.1]},  # 300 -> 400: 100
        "g1000_s0": {"step": steps, "L_seq": [3.2, 3.1, lk - 0.1, 1.0, 0.6, 0.4]},  # 200 -> 500: 300
        "g100_s0": {"step": steps, "L_seq": [3.2, 3.1, lk, 2.9, 2.0, 1.0]},  # never below 0.5 nats
        "g50_s0": {"step": steps, "L_seq": [3.2, 2.0, 1.0, 0.4, 0.2, 0.1]},
        "g50_s1": {"step": steps, "L_seq": [3.2, 3.1, 3.0, 2.9, 2.0, 1.0]},
    }
    runs = {r["run"]: r for r in cancellation_runs(rows, curves)}
    assert [runs[n]["duration"] for n in ("g10_s0", "g10_s1", "g1000_s0")] == [200, 100, 300]
    assert runs["g100_s0"]["t_below_log_K"] == 300 and runs["g100_s0"]["duration"] is None  # log K itself is not below
    per_g, (fit,) = cancellation_beta(list(runs.values()))
    by = {g["G"]: g for g in per_g}
    assert by[10]["mean_duration"] == 150 and by[10]["std_duration"] == 50 and by[100]["mean_duration"] is None
    assert by[100]["censored"] == 1 and not by[100]["in_beta"]
    assert by[50]["mean_duration"] == 200 and by[50]["started"] == 2 and not by[50]["in_beta"]  # a run still going
    # two points: n_b / G = 100 (mean 150) and 1 (mean 300)
    assert math.isclose(fit["beta"], (math.log(151) - math.log(301)) / math.log(100))
    assert fit["n_G"] == 2 and fit["n_runs"] == 3 and fit["paper_beta"] == 0.02
    _, (one,) = cancellation_beta([runs["g10_s0"]])
    assert one["beta"] is None  # one G: no slope
    hidden = {**runs["g10_s1"], "status": "no curves", "duration": None}  # a seed recorded without its curves
    per_g, (fit,) = cancellation_beta([runs["g10_s0"], hidden, runs["g1000_s0"]])
    assert per_g[0]["started"] == 2 and per_g[0]["censored"] == 0 and not per_g[0]["in_beta"]
    assert fit["beta"] is None  # G = 10 left out: one G remains
