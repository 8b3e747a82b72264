import json
from dataclasses import dataclass

import pytest

from mi_plateau import cli
from mi_plateau.config import (
    ALIASES,
    SECTIONS,
    Bounds,
    ConfigError,
    RunConfig,
    TrainConfig,
    aliases,
    layout_for,
    preset,
    setting,
    settings,
    validate,
    with_overrides,
)


@pytest.mark.parametrize("name", ["paper", "tl4"])
def test_paper_defaults_match_spec(name):
    """Both recipes of docs/design.md: the same task, model and optimiser; they differ in warm-up,
    batching, init, b_U and the init seed."""
    cfg = preset(name)
    assert (cfg.task.K, cfg.task.n_b, cfg.task.len_z) == (10, 1000, 2)
    m = cfg.model
    assert (m.n_layers, m.n_heads, m.d_model, m.d_head, m.d_mlp) == (4, 4, 128, 32, 512)
    t = cfg.train
    assert (t.lr, t.beta1, t.beta2, t.eps, t.weight_decay, t.batch_size) == (1e-3, 0.9, 0.999, 1e-8, 0.01, 128)
    assert t.grad_clip == 0 and t.schedule == "constant"
    assert cfg.seq_len == 16
    recipe = (t.warmup_steps, t.batching, m.init, m.train_b_U, m.init_seed, m.fixed_init)
    assert recipe == (
        (0, "epoch", "gpt2", True, 42, True) if name == "paper" else (500, "uniform", "tl4", False, 0, False)
    )


@pytest.mark.parametrize("name", ["paper", "tl4", "demo", "tiny"])
def test_json_round_trip_is_lossless(name):
    cfg = with_overrides(preset(name), {"lr": 3e-3, "seed": 7, "len_z": 3})
    again = RunConfig.from_dict(json.loads(cfg.to_json()))
    assert again == cfg


def test_layout_positions_follow_len_z():
    for len_z in (1, 2, 3, 4):
        lay = layout_for(with_overrides(preset("paper"), {"len_z": len_z}).task)
        assert lay.span("B") == range(1, 7)
        assert lay.selector_positions == range(8, 8 + len_z)
        assert lay.target_start == 9 + len_z
        assert lay.seq_len == 14 + len_z
        assert lay.first_pred == 8 + len_z  # the SEP just before A1
    lay = layout_for(preset("paper").task)
    assert (lay.first_pred, lay.target_start, lay.seq_len) == (10, 11, 16)


def test_seed_sets_all_three_seeds_and_specific_wins():
    cfg = with_overrides(preset("tl4"), {"seed": 3, "train.batch_seed": 9})
    assert (cfg.task.data_seed, cfg.model.init_seed, cfg.train.batch_seed) == (3, 3, 9)
    # the paper recipe pins the init: its seeds vary data and order only (the original's Table 4)
    cfg = with_overrides(preset("paper"), {"seed": 3})
    assert (cfg.task.data_seed, cfg.model.init_seed, cfg.train.batch_seed) == (3, 42, 3)
    assert with_overrides(preset("paper"), {"seed": 3, "init_seed": 5}).model.init_seed == 5


@pytest.mark.parametrize(
    "text, value",
    [
        ("true", True),
        ("False", False),
        ("1", True),
        ("0", False),
        ("yes", True),
        ("no", False),
        (True, True),
        (0, False),
    ],
)
def test_bool_settings_are_parsed(text, value):
    assert with_overrides(preset("tiny"), {"train.compile": text}).train.compile is value


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("train.compile", "maybe", "train.compile='maybe': expected true or false"),
        ("train.compile", 2, "train.compile=2: expected true or false"),
        ("train.compile", [1, 2], "train.compile=[1, 2]: expected true or false"),
        ("train.lr", [1e-3], "train.lr=[0.001]: expected a number"),
        ("task.K", [10], "task.K=[10]: expected an integer"),
        ("train.impl", ["fast"], "train.impl=['fast']: expected a string"),
    ],
)
def test_overrides_reject_lists_and_non_bools(key, value, message):
    with pytest.raises(ConfigError) as e:
        with_overrides(preset("tiny"), {key: value})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_stored_config_with_a_list_for_a_bool_is_refused():
    d = preset("tiny").to_dict()
    d["train"]["compile"] = [1, 2]
    with pytest.raises(ConfigError, match=r"train.compile=\[1, 2\]: expected true or false"):
        RunConfig.from_dict(d)


