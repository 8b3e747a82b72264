"""Sweeps: a 2 x 2 grid through the local pool and through a real local Ray instance, resumed
after interruptions, and bad sweep files refused before any work."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.config import ConfigError
from mi_plateau.sweeps import RunOptions, load_sweep, parse_sweep, run_sweep
from mi_plateau.sweeps.schedule import status
from mi_plateau.train import train

GRID = """
name = "grid"
preset = "tiny"
stop = "tau"
[overrides]
max_steps = 400
[grid]
K = [3, 4]
seed = [0, 1]
"""


def _sweep(tmp_path, text=GRID):
    f = tmp_path / "s.toml"
    f.write_text(text)
    return load_sweep(f)


def _same_run(a: Run, b: Run) -> None:
    assert a.records() == b.records()
    sa = {c["step"]: c["sha256"] for c in a.manifest()["checkpoints"]}
    sb = {c["step"]: c["sha256"] for c in b.manifest()["checkpoints"]}
    assert sa == sb  # bit-identical weights at every checkpoint


@pytest.fixture(scope="module")
def local_grid(tmp_path_factory):
    """The 2 x 2 grid on the local pool, and each point trained alone for reference."""
    root = tmp_path_factory.mktemp("sweeps")
    sweep = _sweep(root)
    table = run_sweep(sweep, RunOptions(root=root / "local", jobs=2, progress=False))
    # the workers run one thread each; float reductions depend on the thread count, so the
    # reference is trained with one thread too
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = {p.name: train(p.cfg, root / "alone" / p.name, progress=False) for p in sweep.points}
    finally:
        torch.set_num_threads(threads)
    return sweep, root, table, alone


@pytest.mark.long
def test_local_grid_equals_training_each_point_alone(local_grid):
    sweep, root, table, alone = local_grid
    assert len(table) == 4 and set(table["status"]) == {"finished"} and table["error"].isna().all()
    assert sorted(zip(table["K"], table["seed"])) == [(3, 0), (3, 1), (4, 0), (4, 1)]
    for p in sweep.points:
        _same_run(Run(root / "local" / "grid" / p.name), alone[p.name])
    # the table file is the table (pandas reads it back), one row per run with both taus
    import pandas as pd

    back = pd.read_json(root / "local" / "grid" / "table.json")
    assert (
        list(back["run"]) == list(table["run"])
        and back["tau_paper"].notna().all()
        and back["tau_first_token"].notna().all()
    )
    # tau-only stopping: each run stopped at 1.2 x its later tau, well before max_steps
    for _, r in table.iterrows():
        assert r["steps"] < 400 and r["steps"] >= 1.2 * max(r["tau_paper"], r["tau_first_token"])


@pytest.mark.long
def test_rerun_skips_finished_runs_and_refuses_a_changed_point(local_grid, tmp_path):
    sweep, root, _, _ = local_grid
    folder = root / "local" / "grid"
    before = {p.name: (folder / p.name / "manifest.json").stat().st_mtime_ns for p in sweep.points}
    again = run_sweep(sweep, RunOptions(root=root / "local", jobs=2, progress=False))
    assert set(again["status"]) == {"finished"}
    assert {p.name: (folder / p.name / "manifest.json").stat().st_mtime_ns for p in sweep.points} == before
    changed = _sweep(tmp_path, GRID.replace("max_steps = 400", "max_steps = 400\nlr = 0.002"))
    with pytest.raises(RunError, match=r"K3_seed0: train.lr: stored 0.003, given 0.002"):
        run_sweep(changed, RunOptions(root=root / "local", progress=False))


@pytest.mark.long
def test_a_sweep_file_that_raises_the_cap_continues_its_runs(tmp_path):
    """Runs that stopped at the sweep's max_steps before their tau continue, the same runs, when
    the sweep file raises the cap; a run its own rule stopped stays as it is."""
    text = (
        GRID.replace("max_steps = 400", "max_steps = 60")
        .replace("K = [3, 4]", "K = [3]")
        .replace("seed = [0, 1]", "seed = [0]")
    )
    first = run_sweep(_sweep(tmp_path, text), RunOptions(root=tmp_path / "ck", progress=False))
    assert list(first["steps"]) == [60] and first["tau_paper"].isna().all()  # stopped at the cap, on the plateau
    more = run_sweep(
        _sweep(tmp_path, text.replace("max_steps = 60", "max_steps = 400")),
        RunOptions(root=tmp_path / "ck", progress=False),
    )
    run = Run(tmp_path / "ck" / "grid" / "K3_seed0")
    assert more["steps"].iloc[0] > 60 and more["tau_paper"].notna().all() and run.config().train.max_steps == 400
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' thread count: float reductions depend on it
    try:
        whole = train(run.config(), tmp_path / "whole", progress=False)  # the same run trained at 400 from the start
    finally:
        torch.set_num_threads(threads)
    _same_run(run, whole)


@pytest.mark.long
def test_ray_backend_gives_the_same_runs(local_grid):
    pytest.importorskip("ray")
    sweep, root, _, alone = local_grid
    table = run_sweep(sweep, RunOptions(root=root / "ray", jobs=2, backend="ray", progress=False))
    assert set(table["status"]) == {"finished"}
    for p in sweep.points:
        _same_run(Run(root / "ray" / "grid" / p.name), alone[p.name])


@pytest.mark.long
def test_batched_sweep_gives_the_same_taus(local_grid):
    """--batch-runs 4: the grid's four runs in one process as one stacked model, on the local pool
    and on Ray; same taus and steps as one run per process."""
    sweep, root, table, _ = local_grid
    cols = ["run", "tau_paper", "tau_first_token", "steps"]
    batched = run_sweep(sweep, RunOptions(root=root / "batched", jobs=1, batch_runs=4, progress=False))
    assert batched[cols].equals(table[cols])
    logs = list((root / "batched" / "grid" / "logs").iterdir())
    assert len(logs) == 1  # one process
    pytest.importorskip("ray")
    on_ray = run_sweep(
        sweep, RunOptions(root=root / "ray_batched", jobs=2, backend="ray", batch_runs=2, progress=False)
    )
    assert on_ray[cols].equals(table[cols])


@pytest.mark.long
def test_a_killed_worker_costs_one_interval_and_the_sweep_completes(local_grid, tmp_path):
    """kill -9 of a worker process mid-run: the pool resumes that run from its last checkpoint;
    the sweep completes and the run equals the uninterrupted one."""
    sweep, _, _, alone = local_grid
    one = _sweep(tmp_path, GRID.replace("K = [3, 4]", "K = [4]").replace("seed = [0, 1]", "seed = [1]"))
    out = {}
    t = threading.Thread(
        target=lambda: out.setdefault("table", run_sweep(one, RunOptions(root=tmp_path / "k", jobs=1, progress=False)))
    )
    t.start()
    run = tmp_path / "k" / "grid" / "K4_seed1"
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            if max(Run(run).steps()) >= 60:
                break
        except (RunError, ValueError):
            pass
        time.sleep(0.2)
    pid = int(subprocess.run(["pgrep", "-f", "--", f"--out {run} "], capture_output=True, text=True).stdout.split()[0])
    os.kill(pid, signal.SIGKILL)
    t.join(300)
    assert set(out["table"]["status"]) == {"finished"}
    _same_run(Run(run), alone["K4_seed1"])


@pytest.mark.long
def test_a_ray_task_lost_past_its_retries_fails_the_sweep(tmp_path, monkeypatch):
    """A Ray worker killed on every attempt (here: halfway through its first weights file) exhausts
    max_retries; the sweep left that run 'running' and still reported success."""
    ray = pytest.importorskip("ray")
    one = GRID.replace("K = [3, 4]", "K = [4]").replace("seed = [0, 1]", "seed = [1]")
    f = tmp_path / "s.toml"
    f.write_text(one)
    # the workers inherit the environment Ray starts with; the driver (this process) must not crash
    monkeypatch.setenv("MI_PLATEAU_CRASH", "weights:1:half")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    monkeypatch.delenv("MI_PLATEAU_CRASH")
    try:
        table = run_sweep(
            load_sweep(f), RunOptions(root=tmp_path / "ray", jobs=1, backend="ray", progress=False), retries=1
        )
    finally:
        ray.shutdown()
    assert list(table.attrs["failed"]) == ["K4_seed1"]
    assert status(tmp_path / "ray" / "grid" / "K4_seed1") != "finished"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.long
def test_a_worker_killed_on_a_real_ray_cluster_is_retried_to_the_same_runs(local_grid, tmp_path):
    """A Ray cluster started as a user starts one (``ray start --head`` on loopback) and the sweep
    attached to it with ``--address``: one worker (``ray::_ray_train``) gets kill -9 once a run of
    the sweep has a committed checkpoint (the test kills a Ray worker of this machine's user: run
    it where no other Ray cluster runs). Ray retries the task, the run resumes from that checkpoint, the
    sweep exits 0, and every run equals the uninterrupted one bit for bit."""
    sweep, _, _, alone = local_grid
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(ray_bin):
        pytest.skip("the ray command is not installed (pip install 'mi-plateau[ray]')")
    import secrets

    # Ray >= 2.59 starts clusters with token authentication: the head, every node and the driver
    # share one token (docs/sweeps.md)
    env = {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    port = _free_port()
    head = [ray_bin, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2"]
    flags = ["--include-dashboard=false", "--disable-usage-stats"]
    subprocess.run(head + flags, env=env, check=True, capture_output=True, timeout=180)
    try:
        f = tmp_path / "s.toml"
        f.write_text(GRID)
        root = tmp_path / "root"
        cmd = [sys.executable, "-m", "mi_plateau", "sweep", str(f), "--root", str(root), "--quiet"]
        p = subprocess.Popen(
            cmd + ["--backend", "ray", "--address", f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        killed, deadline = None, time.time() + 300
        while killed is None and p.poll() is None and time.time() < deadline:
            running = [d.parent for d in (root / "grid").glob("*/manifest.json") if status(d.parent) == "running"]
            pids = subprocess.run(["pgrep", "-f", "ray::_ray_train"], capture_output=True, text=True).stdout.split()
            if running and pids:
                os.kill(int(pids[0]), signal.SIGKILL)
                killed = int(pids[0])
            time.sleep(0.05)
        _, err = p.communicate(timeout=600)
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=120)
    assert killed is not None, "no worker was caught mid-run"
    assert p.returncode == 0, err
    for pt in sweep.points:
        _same_run(Run(root / "grid" / pt.name), alone[pt.name])


@pytest.mark.long
@pytest.mark.parametrize("delay", [1.5, 4.0])
def test_a_killed_sweep_reruns_to_the_same_runs(local_grid, tmp_path, run_cli, delay):
    """kill -9 of the sweep process itself at a moment into the sweep: its workers die with it
    (no orphan holds a lock), and the rerun completes every run identical to an uninterrupted
    sweep."""
    sweep, _, _, alone = local_grid
    f = tmp_path / "s.toml"
    f.write_text(GRID)
    root = tmp_path / "root"
    env = {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}
    p = subprocess.Popen(
        [sys.executable, "-m", "mi_plateau", "sweep", str(f), "--root", str(root), "--jobs", "2", "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    p.kill()
    p.wait()
    deadline = time.time() + 30
    while (
        time.time() < deadline and subprocess.run(["pgrep", "-f", f"--out {root}"], capture_output=True).returncode == 0
    ):
        time.sleep(0.2)  # the workers follow their parent
    assert subprocess.run(["pgrep", "-f", f"--out {root}"], capture_output=True).returncode != 0, "orphan workers"
    r = run_cli("sweep", str(f), "--root", str(root), "--jobs", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    for pt in sweep.points:
        _same_run(Run(root / "grid" / pt.name), alone[pt.name])


BAD = [
    ("typo = 1\n", "unknown key 'typo'"),
    ("[grid]\nK = []\n", "grid.K: empty list"),
    ("[grid]\nK = 3\n", "grid.K=3: expected a list"),
    ("[grid]\nKK = [3]\n", "unknown setting 'KK'"),
    ("[grid]\nlr = ['fast']\n", "train.lr='fast': expected a number"),
    ("[grid]\nK = [99]\n", "task.K=99"),
    ("[[points]]\nK = 3\n[[points]]\nK = 3\n", "are the same run (duplicate points)"),
    ("[[points]]\nK = 3\nname = 'a'\n[[points]]\nK = 4\nname = 'a'\n", "would both be the run 'a'"),
    ("", "no points"),
    ("stop = 'never'\n[grid]\nK = [3]\n", "stop='never'"),
    ("order = 'random'\n[grid]\nK = [3]\n", "order='random': must be one of longest_first, listed"),
    # a point's name is one folder inside the sweep's: never a path out of it
    ("[[points]]\nname = '../x'\nK = 3\n", "points[0]: name='../x'"),
    ("[[points]]\nname = '../../x'\nK = 3\n", "points[0]: name='../../x'"),
    ("[[points]]\nname = '/abs/path'\nK = 3\n", "points[0]: name='/abs/path'"),
    ("[[points]]\nname = 'a/b'\nK = 3\n", "points[0]: name='a/b'"),
    ("[[points]]\nname = '..'\nK = 3\n", "points[0]: name='..'"),
    ("[[points]]\nname = 7\nK = 3\n", "points[0]: name=7"),
    ("[[points]]\npreset = 'nope'\nK = 3\n", "points[0]: unknown preset 'nope'"),
    ("[[points]]\npreset = 7\nK = 3\n", "points[0]: preset=7"),
    # a shipped recipe's declaration ([recipe]) is checked with the rest
    ("recipe = 3\n[grid]\nK = [3]\n", "recipe: expected a table"),
    ("[recipe]\nshows = 'x'\nbuilder = 'm.f'\nshow = 'y'\n[grid]\nK = [3]\n", "recipe.show: unknown key"),
    ("[recipe]\nshows = 'x'\n[grid]\nK = [3]\n", "recipe: give shows and builder"),
    ("[recipe]\nshows = 'x'\nbuilder = 'no_module'\n[grid]\nK = [3]\n", "recipe.builder='no_module'"),
    ("[recipe]\nshows = 2\nbuilder = 'm.f'\n[grid]\nK = [3]\n", "recipe.shows=2: expected a string"),
]


@pytest.mark.parametrize("body, message", BAD)
def test_bad_sweep_files_fail_in_one_line_before_any_work(tmp_path, body, message, run_cli):
    f = tmp_path / "bad.toml"
    f.write_text('name = "bad"\npreset = "tiny"\n' + body)
    with pytest.raises(ConfigError) as e:
        load_sweep(f)
    assert message in str(e.value) and "\n" not in str(e.value) and str(f) in str(e.value)
    p = run_cli("sweep", str(f), "--root", str(tmp_path / "root"))
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "root").exists()  # nothing was created


def test_runs_start_longest_first_or_in_the_listed_order(tmp_path):
    """The pool's units: largest D first by default (ties keep the file's order); a sweep file's
    ``order = "listed"`` keeps the file's order."""
    from mi_plateau.sweeps.schedule import work_units as _units

    text = 'name = "o"\npreset = "tiny"\n' + "".join(
        f"[[points]]\nK = {k}\nseed = {s}\n" for k, s in [(3, 0), (5, 0), (4, 0), (5, 1)]
    )
    for order, want in (
        (None, ["K5_seed0", "K5_seed1", "K4_seed0", "K3_seed0"]),
        ("listed", ["K3_seed0", "K5_seed0", "K4_seed0", "K5_seed1"]),
    ):
        sweep = _sweep(tmp_path, text if order is None else f"order = '{order}'\n" + text)
        assert sweep.order == (order or "longest_first") and sweep.to_dict()["order"] == sweep.order
        units = _units([(tmp_path / p.name, p.cfg) for p in sweep.points], 1, sweep.order)
        assert [u[0][0].name for u in units] == want and all(len(u) == 1 for u in units)


