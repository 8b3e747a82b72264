"""Shared fixtures. Tiers: tests/unit (tiny hand-built configs and models, known answers),
tests/integration (tiny runs trained end to end, the CLI, the report in Chromium), tests/slow
(paper scale; ``pytest -m slow``). The package is installed (``pip install -e .``): no path edits."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_cfg():
    from mi_plateau.config import preset

    return preset("tiny")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_cfg):
    """One tiny run trained to convergence, shared by the tests that only read it."""
    from mi_plateau.train import train

    out = tmp_path_factory.mktemp("runs") / "tiny"
    return train(tiny_cfg, out, progress=False)


def _run_cli(*args, env=None, cwd=None, input=None):
    """``mi-plateau ARGS`` in a fresh interpreter (``input``: its standard input); returns the
    CompletedProcess."""
    e = {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "mi_plateau", *args],
        capture_output=True,
        text=True,
        env=e,
        cwd=cwd,
        timeout=600,
        input=input,
    )


@pytest.fixture(scope="session")
def run_cli():
    """The command line as the user runs it: ``run_cli("summary", path)``."""
    return _run_cli


BROWSER_SKIP = "no Chromium found (kaleido's lookup: BROWSER_PATH, PATH): apt-get install chromium"


def fake_export(mp, write=lambda path, fig, **kw: Path(path)) -> None:
    """Static figure export replaced by ``write`` (default: writes nothing, returns the path) on
    a machine that seems to have a browser: the recipes take their export branch without one."""
    import mi_plateau.tabular as tabular

    mp.setattr(tabular, "chromium", lambda: "/usr/bin/chromium")
    mp.setattr(tabular, "write_figure", write)


def stub_svg(path, fig, **kw) -> Path:
    """A stand-in static export: a minimal SVG holding the figure's title (the real export, through
    Chromium, is tested by the ``browser`` tests)."""
    path = Path(path)
    title = fig.layout.title.text or ""
    path.write_text(f"<svg xmlns='http://www.w3.org/2000/svg'><title>{title}</title></svg>")
    return path


def pytest_collection_modifyitems(config, items):
    """Tests marked ``browser`` skip, with one line, where no Chromium is found: the README's test
    command then passes on a machine without a browser (static figures, the report in Chromium)."""
    from mi_plateau.tabular import chromium

    if chromium() is not None:
        return
    skip = pytest.mark.skip(reason=BROWSER_SKIP)
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


def _render_status(page: Path, tmp: Path) -> dict:
    """Load the page in headless Chromium (no network) and read the status the page wrote."""
    from mi_plateau.tabular import chromium

    args = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--dump-dom",
        "--virtual-time-budget=10000",
        page.resolve().as_uri() + "#selftest",  # the page also exercises its sliders and selects
    ]
    dom = subprocess.run(args, capture_output=True, text=True, timeout=180).stdout
    m = re.search(r'<div id="render-status"[^>]*>', dom)
    assert m, "the page never wrote its render status (did it load?)"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(0)))
    import html

    return {
        "errors": json.loads(html.unescape(attrs["errors"])),
        "plots": int(attrs["plots"]),
        "svgs": int(attrs["svgs"]),
        "expected": int(attrs["expected"]),
        "load_ms": int(attrs.get("loadms", -1)),
    }


@pytest.fixture(scope="session")
def render_status():
    """Load an HTML page in headless Chromium (no network) and return the render status it wrote
    (errors, plots, svgs, expected)."""
    from mi_plateau.tabular import chromium

    if chromium() is None:
        pytest.skip(BROWSER_SKIP)
    return _render_status
