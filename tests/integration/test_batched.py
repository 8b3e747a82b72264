"""The batched trainer: several runs as one stacked model match the runs trained alone, resume
bit-identically after a kill, let stopped runs drop out, and refuse runs that cannot share shapes."""

import json
import os
import subprocess
import sys

import pytest
import torch

from mi_plateau.checkpoints import Run, RunError
from mi_plateau.config import RunOptions, preset, with_overrides
from mi_plateau.train import train
from mi_plateau.train.batched import group_batches, train_batched


def _cfgs(max_steps=50):
    # epoch batching with different D: the members' last partial batches differ in size (padding)
    base = with_overrides(
        preset("tiny"),
        {"max_steps": max_steps, "batching": "epoch", "train.ckpt_every": 10, "train.ckpt_every_transition": 10},
    )
    return [
        with_overrides(base, {"K": 3, "seed": 0}),
        with_overrides(base, {"K": 4, "n_b": 40, "seed": 1, "lr": 1e-3, "grad_clip": 0.5, "train.warmup_steps": 10}),
    ]


@pytest.fixture(scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _sha(run: Run) -> dict[int, str]:
    return {c["step"]: c["sha256"] for c in run.manifest()["checkpoints"]}


def test_batched_losses_match_single_runs(tmp_path, one_thread):
    cfgs = _cfgs()
    train_batched([(c, tmp_path / f"b{i}") for i, c in enumerate(cfgs)], progress=False)
    for i, c in enumerate(cfgs):
        alone = train(c, tmp_path / f"s{i}", progress=False)
        a, b = Run(tmp_path / f"b{i}").records(), alone.records()
        assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(0, 51, 10))
        for x, y in zip(a[1:], b[1:]):
            assert x["train_loss"] == pytest.approx(y["train_loss"], abs=1e-5)
            assert x["metrics"]["L_seq"] == pytest.approx(y["metrics"]["L_seq"], abs=1e-5)
            # each member's own gradient norm, not the stack's
            assert x["grad_norm_mean"] == pytest.approx(y["grad_norm_mean"], rel=1e-4)
            # Table 11's original z-gap from each member's own (unpadded) batch
            assert x["train_first_loss"] == pytest.approx(y["train_first_loss"], abs=1e-5)
            assert x["train_first_loss_z_deranged"] == pytest.approx(y["train_first_loss_z_deranged"], abs=1e-5)
        assert Run(tmp_path / f"b{i}").config() == c  # an ordinary run folder


