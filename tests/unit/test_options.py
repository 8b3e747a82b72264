"""``RunOptions``: each option's flag and help declared once, on its field; the API's older
keywords folded into it for one release."""

from dataclasses import fields

import pytest

from mi_plateau.cli import TRAIN_FLAGS, build_parser
from mi_plateau.config import RunOptions
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
