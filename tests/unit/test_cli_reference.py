"""docs/cli.md is what the command line's --help says now (``python analyses/cli_reference.py``)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "analyses" / "cli_reference.py"


def test_the_command_reference_is_current():
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.OUT.read_text() == mod.reference(), "docs/cli.md is stale: run python analyses/cli_reference.py"
