"""``RunOptions`` and the sections beside the run config (``AnalysisConfig``, ``SGLDSettings``,
``HessianSettings``): each option's and each setting's flag, help and bounds declared once, on
its field; the API's older keywords folded in for one release; the pass cache keys unchanged."""

import argparse
import re
from dataclasses import fields

import pytest

from mi_plateau.cli import TRAIN_FLAGS, build_parser
from mi_plateau.commands.options import setting_arg, settings_given
from mi_plateau.config import (
    ANALYSIS,
    SETTING,
    AnalysisConfig,
    ConfigError,
    HessianSettings,
    RunOptions,
    SGLDSettings,
    settings,
)
from mi_plateau.config.options import with_old_keywords


def flag_help(command: str, flag: str) -> tuple[object, str]:
    """(default, help) of ``mi-plateau COMMAND FLAG`` as the parser has it."""
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    action = next(a for a in sub._actions if flag in a.option_strings)
    return action.default, action.help


@pytest.mark.parametrize("name", ["device", "precision"])
def test_every_command_with_the_flag_has_the_fields_default_and_help(name):
    f = next(f for f in fields(RunOptions) if f.name == name)
    flag = f.metadata["flag"]
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    having = [c for c, p in sub.items() if any(flag in a.option_strings for a in p._actions)]
    # train's --precision sets the config's train.precision (its help is that setting's: cli.TRAIN_FLAGS)
    having = [c for c in having if not (c == "train" and flag in {t[0] for t in TRAIN_FLAGS})]
    assert len(having) >= 3
    for command in having:
        assert flag_help(command, flag) == (f.default, f.metadata["help"]), command


def test_the_older_device_keyword_folds_into_the_options_with_a_warning():
    with pytest.warns(DeprecationWarning, match=r"analyze\(device=\.\.\.\) is deprecated"):
        o = with_old_keywords(RunOptions(progress=False), {"device": "cpu"}, "analyze")
    assert o == RunOptions(progress=False, device="cpu")
    assert with_old_keywords(None, {}, "analyze") == RunOptions()
    with pytest.raises(TypeError, match="unexpected keyword argument 'devise'"):
        with_old_keywords(None, {"devise": "cpu"}, "analyze")


def test_every_analysis_flag_is_a_fields_flag_with_its_help_and_bounds():
    """The analysis section's flags of ``analyze`` are its fields' (``setting(flag=...)``): help,
    default shown, the field's name as dest, its bounds refused in one line."""
    flagged = {s.flag: (key.split(".")[1], s) for key, _, s in settings(ANALYSIS) if s.flag}
    assert set(flagged) == {"--shifts", "--max-checkpoints"}
    plain = vars(build_parser().parse_args(["analyze", "RUN"]))
    for flag, (name, s) in flagged.items():
        default, help_ = flag_help("analyze", flag)
        assert default is None and help_.startswith(s.help) and plain[name] is None
    args = build_parser().parse_args(["analyze", "RUN", "--shifts", "1,3", "--max-checkpoints", "4", "--mean"])
    assert settings_given(AnalysisConfig, args) == {"shifts": (1, 3), "max_checkpoints": 4, "head_ablation": "mean"}
    assert settings_given(AnalysisConfig, build_parser().parse_args(["analyze", "RUN"])) == {"head_ablation": "zero"}
    for argv, words in ((["--max-checkpoints", "0"], "must be at least 1"), (["--shifts", ","], "at least one value")):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["analyze", "RUN", *argv])
        with pytest.raises(argparse.ArgumentTypeError, match=words):
            setting_arg(next(f for f in fields(AnalysisConfig) if f.metadata[SETTING].flag == argv[0]))(argv[1])


SECTIONS_OF_THEIR_OWN = {**ANALYSIS, "llc": SGLDSettings, "hessian": HessianSettings}


@pytest.mark.parametrize(
    "key, f, s", [x for x in settings(SECTIONS_OF_THEIR_OWN) if x[2].bounds], ids=lambda v: str(v)[:24]
)
def test_every_bound_of_a_section_of_its_own_is_enforced_in_one_line(key, f, s):
    section, name = key.split(".")
    kls = SECTIONS_OF_THEIR_OWN[section]
    default = getattr(kls(), name)
    bad = (0 if s.bounds.ge == 1 or s.bounds.gt == 0 else -1,)
    words = s.bounds.words(f.type.startswith(("int", "tuple[int")))
    with pytest.raises(ConfigError, match=rf"^{key}=.*: {re.escape(words)}$"):
        kls(**{name: bad if isinstance(default, tuple) else bad[0]})


def test_the_llc_flags_are_the_samplers_fields():
    for flag, name in (("--lr", "lr"), ("--localization", "localization")):
        f = next(f for f in fields(SGLDSettings) if f.name == name)
        default, help_ = flag_help("llc", flag)
        assert default is None and help_.startswith(f.metadata[SETTING].help) and f.metadata[SETTING].flag == flag
    with pytest.raises(argparse.ArgumentTypeError, match="positive number"):
        setting_arg(next(f for f in fields(SGLDSettings) if f.name == "lr"))("0")


def test_the_hessian_settings_the_log_keeps_are_the_declared_ones():
    from mi_plateau.reproduce.hessian import SETTINGS

    assert SETTINGS == {"n_examples": 512, "seed": 0, "k": 3, "tol": 1e-4, "dtype": "float32", "maxiter": 200}
    with pytest.raises(ConfigError, match="hessian.dtype='bf16': must be one of float32, float64"):
        HessianSettings(dtype="bf16")


def test_the_pass_cache_key_is_the_settings_it_had():
    """The analysis section as a config section changed no pass cache key: the same sha1 of the
    same dict (shifts, mean, min_gap, the derived version), for the defaults and a changed one."""
    import hashlib
    import json

    from mi_plateau.passes.analyze import PassConfig
    from mi_plateau.passes.head_scores import cache_version

    def old_key(shifts, mean, min_gap, ablation=None):
        d = {"shifts": list(shifts), "mean": mean, "min_gap": min_gap, "v": cache_version()}
        d |= {"ablation": ablation} if ablation else {}
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]

    assert PassConfig().key() == old_key((1,), False, 0.05)
    assert PassConfig(shifts=(1, 3), head_ablation="mean", max_checkpoints=3, n_boot=0).key() == old_key(
        (1, 3), True, 0.05
    )
    assert PassConfig(head_ablation="group_mean").key() == old_key((1,), False, 0.05, "group_mean")
    with pytest.raises(ValueError, match="zero"):
        PassConfig(head_ablation="nope")


def test_the_older_max_head_checkpoints_keyword_sets_the_field_with_a_warning():
    from mi_plateau.passes.analyze import PassConfig, pass_config_of

    old = {"max_head_checkpoints": 3, "device": "cpu"}
    with pytest.warns(DeprecationWarning, match=r"max_checkpoints=\.\.\."):
        pc = pass_config_of(AnalysisConfig(n_boot=0), old, "analyze")
    assert pc == PassConfig(n_boot=0, max_checkpoints=3) and type(pc) is PassConfig and old == {"device": "cpu"}
