"""Run folders: config, manifest, per-step weights (safetensors) with a JSON record beside each.

Layout of a run folder::

    config.json                 resolved RunConfig
    command.json                command line, versions, start time
    manifest.json               format version, status, the checkpoints (the commit point)
    ckpt/step_000050.safetensors  weights at step 50
    ckpt/step_000050.json       step, examples seen, metrics at step 50
    resume/state_000050.safetensors  optimizer moments and sampler RNG for exact resume

Every file is written atomically (write to a temporary name, fsync, rename), and the manifest
is written last: a checkpoint exists once the manifest names it. Nothing is unpickled: weights
are safetensors, everything else JSON. Paths in a manifest must stay inside the run folder.
The manifest stores the SHA-256 of every safetensors file it names; loading checks it.
See docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from .config import ConfigError, RunConfig
from .summaries import nan_to_none, nearest, summarize

FORMAT_VERSION = 1
TMP_MARK = ".tmp"  # temporary files are ".<name>.tmp<pid>" beside their target
_TMP_NAME = re.compile(r"\..+\.tmp\d+")


# Config fields added after FORMAT_VERSION 1 runs were written, with the value that describes
# how those runs were trained (a stored config without the field gets it, not today's default).
LEGACY_DEFAULTS = (("train", "impl", "bridge"),)


class RunError(RuntimeError):
    """A run folder or one of its files cannot be used; the message names the file."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            crash_point("write")  # test hook: die with a half-written temporary file
            f.write(data[half:])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(nan_to_none(obj), indent=1, sort_keys=True) + "\n").encode())


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def save_tensors(path: Path, tensors: dict, metadata: dict[str, str] | None = None) -> str:
    """Write tensors atomically as safetensors; returns the file's SHA-256 (hex)."""
    from safetensors.torch import save

    crash_point("ckpt_write")
    data = save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata)
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def load_tensors(path: Path, sha256: str | None = None) -> dict:
    """Read a safetensors file (never pickle); with `sha256`, the file must have that digest."""
    from safetensors.torch import load

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RunError(f"{path}: file is missing") from None
    except OSError as e:
        raise RunError(f"{path}: cannot be read ({_one_line(e)})") from None
    try:
        tensors = load(data)
    except Exception as e:  # safetensors raises its own error types for truncation/corruption
        raise RunError(f"{path}: not a readable safetensors file ({type(e).__name__}: {_one_line(e)})") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise RunError(f"{path}: checksum mismatch, the file is corrupt or was changed after it was written")
    return tensors


def crash_point(kind: str) -> None:
    """Test hook: MI_PLATEAU_CRASH=<kind>:<n> kills the process (like kill -9) at the n-th event."""
    spec = os.environ.get("MI_PLATEAU_CRASH")
    if not spec or not spec.startswith(kind + ":"):
        return
    counter = f"_MI_PLATEAU_CRASH_COUNT_{kind}"
    n = int(os.environ.get(counter, "0")) + 1
    os.environ[counter] = str(n)
    if n >= int(spec.split(":", 1)[1]):
        os._exit(137)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RunError(f"{path}: file is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({_one_line(e)})") from None
    except (OSError, RecursionError) as e:
        raise RunError(f"{path}: cannot be read ({_one_line(e) or type(e).__name__})") from None


