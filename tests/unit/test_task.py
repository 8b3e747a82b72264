import math

import numpy as np
import pytest
import torch

from mi_plateau.config import preset, with_overrides
from mi_plateau.task import BOS, CHAR0, EOS, SEP, BatchSampler, decode, make_eval_set, make_task


@pytest.fixture(scope="module")
def task():
    return make_task(with_overrides(preset("paper"), {"n_b": 300, "K": 12}).task)


def test_targets_globally_unique_and_first_chars_distinct(task):
    n_b, K = task.cfg.n_b, task.cfg.K
    flat = task.targets.reshape(-1, 4)
    assert len({tuple(r) for r in flat}) == n_b * K  # A determines (B, z)
    assert all(len(set(task.targets[b, :, 0])) == K for b in range(n_b))
    assert len({tuple(r) for r in task.bases}) == n_b
    assert len({tuple(r) for r in task.selectors}) == K
    assert task.targets.min() >= 0 and task.targets.max() < 36


def test_selectors_are_shared_so_z_alone_says_nothing(task):
    g, s = task.all_examples()
    toks = task.tokens(g, s)
    zpos = list(task.layout.selector_positions)
    # every selector string appears with every base: z is independent of B
    for k in range(task.cfg.K):
        rows = toks[s == k]
        assert (rows[:, zpos] == rows[0, zpos]).all()
        assert len(set(map(tuple, rows[:, 1:7].tolist()))) == task.cfg.n_b


def test_sequence_layout(task):
    toks = task.tokens(np.array([0, 5]), np.array([3, 7]))
    assert toks.shape == (2, 16)
    assert (toks[:, 0] == BOS).all() and (toks[:, 7] == SEP).all() and (toks[:, 10] == SEP).all()
    assert (toks[:, 15] == EOS).all()
    assert torch.equal(toks[0, 11:15], torch.from_numpy(task.targets[0, 3] + CHAR0))
    assert torch.equal(toks[1, 8:10], torch.from_numpy(task.selectors[7] + CHAR0))
    assert decode(toks[0]).startswith("<BOS>")


def test_entropies(task):
    """H(A1|B) = log K and H(A1|B,z) = 0 over the dataset."""
    g, s = task.all_examples()
    first = task.targets[g, s, 0]
    # conditional on B: K distinct equiprobable values
    per_b = {b: set() for b in range(task.cfg.n_b)}
    for b, a in zip(g, first):
        per_b[b].add(a)
    assert all(len(v) == task.cfg.K for v in per_b.values())
    h = np.mean([math.log(len(v)) for v in per_b.values()])
    assert h == pytest.approx(math.log(task.cfg.K))
    assert len(set(zip(g, s))) == len(g)  # (B, z) identifies the example: H(A|B,z) = 0


def test_same_seed_same_task_other_seed_other_task():
    cfg = preset("tiny").task
    a, b = make_task(cfg), make_task(cfg)
    assert np.array_equal(a.targets, b.targets) and np.array_equal(a.bases, b.bases)
    c = make_task(with_overrides(preset("tiny"), {"seed": 1}).task)
    assert not np.array_equal(a.targets, c.targets)


@pytest.mark.parametrize("direction,seq_len,target", [("forward", 13, "B"), ("az_b", 16, "B"), ("b_a", 13, "A")])
def test_other_directions(direction, seq_len, target):
    t = make_task(with_overrides(preset("tiny"), {"direction": direction}).task)
    toks = t.tokens(np.array([2]), np.array([1]))
    assert toks.shape[1] == seq_len == t.layout.seq_len
    lay = t.layout
    tgt = toks[0, lay.target_start : lay.target_start + lay.target_len].numpy() - CHAR0
    expected = t.bases[2] if target == "B" else t.targets[2, 1]
    assert np.array_equal(tgt, expected)
    if direction == "b_a":
        assert "z" not in [s[0] for s in lay.segments]