def test_a_point_may_start_from_another_preset_and_still_gets_the_overrides():
    from mi_plateau.config import preset, with_overrides

    sweep = parse_sweep(
        {
            "name": "mixed",
            "preset": "tiny",
            "overrides": {"max_steps": 123},
            "points": [{"K": 3}, {"preset": "demo", "K": 3}],
        }
    )
    own, other = (p.cfg for p in sweep.points)
    assert own == with_overrides(preset("tiny"), {"K": 3, "max_steps": 123})
    assert other == with_overrides(preset("demo"), {"K": 3, "max_steps": 123}) and other.preset == "demo"
    assert [p.name for p in sweep.points] == ["K3", "presetdemo_K3"]


def test_sweep_names_are_checked():
    with pytest.raises(ConfigError, match="name="):
        parse_sweep({"name": "../x", "grid": {"K": [3]}})


def test_a_point_named_out_of_the_sweep_is_refused_before_any_work(run_cli, tmp_path):
    f = tmp_path / "esc.toml"
    f.write_text('name = "esc"\npreset = "tiny"\n[[points]]\nname = "../x"\nK = 3\n')
    for extra in ([], ["--dry-run"]):
        p = run_cli("sweep", str(f), "--root", str(tmp_path / "root"), *extra)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "name='../x'" in p.stderr
    assert not (tmp_path / "root").exists() and not (tmp_path / "x").exists()