def _check_manifest(m: Any, path: Path) -> None:
    """Refuse a manifest whose structure is not what this version writes (one line, names the file)."""
    if not isinstance(m, dict) or "format_version" not in m:
        raise RunError(f"{path}: not a mi_plateau manifest")
    v = m["format_version"]
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise RunError(f"{path}: malformed manifest (format_version {v!r} is not a positive integer)")
    if v > FORMAT_VERSION:
        raise RunError(
            f"{path}: format version {v} is newer than this mi_plateau understands ({FORMAT_VERSION}); upgrade mi_plateau"
        )

    def bad(what: str):
        return RunError(f"{path}: malformed manifest ({what})")

    if m.get("status") not in ("running", "finished"):
        raise bad(f"status {m.get('status')!r} is not 'running' or 'finished'")
    if not (m.get("resume") is None or isinstance(m.get("resume"), str)):
        raise bad("resume is not a path")
    ckpts = m.get("checkpoints")
    if not isinstance(ckpts, list):
        raise bad("checkpoints is not a list")
    prev = -1
    for i, c in enumerate(ckpts):
        if not isinstance(c, dict):
            raise bad(f"checkpoints[{i}] is not an object")
        step = c.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step <= prev:
            raise bad(f"checkpoints[{i}].step {step!r} is not an integer above the previous step")
        prev = step
        if not isinstance(c.get("weights"), str):
            raise bad(f"checkpoints[{i}].weights is not a path")
        rec = c.get("record")
        if not isinstance(rec, dict) or not isinstance(rec.get("metrics"), dict):
            raise bad(f"checkpoints[{i}].record has no metrics")
        if not isinstance(rec["metrics"].get("Lc"), (int, float)) or isinstance(rec["metrics"].get("Lc"), bool):
            raise bad(f"checkpoints[{i}].record.metrics.Lc is not a number")


class Run:
    """A run folder on disk. Reading never executes code and never leaves the folder."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        try:
            cfg, steps = self.config(), self.steps()
            status = self.manifest().get("status")
            span = f"steps {steps[0]}-{steps[-1]}" if steps else "no checkpoints"
            return (f"Run({str(self.path)!r}: preset {cfg.preset}, K={cfg.task.K}, n_b={cfg.task.n_b}, "
                    f"{cfg.task.direction}, {len(steps)} checkpoints, {span}, {status})")
        except RunError as e:
            return f"Run({str(self.path)!r}: unreadable: {e})"

    def __iter__(self):
        """(step, model) for every checkpoint, in step order; one model is built and reloaded."""
        from .model import build_model

        model = build_model(self.config())
        for step in self.steps():
            load_state_checked(model, self.weights(step), self.weights_path(step))
            yield step, model

    # --- paths -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.resolve().name

    def inside(self, rel: str) -> Path:
        """Resolve a manifest path, refusing anything that leaves the run folder."""
        where = self.path / "manifest.json"
        if not isinstance(rel, str) or not rel or "\x00" in rel:
            raise RunError(f"{where}: {rel!r} is not a file path")
        root = self.path.resolve()
        p = (root / rel).resolve()
        if os.path.isabs(rel) or root not in p.parents:
            raise RunError(f"{where}: path {rel!r} leaves the run folder")
        return p

    def exists(self) -> bool:
        return (self.path / "manifest.json").exists()

    # --- reading -----------------------------------------------------------------
    def config(self) -> RunConfig:
        path = self.path / "config.json"
        d = _read_json(path)
        if not isinstance(d, dict):
            raise RunError(f"{path}: not a mi_plateau config (expected a JSON object)")
        for section, key, value in LEGACY_DEFAULTS:
            if isinstance(d.get(section), dict):
                d[section].setdefault(key, value)
        try:
            from .config import validate

            return validate(RunConfig.from_dict(d))
        except (ConfigError, TypeError, ValueError) as e:
            raise RunError(f"{path}: {_one_line(e)}") from None

    def manifest(self) -> dict[str, Any]:
        path = self.path / "manifest.json"
        if not self.path.is_dir():
            raise RunError(f"{self.path}: no such run folder")
        m = _read_json(path)
        _check_manifest(m, path)
        return m

    def records(self) -> list[dict[str, Any]]:
        """The checkpoint records (step, examples seen, metrics), in step order."""
        return [c["record"] for c in self.manifest()["checkpoints"]]

    def records_df(self):
        """The records as a pandas DataFrame: one row per checkpoint, the metrics as columns."""
        from .frames import frame

        return frame([{k: v for k, v in r.items() if k != "metrics"} | dict(r.get("metrics") or {}) for r in self.records()])

    def eval_set(self):
        """The run's fixed evaluation set (tokens, groups, selectors, candidates; ``layout``
        gives the positions: ``first_pred`` is the query that predicts A1)."""
        from .task import make_eval_set, make_task

        cfg = self.config()
        return make_eval_set(make_task(cfg.task), cfg.eval)

    @staticmethod
    def to_str_tokens(tokens) -> list[str] | list[list[str]]:
        """String tokens of one sequence (or a batch): characters as themselves, specials BOS,
        SEP, EOS, PAD."""
        from .task import token_labels

        if getattr(tokens, "ndim", 1) == 2:
            return [token_labels(t) for t in tokens]
        return token_labels(tokens)

    def steps(self) -> list[int]:
        return [c["step"] for c in self.manifest()["checkpoints"]]

    def nearest_step(self, step: int) -> int:
        steps = self.steps()
        if not steps:
            raise RunError(f"{self.path}: the run has no checkpoints yet")
        if step < steps[0] or step > steps[-1]:
            raise RunError(f"--step {step} is outside this run: checkpoints exist from step {steps[0]} to {steps[-1]}")
        return nearest(steps, step)

    def summary(self) -> dict[str, Any]:
        """Plateau height, tau (both definition families) and convergence, from the checkpoint
        records (``summaries.summarize``), with the run's status and path; NaN becomes None."""
        manifest = self.manifest()
        s = summarize(self.config(), [c["record"] for c in manifest["checkpoints"]])
        s["status"] = manifest.get("status")
        s["run"] = str(self.path)
        return nan_to_none(s)

    def weights(self, step: int) -> dict:
        for c in self.manifest()["checkpoints"]:
            if c["step"] == step:
                return load_tensors(self.inside(c["weights"]), c.get("sha256"))
        raise RunError(f"{self.path}: no checkpoint at step {step}; steps are {self.steps()}")

    def load_model(self, step: int | None = None):
        """The model at the checkpoint nearest ``step`` (the last one by default), in eval mode:
        a TransformerBridge, so ``run_with_cache``, ``run_with_hooks`` and ``W_Q`` ... work. A
        step between checkpoints snaps to the nearest one, as the CLI does, and says so."""
        from .model import build_model

        cfg = self.config()
        steps = self.steps()
        if not steps:
            raise RunError(f"{self.path / 'manifest.json'}: the run has no checkpoints yet")
        if step is None:
            step = steps[-1]
        elif step not in steps:
            snapped = self.nearest_step(step)
            print(f"nearest checkpoint to {step}: {snapped}", file=sys.stderr)
            step = snapped
        model = build_model(cfg)
        load_state_checked(model, self.weights(step), self.weights_path(step))
        return model

    def weights_path(self, step: int) -> Path:
        for c in self.manifest()["checkpoints"]:
            if c["step"] == step:
                return self.inside(c["weights"])
        raise RunError(f"{self.path}: no checkpoint at step {step}")