def test_eval_set_is_fixed_and_complete():
    t = make_task(preset("paper").task)
    ev = make_eval_set(t, preset("paper").eval)
    assert ev.n_groups == 200 and len(ev.tokens) == 2000
    assert len(set(ev.groups)) == 200
    ev2 = make_eval_set(t, preset("paper").eval)
    assert np.array_equal(ev.groups, ev2.groups)
    assert (ev.candidates.gather(1, ev.cand_index[:, None]).squeeze(1) == ev.target_first).all()
    sw = ev.swapped_tokens(1)
    zpos = list(t.layout.selector_positions)
    assert not torch.equal(sw[:, zpos], ev.tokens[:, zpos])
    other = [p for p in range(16) if p not in zpos]
    assert torch.equal(sw[:, other], ev.tokens[:, other])  # only z changes; the answer stays


def test_label_noise_replaces_targets_within_group():
    cfg = with_overrides(preset("tiny"), {"label_noise": 0.5}).task
    t = make_task(cfg)
    s = BatchSampler(t, 4000, seed=0)
    toks = s.sample()
    lay = t.layout
    A = toks[:, lay.target_start : lay.target_start + 4].numpy() - CHAR0
    B = toks[:, 1:7].numpy() - CHAR0
    z = toks[:, list(lay.selector_positions)].numpy() - CHAR0
    base_index = {tuple(b): i for i, b in enumerate(t.bases)}
    sel_index = {tuple(x): i for i, x in enumerate(t.selectors)}
    flipped = 0
    for a, b, zz in zip(A, B, z):
        g, k = base_index[tuple(b)], sel_index[tuple(zz)]
        group_targets = {tuple(x) for x in t.targets[g]}
        assert tuple(a) in group_targets  # noise stays inside the group
        flipped += tuple(a) != tuple(t.targets[g, k])
    assert 0.45 < flipped / len(A) < 0.55


def test_sampler_state_round_trip():
    t = make_task(preset("tiny").task)
    s = BatchSampler(t, 8, seed=3)
    s.sample()
    state = s.state()
    a = s.sample()
    s.load_state(state)
    assert torch.equal(a, s.sample())


def test_epoch_batches_visit_every_example_once_and_resume_mid_epoch():
    """Epoch batching (DataLoader(shuffle=True)): every example exactly once per epoch, in
    consecutive slices, the last partial batch kept; the state taken mid-epoch resumes the
    same sequence of batches."""
    from mi_plateau.task import EpochSampler

    t = make_task(preset("tiny").task)  # D = 48 * 4 = 192
    s = EpochSampler(t, 50, seed=1)
    epochs = []
    for _ in range(3):
        idx = [s.next_indices() for _ in range(4)]  # 50 + 50 + 50 + 42
        assert [len(i) for i in idx] == [50, 50, 50, 42]
        flat = torch.cat(idx)
        assert sorted(flat.tolist()) == list(range(192))
        epochs.append(flat)
    assert not torch.equal(epochs[0], epochs[1])  # a fresh permutation each epoch
    a = EpochSampler(t, 50, seed=1)
    for _ in range(6):
        a.sample()
    state = {k: v.clone() for k, v in a.state().items()}
    want = [a.sample() for _ in range(5)]
    b = EpochSampler(t, 50, seed=99)
    b.load_state(state)
    assert all(torch.equal(x, b.sample()) for x in want)


def test_az_b_swap_changes_only_the_selector():
    cfg = with_overrides(preset("tiny"), {"direction": "az_b"})
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    sw = ev.swapped_tokens(1)
    zpos = list(ev.task.layout.selector_positions)
    other = [p for p in range(ev.task.layout.seq_len) if p not in zpos]
    assert torch.equal(sw[:, other], ev.tokens[:, other])
    assert not torch.equal(sw[:, zpos], ev.tokens[:, zpos])


# --- selector groups (task.selector_groups, the gradient-cancellation control) ------------------


