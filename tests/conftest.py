"""Shared fixtures. Tiers: tests/unit (tiny hand-built configs and models, known answers),
tests/integration (tiny runs trained end to end, the CLI, the report in Chromium), tests/slow
(paper scale; ``pytest -m slow``). The package is installed (``pip install -e .``): no path edits."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_cfg():
    from mi_plateau.config import preset

    return preset("tiny")


def _perturbed_tiny(overrides: dict, seed: int, scale: float = 0.5):
    import torch

    from mi_plateau.config import preset, with_overrides
    from mi_plateau.model import build_model
    from mi_plateau.task import make_eval_set, make_task

    cfg = with_overrides(preset("tiny"), overrides)
    torch.manual_seed(seed)
    model = build_model(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn_like(p))
    return cfg, model, make_eval_set(make_task(cfg.task), cfg.eval)


@pytest.fixture(scope="session")
def perturbed_tiny():
    """``make(overrides, seed, scale=0.5)``: (config, model, evaluation set) of the tiny preset
    with ``overrides``, its weights moved off the init by ``scale`` x a normal seeded by ``seed``
    (random, not tiny init: the selector and the heads matter)."""
    return _perturbed_tiny


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_cfg):
    """One tiny run trained to convergence, shared by the tests that only read it."""
    from mi_plateau.train import train

    out = tmp_path_factory.mktemp("runs") / "tiny"
    return train(tiny_cfg, out, progress=False)


# ``mi-plateau ARGS`` as ``python -m mi_plateau`` runs it, minus the interpreter start: one
# process per test session imports the toolkit and its heavy packages once (with what the first
# model built in a process loads lazily), then forks a child per command. The child takes the
# command's working directory, environment, standard streams and argv, and runs ``mi_plateau``'s
# __main__ as ``-m`` does (its exit code, traceback or ``os._exit`` are the command's own). Each
# request is a JSON line; the answers are the child's pid, then its exit code.
_FORKER = """
import atexit, importlib, json, os, runpy, sys, traceback
import mi_plateau.cli, mi_plateau.train, mi_plateau.passes, mi_plateau.report  # noqa: F401
# the first model a process builds loads many more modules (lazily): a child builds one and names
# them, and they are imported here; nothing is computed here, so no thread pool is forked
r, w = os.pipe()
if os.fork() == 0:
    from mi_plateau.config import preset
    from mi_plateau.model.bridge import build_model
    before = set(sys.modules)
    build_model(preset("tiny"))
    os.write(w, "\\n".join(sorted(set(sys.modules) - before)).encode())
    os._exit(0)
os.close(w)
with os.fdopen(r) as names:
    loaded = names.read().split()
os.wait()
for name in loaded:
    try:
        importlib.import_module(name)
    except Exception:
        pass
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, key in ((0, "stdin"), (1, "out"), (2, "err")):
            os.dup2(os.open(req[key], os.O_WRONLY if fd else os.O_RDONLY), fd)
        sys.stdin, sys.stdout, sys.stderr = (
            open(fd, mode, encoding=f.encoding, errors=f.errors, closefd=False)
            for fd, mode, f in ((0, "r", sys.stdin), (1, "w", sys.stdout), (2, "w", sys.stderr))
        )
        sys.argv = [mi_plateau.__file__, *req["args"]]
        try:
            runpy.run_module("mi_plateau", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:  # as the interpreter reads sys.exit's argument
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()  # then out without tearing the thousands of loaded modules down
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    answer.write(json.dumps(pid) + "\\n")
    answer.flush()
    answer.write(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])) + "\\n")
    answer.flush()
"""
_forker: list = []  # the session's forking process, started by the first command
# read once at interpreter start: a command that sets one of these needs a fresh interpreter
_IMPORT_TIME_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED")


def _run_cli(*args, env=None, cwd=None, input=None, timeout=600):
    """``mi-plateau ARGS`` (``input``: its standard input; ``env``: added to this process's
    environment); returns a CompletedProcess. Runs in a child of the session's forking process
    (``_FORKER``), or in a fresh interpreter where ``env`` changes what is read at start-up."""
    e = {k: v for k, v in os.environ.items() if k != "MI_PLATEAU_CRASH"}
    e.update(env or {})
    cmd = [sys.executable, "-m", "mi_plateau", *args]
    if any(v != os.environ.get(k) for k, v in (env or {}).items() if k in _IMPORT_TIME_ENV):
        return subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout, input=input)
    if not _forker:
        _forker.append(
            subprocess.Popen([sys.executable, "-c", _FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        )
    proc = _forker[0]
    with tempfile.TemporaryDirectory() as tmp:
        files = {k: os.path.join(tmp, k) for k in ("stdin", "out", "err")}
        Path(files["stdin"]).write_text(input or "")
        Path(files["out"]).touch()
        Path(files["err"]).touch()
        request = {"args": list(map(str, args)), "env": e, "cwd": str(cwd or os.getcwd()), **files}
        proc.stdin.write((json.dumps(request) + "\n").encode())
        pid = json.loads(proc.stdout.readline())  # unbuffered: select sees what readline has not read
        if not select.select([proc.stdout], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(cmd, timeout)
        rc = json.loads(proc.stdout.readline())
        return subprocess.CompletedProcess(cmd, rc, Path(files["out"]).read_text(), Path(files["err"]).read_text())


@pytest.fixture(scope="session", autouse=True)
def _close_forker():
    yield
    for proc in _forker:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()


@pytest.fixture(scope="session")
def run_cli():
    """The command line as the user runs it: ``run_cli("summary", path)``."""
    return _run_cli


BROWSER_SKIP = "no Chromium found (kaleido's lookup: BROWSER_PATH, PATH): apt-get install chromium"


def fake_export(mp, write=lambda path, fig, **kw: Path(path)) -> None:
    """Static figure export replaced by ``write`` (default: writes nothing, returns the path) on
    a machine that seems to have a browser: the recipes take their export branch without one."""
    import mi_plateau.outputs as outputs

    mp.setattr(outputs, "chromium", lambda: "/usr/bin/chromium")
    mp.setattr(outputs, "write_figure", write)


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
    from mi_plateau.outputs import chromium

    if chromium() is not None:
        return
    skip = pytest.mark.skip(reason=BROWSER_SKIP)
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


def _render_status(page: Path, tmp: Path) -> dict:
    """Load the page in headless Chromium (no network) and read the status the page wrote."""
    from mi_plateau.outputs import chromium

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
    from mi_plateau.outputs import chromium

    if chromium() is None:
        pytest.skip(BROWSER_SKIP)
    return _render_status