def write_checkpoint(root: Path, manifest: dict[str, Any], record: dict[str, Any], wall_s: float, weights: dict,
                     resume: dict, summary: dict[str, Any] | None = None) -> None:
    """Write one checkpoint into the run folder ``root`` and commit it (the trainer's writer,
    the bench times the same function): the weights and the record beside them, the resume
    state, then the manifest naming all three (the commit point; ``summary``, if given, marks
    the run finished), then the previous resume state is deleted. ``manifest`` is updated in
    place. A kill at any moment leaves either the previous or this checkpoint committed."""
    root = Path(root)
    step = record["step"]
    name = f"step_{step:06d}"
    digest = save_tensors(root / "ckpt" / f"{name}.safetensors", weights, {"step": str(step)})
    atomic_write_json(root / "ckpt" / f"{name}.json", {**record, "wall_s": wall_s})
    resume_rel = f"resume/state_{step:06d}.safetensors"
    resume_digest = save_tensors(root / resume_rel, resume)
    old_resume = manifest.get("resume")
    manifest["checkpoints"].append(
        {"step": step, "weights": f"ckpt/{name}.safetensors", "sha256": digest, "record_file": f"ckpt/{name}.json", "record": record}
    )
    manifest["resume"] = resume_rel
    manifest["resume_sha256"] = resume_digest
    if summary is not None:
        manifest["status"] = "finished"
        manifest["summary"] = summary
    crash_point("pre_commit")  # test hook: all files of this checkpoint written, not yet committed
    atomic_write_json(root / "manifest.json", manifest)  # the commit point
    crash_point("post_commit")  # test hook: committed, the previous resume state not yet deleted
    if old_resume and old_resume != resume_rel:
        (root / old_resume).unlink(missing_ok=True)