def _reference_task(cfg):
    """The task as generated before ``task.selector_groups`` existed (one global selector set):
    bases, selectors and targets, drawn in the same order from the same generator. Kept here as
    the plain twin that the default (G = 0) must reproduce bit for bit."""

    def _unique_rows(rng, n, length):
        out = rng.integers(0, 36, size=(n, length))
        while True:
            _, first = np.unique(out, axis=0, return_index=True)
            dup = np.setdiff1d(np.arange(n), first)
            if dup.size == 0:
                return out
            out[dup] = rng.integers(0, 36, size=(dup.size, length))

    rng = np.random.default_rng([cfg.data_seed, 0x5EED])
    bases = _unique_rows(rng, cfg.n_b, 6)
    selectors = _unique_rows(rng, cfg.K, cfg.len_z)
    first = np.argsort(rng.random((cfg.n_b, 36)), axis=1)[:, : cfg.K]
    suffix = rng.integers(0, 36, size=(cfg.n_b, cfg.K, 3))
    while True:
        code = first * 36**3 + (suffix * np.array([36**2, 36, 1])).sum(-1)
        flat = code.reshape(-1)
        _, idx = np.unique(flat, return_index=True)
        dup = np.setdiff1d(np.arange(flat.size), idx)
        if dup.size == 0:
            break
        suffix.reshape(-1, 3)[dup] = rng.integers(0, 36, size=(dup.size, 3))
    return bases, selectors, np.concatenate([first[..., None], suffix], axis=-1)


def _reference_tokens(cfg, g, s):
    """``[BOS] B [SEP] z [SEP] A [EOS]`` (backward) from the reference strings."""
    bases, selectors, targets = _reference_task(cfg)
    parts = [
        np.full((len(g), 1), BOS),
        bases[g] + CHAR0,
        np.full((len(g), 1), SEP),
        selectors[s] + CHAR0,
        np.full((len(g), 1), SEP),
        targets[g, s] + CHAR0,
        np.full((len(g), 1), EOS),
    ]
    return torch.from_numpy(np.concatenate(parts, axis=1).astype(np.int64))


@pytest.mark.parametrize("seed, K, n_b, len_z", [(0, 10, 1000, 2), (7, 20, 300, 2), (3, 36, 200, 1), (11, 5, 64, 3)])
def test_without_selector_groups_every_token_is_as_before(seed, K, n_b, len_z):
    cfg = with_overrides(preset("paper"), {"seed": seed, "K": K, "n_b": n_b, "len_z": len_z})
    t = make_task(cfg.task)
    bases, selectors, targets = _reference_task(cfg.task)
    assert np.array_equal(t.bases, bases) and np.array_equal(t.selectors, selectors)
    assert np.array_equal(t.targets, targets)
    g, s = t.all_examples()
    assert torch.equal(t.tokens(g, s), _reference_tokens(cfg.task, g, s))
    ev = make_eval_set(t, cfg.eval)
    assert torch.equal(ev.tokens, _reference_tokens(cfg.task, ev.g, ev.s))
    # a swap shows the next selector of the set and keeps the clean answer
    a0 = t.layout.target_start
    want = torch.cat([_reference_tokens(cfg.task, ev.g, (ev.s + 1) % K)[:, :a0], ev.tokens[:, a0:]], dim=1)
    assert torch.equal(ev.swapped_tokens(1), want)