BAD = [
    ({"K": 37}, "task.K=37"),
    ({"K": 1}, "task.K=1"),
    ({"K": 0}, "task.K=0"),
    ({"K": -3}, "task.K=-3"),
    ({"len_z": 1, "K": 36}, None),  # valid: 36 selectors of length 1
    ({"n_b": 0}, "task.n_b=0"),
    ({"n_b": 50000}, "task.n_b=50000"),
    ({"n_b": 20001}, "task.n_b=20001"),
    ({"len_z": 10**9}, "task.len_z=1000000000"),
    ({"seed": -1}, "task.data_seed=-1"),
    ({"eval.eval_seed": -2}, "eval.eval_seed=-2"),
    ({"model.normalization_type": "RMS"}, "only 'LN'"),
    ({"len_z": 0}, "task.len_z=0"),
    ({"direction": "sideways"}, "task.direction"),
    ({"label_noise": 1.5}, "task.label_noise=1.5"),
    ({"label_noise": 0.1, "direction": "forward"}, "only defined"),
    ({"lr": 0}, "train.lr=0"),
    ({"lr": -1e-3}, "train.lr=-0.001"),
    ({"batch_size": 0}, "train.batch_size=0"),
    ({"max_steps": -5}, "train.max_steps=-5"),
    ({"train.ckpt_every": 0}, "train.ckpt_every=0"),
    ({"alpha": 0}, "eval.alpha=0"),
    ({"alpha": 1.0}, "eval.alpha=1.0"),
    ({"alpha": 1.7}, "eval.alpha=1.7"),
    ({"eval.n_groups": 0}, "eval.n_groups=0"),
    ({"model.d_model": 0}, "model.d_model=0"),
    ({"model.act_fn": "tanh"}, "model.act_fn"),
    ({"schedule": "linear"}, "train.schedule"),
    ({"grad_clip": -1}, "grad_clip"),
]