@pytest.mark.long  # kills a process / trains a sweep of several runs: CI's second step
def test_killed_batched_run_resumes_bit_identically(tmp_path, run_cli, one_thread):
    cfgs = _cfgs()
    ref = [tmp_path / "ref0", tmp_path / "ref1"]
    train_batched(list(zip(cfgs, ref)), progress=False)
    outs = [tmp_path / "k0", tmp_path / "k1"]
    payload = json.dumps([{"out": str(o), "config": c.to_dict()} for o, c in zip(outs, cfgs)])
    env = {**os.environ, "MI_PLATEAU_CRASH": "step:57", "OMP_NUM_THREADS": "1"}  # mid-way, between checkpoints
    p = subprocess.run(
        [sys.executable, "-m", "mi_plateau", "train-batch", "-", "--quiet"],
        input=payload,
        text=True,
        env=env,
        capture_output=True,
    )
    assert p.returncode == 137
    assert 0 < len(Run(outs[0]).records()) < 6
    p = run_cli("train-batch", "-", "--resume", "--quiet", input=payload, env={"OMP_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stderr
    for o, r in zip(outs, ref):
        assert _sha(Run(o)) == _sha(Run(r)) and Run(o).records() == Run(r).records()


def test_a_stopped_member_drops_out_and_the_others_go_on(tmp_path, one_thread):
    short, long_ = _cfgs(30)[0], _cfgs(50)[1]
    train_batched([(short, tmp_path / "a"), (long_, tmp_path / "b")], progress=False)
    train_batched([(_cfgs(50)[0], tmp_path / "a2"), (long_, tmp_path / "b2")], progress=False)
    assert Run(tmp_path / "a").records()[-1]["step"] == 30 and Run(tmp_path / "a").manifest()["status"] == "finished"
    got, want = Run(tmp_path / "b").records(), Run(tmp_path / "b2").records()
    assert [r["step"] for r in got] == [r["step"] for r in want]
    for x, y in zip(got, want):
        assert x["metrics"]["L_seq"] == pytest.approx(y["metrics"]["L_seq"], abs=1e-6)


def test_runs_of_other_shapes_are_refused_or_grouped_apart(tmp_path):
    a, b = _cfgs()
    c = with_overrides(b, {"batch_size": 16})
    with pytest.raises(RunError, match="cannot be batched"):
        train_batched([(a, tmp_path / "x"), (c, tmp_path / "y")], progress=False)
    assert not (tmp_path / "x").exists()  # refused before any folder is made
    groups = group_batches([(tmp_path / "1", a), (tmp_path / "2", c), (tmp_path / "3", b)], 4)
    assert [[p.name for p, _ in g] for g in groups] == [["1", "3"], ["2"]]
    with pytest.raises(RunError, match="named twice"):
        train_batched([(a, tmp_path / "z"), (b, tmp_path / "z")], progress=False)


def test_a_refused_member_leaves_every_folder_as_it_was(tmp_path, one_thread):
    """The batched trainer opened its folders one by one: a resume refused at the second member
    had already written the first member's config.json and command.json."""
    a, b = _cfgs(max_steps=20)
    train(b, tmp_path / "old", progress=False, options=RunOptions(device="cpu"))
    before = {p.name: p.read_bytes() for p in (tmp_path / "old").iterdir() if p.is_file() and p.name != ".lock"}
    other = with_overrides(b, {"lr": 5e-4})  # not a step-cap raise: refused
    with pytest.raises(RunError, match="different config"):
        train_batched([(a, tmp_path / "new"), (other, tmp_path / "old")], resume=True, progress=False)
    assert not (tmp_path / "new" / "config.json").exists() and not (tmp_path / "new" / "command.json").exists()
    after = {p.name: p.read_bytes() for p in (tmp_path / "old").iterdir() if p.is_file() and p.name != ".lock"}
    assert after == before


def test_no_value_is_read_back_to_the_host_inside_a_stacked_step(tmp_path, one_thread):
    """The step keeps losses, norms and first-token losses in device buffers: a dispatch mode that
    counts host reads (``_local_scalar_dense``, what ``.item()``, ``float()`` and ``.tolist()`` run,
    and ``is_nonzero``, what ``bool(tensor)`` runs) sees none in five steps of three members."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from mi_plateau.train import Member, open_config
    from mi_plateau.train.batched import stacked_forward, stacked_step
    from mi_plateau.train.stack import Stack

    cfgs = [*_cfgs(), with_overrides(_cfgs()[0], {"seed": 5})]
    members = []
    for i, c in enumerate(cfgs):
        run = Run(tmp_path / f"m{i}")
        members.append(Member(open_config(c, run, False, None), run))
    stack = Stack(members)
    f = stacked_forward(cfgs[0])

    class Count(TorchDispatchMode):
        reads: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = str(func)
            if "_local_scalar_dense" in name or "is_nonzero" in name or name.startswith("aten.item"):
                self.reads.append(name)
            return func(*args, **(kwargs or {}))

    stacked_step(f, stack, cfgs[0].train.batch_size)  # warm-up outside the count
    with Count() as c:
        for _ in range(5):
            stacked_step(f, stack, cfgs[0].train.batch_size)
    assert c.reads == []
    # and the buffers hold what the members' checkpoints will read: six steps of each
    loss, norms, first = stack.stats.take(2, 6, 0.0)
    assert 0 < loss < 10 and norms["max"] >= norms["mean"] > 0 and 0 < first < 10
