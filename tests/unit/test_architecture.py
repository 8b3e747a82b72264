"""The package's import graph, read with ``ast`` (function-local imports included): no cycle
between modules, and no module imports one from a later pipeline stage."""

import ast
import sys
from pathlib import Path

import mi_plateau

PKG = Path(mi_plateau.__file__).parent

# The pipeline, earliest first; a module may import only from its own stage or earlier ones.
STAGES = [
    ("config", "definitions", "frames", "paper"),
    ("crossings",),
    ("summaries", "fits"),
    ("task", "devices"),
    ("model",),
    ("interventions",),
    ("metrics",),
    ("checkpoints",),
    ("settle",),
    ("train",),
    ("passes", "replays", "estimators", "control"),
    ("outputs", "figures"),
    ("report",),
    ("api", "sweeps", "selfcheck"),
    ("scorecard",),
    ("reproduce", "bench"),
    ("commands", "cli", "__main__", "__init__"),
]
RANK = {name: i for i, names in enumerate(STAGES) for name in names}


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_edges() -> dict[str, set[str]]:
    """module -> the package modules it imports (resolved, ``mi_plateau.x.y``)."""
    modules = {module_name(f): f for f in PKG.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for mod, f in modules.items():
        pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                if t in modules and t != mod:
                    edges.setdefault(mod, set()).add(t)
    return edges


def stage(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_stage():
    missing = sorted({stage(m) for m in import_edges()} - set(RANK))
    assert not missing, f"modules without a pipeline stage in this test: {missing}"


def test_no_import_from_a_later_stage():
    bad = [f"{a} -> {b}" for a, bs in import_edges().items() for b in bs if RANK[stage(b)] > RANK[stage(a)]]
    assert not bad, "imports from a later pipeline stage:\n" + "\n".join(sorted(bad))


def test_no_import_cycle():
    edges = import_edges()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, path: list[str]) -> bool:
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cycle.extend(path[path.index(n) :] + [n] if n in path else [m, n])
                return True
            if n not in state and visit(n, path + [n]):
                return True
        state[m] = 2
        return False

    assert not any(visit(m, [m]) for m in sorted(edges) if m not in state), " -> ".join(cycle)


def test_every_relative_import_resolves():
    """A relative import (function-local ones too) names a module of the package."""
    modules = {module_name(f) for f in PKG.rglob("*.py")}
    bad = []
    for f in PKG.rglob("*.py"):
        mod = module_name(f)
        pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
                if base not in modules:
                    bad.append(f"{mod}: from {'.' * node.level}{node.module or ''} import ...")
    assert not bad, bad


def test_no_private_name_imported_from_another_module():
    bad = []
    for f in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("mi_plateau")):
                bad += [f"{module_name(f)}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, bad


def test_the_checker_sees_a_planted_violation(tmp_path, monkeypatch):
    """The graph reader resolves relative and function-local imports (so the checks can fail)."""
    pkg = tmp_path / "mi_plateau"
    (pkg / "passes").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("def f():\n    from .report import x\n")
    (pkg / "report.py").write_text("from .config import f\n")
    (pkg / "passes" / "__init__.py").write_text("")
    (pkg / "passes" / "a.py").write_text("from ..config import _hidden\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", pkg)
    edges = import_edges()
    assert "mi_plateau.report" in edges["mi_plateau.config"] and "mi_plateau.config" in edges["mi_plateau.passes.a"]