def test_an_edited_sweep_json_is_refused_and_a_swapped_point_is_named(run_cli, tmp_path):
    import json as _json

    from mi_plateau.checkpoints import manifest_digest
    from mi_plateau.sweeps import sweep_table

    f = tmp_path / "s.toml"
    f.write_text(GRID.replace("max_steps = 400", "max_steps = 40").replace("seed = [0, 1]", "seed = [0]"))
    sweep = load_sweep(f)
    root = tmp_path / "root"
    run_sweep(sweep, RunOptions(root=root, jobs=1, progress=False))
    folder = root / "grid"
    clean = sweep_table(folder)
    assert clean["error"].isna().all()
    spec = _json.loads((folder / "sweep.json").read_text())
    a, b = spec["points"][0], spec["points"][1]
    a["name"], b["name"] = b["name"], a["name"]  # two points' names swapped
    (folder / "sweep.json").write_text(_json.dumps(spec))
    p = run_cli("sweep", "status", str(folder))
    assert p.returncode == 2 and "edited or damaged" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    spec["digest"] = manifest_digest(spec)  # resealed by hand: the runs' own configs still disagree
    (folder / "sweep.json").write_text(_json.dumps(spec))
    table = sweep_table(folder)
    assert table["error"].str.contains("the sweep records another config for this run").all()
    spec["points"][0]["name"] = "../x"
    spec["digest"] = manifest_digest(spec)
    (folder / "sweep.json").write_text(_json.dumps(spec))
    p = run_cli("sweep", "status", str(folder))
    assert p.returncode == 2 and "points[0].name='../x'" in p.stderr