@pytest.mark.parametrize("overrides,message", BAD)
def test_bad_values_fail_before_work_naming_the_value(overrides, message):
    cfg = with_overrides(preset("paper"), overrides)
    if message is None:
        validate(cfg)
        return
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        validate(cfg)


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"nonsense": 1}, "unknown setting 'nonsense'"),
        ({"task.nonsense": 1}, "unknown setting 'task.nonsense'"),
        ({"K": "ten"}, "task.K='ten': expected an integer"),
        ({"lr": "fast"}, "train.lr='fast': expected a number"),
        ({"K": 2.5}, "task.K=2.5: expected an integer"),
        ({"lr": "nan"}, "expected a number"),
    ],
)
def test_overrides_reject_unknown_keys_and_wrong_types(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        with_overrides(preset("paper"), overrides)


def test_unknown_preset():
    with pytest.raises(ConfigError, match="unknown preset 'huge'"):
        preset("huge")


def test_from_dict_rejects_unknown_keys():
    d = preset("paper").to_dict()
    d["train"]["momentum"] = 0.9
    with pytest.raises(ConfigError, match="momentum"):
        RunConfig.from_dict(d)


@pytest.mark.parametrize(
    "over, message",
    [
        (
            {"K": 20, "task.selector_groups": 65},
            "task.selector_groups=65: 65 sets of K=20 distinct selectors need 1300 "
            "strings, but len_z=2 gives only 1296; raise task.len_z",
        ),
        ({"task.selector_groups": -1}, "task.selector_groups=-1: must be >= 0"),
        (
            {"task.selector_groups": 2, "direction": "b_a"},
            "task.selector_groups=2: task.direction='b_a' has no selector",
        ),
        ({"task.selector_groups": 1001}, "task.selector_groups=1001: at most n_b=1000"),
    ],
)
def test_selector_groups_are_checked(over, message):
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        validate(with_overrides(preset("paper"), over))


def test_selector_groups_within_the_selector_space_are_valid():
    cfg = validate(with_overrides(preset("paper"), {"K": 20, "task.selector_groups": 64}))
    assert cfg.task.selector_groups == 64 and preset("paper").task.selector_groups == 0
    assert validate(with_overrides(preset("paper"), {"K": 20, "len_z": 3, "task.selector_groups": 1000}))
    assert RunConfig.from_dict(json.loads(cfg.to_json())) == cfg
    # a config stored before the setting existed reads as one global selector set
    old = cfg.to_dict()
    del old["task"]["selector_groups"]
    assert RunConfig.from_dict(old).task.selector_groups == 0


def test_run_name_hashes_only_the_settings_that_differ_from_the_preset():
    """A setting added later at its default leaves every name as it was: the hash covers the
    differing settings, not the whole config."""
    import hashlib
    import json

    from mi_plateau.config import run_name

    base = preset("tiny")
    assert run_name(base) == "tiny_K4_nb48_s0"
    cfg = with_overrides(base, {"lr": 0.004, "eval.alpha": 0.4})
    want = hashlib.sha1(json.dumps({"eval.alpha": 0.4, "train.lr": 0.004}, sort_keys=True).encode()).hexdigest()[:8]
    assert run_name(cfg) == f"tiny_K4_nb48_s0_{want}"


# --- one source per setting: each field's metadata makes its checks, alias and flag ----------------

SETTINGS = list(settings())


def _refuse(key, value):
    """validate's message for one bad value on the tiny preset (every other value valid)."""
    with pytest.raises(ConfigError) as e:
        validate(with_overrides(preset("tiny"), {key: value}))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{key}="), msg
    return msg


def test_every_field_is_declared_with_its_help():
    assert [k for k, _, _ in SETTINGS] == [
        f"{sec}.{k}" for sec, d in RunConfig().to_dict().items() if isinstance(d, dict) for k in d
    ]
    assert all(s.help for _, _, s in SETTINGS)


@pytest.mark.parametrize("key, s", [(k, s) for k, _, s in SETTINGS if s.choices], ids=lambda v: str(v)[:24])
def test_every_choice_list_is_enforced_in_one_line_naming_the_choices(key, s):
    msg = _refuse(key, "nonsense")
    assert all(c in msg for c in s.choices), msg
    section, name = key.split(".")
    assert getattr(getattr(RunConfig(), section), name) in s.choices  # the default is allowed


def _outside(b: Bounds, integer: bool) -> list:
    step = 1 if integer else 0.5
    return [
        v
        for v in (None if b.ge is None else b.ge - step, b.gt, None if b.le is None else b.le + step, b.lt)
        if v is not None
    ]


@pytest.mark.parametrize("key, f, s", [x for x in SETTINGS if x[2].bounds], ids=lambda v: str(v)[:24])
def test_every_bound_is_enforced_in_one_line_naming_the_bound(key, f, s):
    integer = f.type == "int"
    for value in _outside(s.bounds, integer):
        assert s.bounds.words(integer) in _refuse(key, value)
    section, name = key.split(".")
    assert s.bounds.holds(getattr(getattr(RunConfig(), section), name))


def test_every_alias_resolves_to_its_field():
    keys = {k for k, _, _ in SETTINGS}
    assert ALIASES == aliases() and ALIASES.pop("seed", "missing") is None
    for alias, key in ALIASES.items():
        assert key in keys
        section, name = key.split(".")
        default = getattr(getattr(RunConfig(), section), name)
        assert with_overrides(RunConfig(), {alias: default}) == RunConfig()


def test_every_train_flag_is_a_fields_flag_with_its_help():
    by_key = {k: s for k, _, s in SETTINGS}
    flagged = {s.flag for s in by_key.values() if s.flag}
    assert {f for f, *_ in cli.TRAIN_FLAGS} == flagged | {"--seed"}
    for flag, dest, typ, help_ in cli.TRAIN_FLAGS:
        value = {int: "3", float: "0.5"}.get(typ, "x")
        assert getattr(cli.build_parser().parse_args(["train", flag, value]), dest) == typ(value)
        if dest != "seed":
            s = by_key[ALIASES[dest]]
            assert (s.flag, s.help) == (flag, help_)


def test_a_new_setting_is_one_field():
    """The demonstration: one ``setting(...)`` line gives the alias, the train flag and the check."""

    @dataclass(frozen=True)
    class Train(TrainConfig):
        label_smoothing: float = setting(
            0.0,
            help="share of the target's mass spread over the others",
            bounds=Bounds(ge=0, lt=1),
            alias="label_smoothing",
            flag="--label-smoothing",
        )

    sections = {**SECTIONS, "train": Train}
    assert aliases(sections)["label_smoothing"] == "train.label_smoothing"
    assert (
        "--label-smoothing",
        "label_smoothing",
        float,
        "share of the target's mass spread over the others",
    ) in cli.train_flags(sections)
    assert validate(RunConfig(train=Train())).to_dict()["train"]["label_smoothing"] == 0.0
    with pytest.raises(ConfigError, match=r"^train\.label_smoothing=1\.5: must be in \[0, 1\)$"):
        validate(RunConfig(train=Train(label_smoothing=1.5)))


@pytest.mark.parametrize(
    "bounds, integer, words",
    [
        (Bounds(ge=1), True, "must be a positive integer"),
        (Bounds(ge=1), False, "must be >= 1"),
        (Bounds(gt=0), False, "must be > 0"),
        (Bounds(ge=2, le=36), True, "must be in 2..36"),
        (Bounds(ge=0, lt=1), False, "must be in [0, 1)"),
        (Bounds(gt=0, lt=1), False, "must be in (0, 1)"),
        (Bounds(le=8), True, "at most 8"),
        (Bounds(ge=0, text="seeds must be >= 0"), True, "seeds must be >= 0"),
    ],
)
def test_bounds_word_their_rule(bounds, integer, words):
    assert bounds.words(integer) == words