def test_two_selector_groups_group_g_uses_set_g_mod_2():
    base = with_overrides(preset("tiny"), {"n_b": 10, "K": 4})
    cfg = with_overrides(base, {"task.selector_groups": 2})
    t, t0 = make_task(cfg.task), make_task(base.task)
    assert t.selector_sets.shape == (2, 4, 2)
    assert len({tuple(z) for z in t.selector_sets.reshape(-1, 2)}) == 8  # all G*K strings distinct
    # only the selectors differ from the shared-set task of the same seed
    assert np.array_equal(t.bases, t0.bases) and np.array_equal(t.targets, t0.targets)
    g, s = t.all_examples()
    toks = t.tokens(g, s)
    zpos = list(t.layout.selector_positions)
    assert np.array_equal(toks[:, zpos].numpy() - CHAR0, t.selector_sets[g % 2, s])
    set_of = {tuple(z): i for i in range(2) for z in t.selector_sets[i]}
    assert all(set_of[tuple(z)] == gg % 2 for z, gg in zip(toks[:, zpos].numpy() - CHAR0, g))
    # a swap shows another selector of the row's own set and keeps the answer
    ev = make_eval_set(t, cfg.eval)
    sw = ev.swapped_tokens(1)
    assert all(set_of[tuple(z)] == gg % 2 for z, gg in zip(sw[:, zpos].numpy() - CHAR0, ev.g))
    assert np.array_equal(sw[:, zpos].numpy() - CHAR0, t.selector_sets[ev.g % 2, (ev.s + 1) % 4])
    assert torch.equal(sw[:, t.layout.target_start :], ev.tokens[:, t.layout.target_start :])
    with pytest.raises(ValueError, match="selector_groups=2"):
        t.selectors  # noqa: B018 (no single global set to return)


def test_selector_groups_fill_the_whole_selector_space():
    """G * K = 36^len_z: every string of that length is a selector, each exactly once."""
    cfg = with_overrides(preset("tiny"), {"n_b": 12, "K": 3, "len_z": 1, "task.selector_groups": 12})
    t = make_task(cfg.task)
    assert sorted(t.selector_sets.reshape(-1).tolist()) == list(range(36))
    assert np.array_equal(t.selector_sets, make_task(cfg.task).selector_sets)  # deterministic from the seed


def test_fixed_label_noise_corrupts_a_fixed_share_once_and_per_draw_redraws():
    import numpy as np

    from mi_plateau.config import preset, with_overrides
    from mi_plateau.task import make_sampler, make_task

    cfg = with_overrides(preset("tiny"), {"K": 4, "n_b": 50, "label_noise": 0.2})
    task = make_task(cfg.task)
    sel = task.noisy_target_sel
    own = np.tile(np.arange(4), (50, 1))
    assert (sel != own).sum() == round(0.2 * 200)  # exactly p D examples, each with another A of its group
    assert np.array_equal(sel, make_task(cfg.task).noisy_target_sel)  # fixed by the data seed
    assert np.array_equal(make_task(with_overrides(cfg, {"label_noise": 0.0}).task).bases, task.bases)
    # every draw of a corrupted example carries the same wrong target for the whole run
    s = make_sampler(task, "epoch", 200, 0)
    lay = task.layout
    seen = {}
    for _ in range(3):
        for row in s.sample().numpy():
            key = tuple(row[: lay.target_start])
            seen.setdefault(key, set()).add(tuple(row[lay.target_start :]))
    assert all(len(v) == 1 for v in seen.values()) and len(seen) == 200
    per = with_overrides(cfg, {"task.label_noise_mode": "per_draw"})
    s2 = make_sampler(make_task(per.task), "epoch", 200, 0)
    seen2 = {}
    for _ in range(5):
        for row in s2.sample().numpy():
            seen2.setdefault(tuple(row[: lay.target_start]), set()).add(tuple(row[lay.target_start :]))
    assert any(len(v) > 1 for v in seen2.values())  # redrawn: an example seen with two targets


def test_a_stored_noisy_config_without_the_mode_reads_as_per_draw(tmp_path):
    import json

    from mi_plateau.checkpoints import Run
    from mi_plateau.config import preset, with_overrides

    for p, want in ((0.1, "per_draw"), (0.0, "fixed")):
        d = with_overrides(preset("tiny"), {"label_noise": p}).to_dict()
        del d["task"]["label_noise_mode"]
        (tmp_path / f"r{p}").mkdir()
        (tmp_path / f"r{p}" / "config.json").write_text(json.dumps(d))
        assert Run(tmp_path / f"r{p}").config().task.label_noise_mode == want