def test_cli_dry_run_and_status(run_cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(GRID.replace("max_steps = 400", "max_steps = 40").replace("seed = [0, 1]", "seed = [0]"))
    sweep = load_sweep(f)
    for pt in sweep.points:  # trained here, in-process: the sweep then finds them finished
        train(pt.cfg, tmp_path / "root" / "grid" / pt.name, progress=False)
    run_sweep(sweep, RunOptions(root=tmp_path / "root", jobs=1, progress=False))
    p = run_cli("sweep", str(f), "--root", str(tmp_path / "root"), "--dry-run")
    assert p.returncode == 0 and "2 runs; 2 finished" in p.stdout
    p = run_cli("sweep", "status", str(tmp_path / "root" / "grid"))
    assert p.returncode == 0 and p.stdout.count("finished") == 2 and "tau_paper" in p.stdout


@pytest.mark.parametrize("damage", ["weights deleted", "weights truncated", "config deleted"])
def test_damage_to_a_finished_run_fails_the_sweep_rerun(run_cli, tmp_path, damage):
    f = tmp_path / "s.toml"
    f.write_text('name = "dm"\npreset = "tiny"\n[overrides]\nmax_steps = 40\n[[points]]\nK = 3\n')
    root = tmp_path / "root"
    assert run_cli("sweep", str(f), "--root", str(root), "--jobs", "1", "--quiet").returncode == 0
    run = root / "dm" / "K3"
    last = sorted((run / "ckpt").glob("*.safetensors"))[-1]
    if damage == "weights deleted":
        last.unlink()
    elif damage == "weights truncated":
        last.write_bytes(last.read_bytes()[:100])
    else:
        (run / "config.json").unlink()
    p = run_cli("sweep", str(f), "--root", str(root), "--jobs", "1", "--quiet")
    assert p.returncode != 0 and "K3" in p.stderr and "Traceback" not in p.stderr


def test_a_second_sweep_of_one_folder_says_it_is_busy(tmp_path):
    from mi_plateau.checkpoints import RunError, RunLock

    sweep = load_sweep_text(tmp_path, 'name = "busy"\npreset = "tiny"\n[[points]]\nK = 3\n')
    with RunLock(tmp_path / "root" / "busy", what="sweep folder"):
        with pytest.raises(RunError, match="is running this sweep folder") as e:
            run_sweep(sweep, RunOptions(root=tmp_path / "root", jobs=1, progress=False))
    assert "\n" not in str(e.value) and not (tmp_path / "root" / "busy" / "K3").exists()


def load_sweep_text(tmp_path, text):
    f = tmp_path / "x.toml"
    f.write_text(text)
    return load_sweep(f)


def test_the_pool_gives_each_process_the_threads_asked_for(monkeypatch, tmp_path, tiny_cfg):
    """``RunOptions.threads`` reaches every process the local pool starts (OMP_NUM_THREADS and
    MKL_NUM_THREADS); without it each process gets one thread."""
    import mi_plateau.sweeps.pool as pool

    seen = []

    class Finished:  # a process that has already exited cleanly
        returncode = 0

        def poll(self):
            return 0

    def start(unit, env, log_path, device):
        seen.append((env["OMP_NUM_THREADS"], env["MKL_NUM_THREADS"]))
        return Finished()

    monkeypatch.setattr(pool, "_start", start)
    runs = [(tmp_path / "a", tiny_cfg)]
    assert pool.train_local(runs, RunOptions(threads=2, progress=False)) == {}
    assert pool.train_local(runs, RunOptions(progress=False)) == {}
    assert seen == [("2", "2"), ("1", "1")]
