"""``mi-plateau`` is the package's one command line: no module has its own ``python -m`` entry
point or argument parser. The studies that had one are subcommands (``linear-control``,
``sampled-pairs``, ``llc``, ``noise-split``, ``estimator-spread``: test_tool_commands.py), so their
bad input answers as every command's does."""

import ast
from pathlib import Path

import mi_plateau

PKG = Path(mi_plateau.__file__).parent
ENTRY_POINTS = ("__main__.py", "cli.py")  # `python -m mi_plateau` and the `mi-plateau` script


def modules():
    return [(f.relative_to(PKG).as_posix(), ast.parse(f.read_text())) for f in sorted(PKG.rglob("*.py"))]


def test_no_module_runs_as_a_script():
    bad = [
        name
        for name, tree in modules()
        if name not in ENTRY_POINTS
        for node in tree.body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
    ]
    assert not bad, f"a module with its own entry point: {bad}; make it a mi-plateau subcommand"


def test_only_the_command_line_builds_a_parser():
    bad = [
        name
        for name, tree in modules()
        if name != "cli.py" and not name.startswith("commands/")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ArgumentParser")
    ]
    assert not bad, f"an argument parser outside cli.py and commands/: {bad}"


def test_the_studies_are_subcommands():
    from mi_plateau.commands import COMMANDS

    assert {"linear-control", "sampled-pairs", "llc", "noise-split", "estimator-spread"} <= set(COMMANDS)
