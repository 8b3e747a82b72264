"""The writer: one checkpoint committed at a time, the lock, the clean-up after a dead writer,
and the rule that writers touch only their own files inside their own folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from .files import TMP_NAME, RunError, atomic_write_json, one_line, read_json, save_tensors, write_manifest
from .run import Run


def write_checkpoint(
    root: Path,
    manifest: dict[str, Any],
    record: dict[str, Any],
    wall_s: float,
    weights: dict,
    resume: dict,
    summary: dict[str, Any] | None = None,
    eval_s: float | None = None,
) -> None:
    """Write one checkpoint into the run folder ``root`` and commit it (the trainer's writer,
    the bench times the same function): the weights and the record beside them, the resume
    state, then the manifest naming all three (the commit point; ``summary``, if given, marks
    the run finished), then the previous resume state is deleted. ``manifest`` is updated in
    place. A kill at any moment leaves either the previous or this checkpoint committed.

    The first commit also records the folder's ``config.json`` in the manifest (``config``): the
    config the weights are trained with is then vouched for by the commit point, and the readers
    refuse a config.json edited afterwards (``Run.config``).

    The record file beside the weights also holds the costs: ``wall_s``, the training wall time
    up to this checkpoint across resumes (earlier checkpoints' evaluations included), and
    ``eval_s``, the seconds this checkpoint's evaluation took (``sweeps.table.run_costs``)."""
    root = Path(root)
    if "config" not in manifest and (root / "config.json").is_file():
        manifest["config"] = read_json(root / "config.json")
    step = record["step"]
    name = f"step_{step:06d}"
    digest = save_tensors(root / "ckpt" / f"{name}.safetensors", weights, {"step": str(step)})
    costs = {"wall_s": wall_s} if eval_s is None else {"wall_s": wall_s, "eval_s": eval_s}
    atomic_write_json(root / "ckpt" / f"{name}.json", {**record, **costs})
    resume_rel = f"resume/state_{step:06d}.safetensors"
    resume_digest = save_tensors(root / resume_rel, resume)
    old_resume = manifest.get("resume")
    manifest["checkpoints"].append(
        {
            "step": step,
            "weights": f"ckpt/{name}.safetensors",
            "sha256": digest,
            "record_file": f"ckpt/{name}.json",
            "record": record,
        }
    )
    manifest["resume"] = resume_rel
    manifest["resume_sha256"] = resume_digest
    if summary is not None:
        manifest["status"] = "finished"
        manifest["summary"] = summary
    write_manifest(root, manifest)  # the commit point (crash hook: "manifest")
    if old_resume and old_resume != resume_rel:
        (root / old_resume).unlink(missing_ok=True)


def check_own_folder(root: Path) -> None:
    """The writers' rule: a run folder, its ``ckpt/`` and ``resume/`` and the files the trainer
    rewrites are real directories and regular files of their own, never symbolic links (a link
    would let a write or a clean-up reach outside the folder)."""
    root = Path(root)
    for p in (
        root,
        root / "ckpt",
        root / "resume",
        root / ".lock",
        root / "manifest.json",
        root / "config.json",
        root / "command.json",
    ):
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
            stale_tmp = TMP_NAME.fullmatch(f.name) is not None and f.is_file()
            stale_resume = folder == run.path / "resume" and f.suffix == ".safetensors" and f.resolve() != keep
            if stale_tmp or stale_resume:
                f.unlink(missing_ok=True)
                gone.append(f)
    return gone


class RunLock:
    """An exclusive lock on a run folder, so two trainers never write into one run. ``wait``:
    wait for another holder to let go instead of refusing (a recipe's log: each
    read-merge-write is short, and two processes may share the log)."""

    def __init__(self, path: Path, what: str = "run folder", wait: bool = False):
        self.file = Path(path) / ".lock"
        self.fd: int | None = None
        self.what = what  # "run folder", "sweep folder" (``sweeps.run_sweep``), "recipe log" (``reproduce``)
        self.wait = wait

    def __enter__(self) -> RunLock:
        import fcntl

        self.file.parent.mkdir(parents=True, exist_ok=True)
        try:  # O_NOFOLLOW: a .lock that is a symbolic link is refused, its target never touched
            self.fd = os.open(self.file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            if self.file.is_symlink():
                raise RunError(f"{self.file}: is a symbolic link; refusing to lock through it") from None
            raise RunError(f"{self.file}: cannot be opened ({one_line(e)})") from None
        if not stat.S_ISREG(os.fstat(self.fd).st_mode):  # a FIFO or device: the pid cannot be written into it
            os.close(self.fd)
            self.fd = None
            raise RunError(f"{self.file}: not a regular file; remove it (the trainer makes a new lock file)")
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX if self.wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(self.fd)
            self.fd = None
            doing = "training into this run folder" if self.what == "run folder" else f"running this {self.what}"
            raise RunError(f"{self.file.parent}: another process (pid {holder}) is {doing}") from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            import fcntl

            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