def load_state_checked(model, state: dict, path: Path) -> None:
    """Load weights, failing with one line naming the file if the architecture differs."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        raise RunError(f"{path}: weights do not match this architecture (missing {missing[:3]}, unexpected {extra[:3]})")
    for k, v in expected.items():
        if tuple(state[k].shape) != tuple(v.shape):
            raise RunError(f"{path}: {k} has shape {tuple(state[k].shape)}, the model expects {tuple(v.shape)}")
        if state[k].dtype != v.dtype:
            raise RunError(f"{path}: {k} has dtype {state[k].dtype}, the model expects {v.dtype}")
    model.load_state_dict(state)


def check_own_folder(root: Path) -> None:
    """The writers' rule: a run folder, its ``ckpt/`` and ``resume/`` and the files the trainer
    rewrites are real directories and regular files of their own, never symbolic links (a link
    would let a write or a clean-up reach outside the folder)."""
    root = Path(root)
    for p in (root, root / "ckpt", root / "resume", root / ".lock", root / "manifest.json", root / "config.json",
              root / "command.json"):
        if p.is_symlink():
            raise RunError(f"{p}: is a symbolic link; a run folder's writers write only their own files inside it")
    for p in (root / "ckpt", root / "resume"):
        if p.exists() and not p.is_dir():
            raise RunError(f"{p}: is not a directory")


def refuse_inside_run(path: Path, what: str) -> None:
    """Writers other than the trainer never write into a run folder (its manifest is the run's
    commit point): refuse ``path`` if it or a folder above it holds a run."""
    p = Path(path).absolute()
    for folder in (p, *p.parents):
        if (folder / "manifest.json").is_file() and (folder / "config.json").is_file():
            raise RunError(f"{path}: is inside the run folder {folder}; write the {what} somewhere else")


def remove_stale_files(run: Run, manifest: dict[str, Any]) -> list[Path]:
    """Delete what a killed writer can leave behind: temporary files, and resume states the
    manifest does not name. Call only while holding the RunLock. Returns the deleted paths."""
    keep = run.inside(manifest["resume"]) if manifest.get("resume") else None
    gone = []
    for folder in (run.path, run.path / "ckpt", run.path / "resume"):
        if not folder.is_dir() or folder.is_symlink():  # never follow a link out of the folder
            continue
        for f in folder.iterdir():
            stale_tmp = _TMP_NAME.fullmatch(f.name) is not None and f.is_file()
            stale_resume = folder == run.path / "resume" and f.suffix == ".safetensors" and f.resolve() != keep
            if stale_tmp or stale_resume:
                f.unlink(missing_ok=True)
                gone.append(f)
    return gone


class RunLock:
    """An exclusive lock on a run folder, so two trainers never write into one run."""

    def __init__(self, path: Path):
        self.file = Path(path) / ".lock"
        self.fd: int | None = None

    def __enter__(self) -> "RunLock":
        import fcntl

        self.file.parent.mkdir(parents=True, exist_ok=True)
        try:  # O_NOFOLLOW: a .lock that is a symbolic link is refused, its target never touched
            self.fd = os.open(self.file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            if self.file.is_symlink():
                raise RunError(f"{self.file}: is a symbolic link; refusing to lock through it") from None
            raise RunError(f"{self.file}: cannot be opened ({_one_line(e)})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(self.fd)
            self.fd = None
            raise RunError(f"{self.file.parent}: another process (pid {holder}) is training into this run folder") from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
