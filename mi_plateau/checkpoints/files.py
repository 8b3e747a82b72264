"""Files of a run folder: atomic writes (temporary name, fsync, rename), safetensors and JSON
read back with one-line errors that name the file, and the crash hook the tests use."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from ..summaries import nan_to_none

FORMAT_VERSION = 2
# From this format version on a manifest carries ``digest``, the SHA-256 of the rest of it
# (``manifest_digest``): an in-range edit of a record or of the config it vouches for is refused.
SEALED_FROM = 2
TMP_MARK = ".tmp"  # temporary files are ".<name>.tmp<pid>" beside their target
TMP_NAME = re.compile(r"\..+\.tmp\d+")


# Config fields added after FORMAT_VERSION 1 runs were written, with the value that describes
# how those runs were trained (a stored config without the field gets it, not today's default).
LEGACY_DEFAULTS = (
    ("train", "impl", "bridge", lambda d: True),
    ("train", "precision", "fp32", lambda d: True),  # before train.precision existed every run was fp32
    # only where it changes what was trained: without label noise the mode means nothing
    ("task", "label_noise_mode", "per_draw", lambda d: bool(d.get("task", {}).get("label_noise"))),
)


class RunError(RuntimeError):
    """A run folder or one of its files cannot be used; the message names the file."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    what = written_kind(path)
    crash_point(what, "before")  # test hooks: nothing of this file on disk yet
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            crash_point(what, "half")  # a half-written temporary file beside the target
            f.write(data[half:])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.filename is None:  # ENOSPC from a write names no file: name the one being written
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    crash_point(what, "after")  # the file is in place (for the manifest: committed)


def atomic_write_text(path: Path, text: str) -> None:
    """Text as UTF-8; a character UTF-8 cannot hold (a run folder's name that is not valid UTF-8
    arrives as lone surrogates) is written as '?', so the document stays valid UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8", "replace"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(nan_to_none(obj), indent=1, sort_keys=True) + "\n").encode())


def manifest_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of a manifest without its ``digest``, over its canonical JSON (sorted keys, no
    spaces, NaN as null: what a reader sees after a round trip through the file)."""
    body = {k: v for k, v in nan_to_none(manifest).items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_manifest(root: Path, manifest: dict[str, Any]) -> None:
    """Commit ``manifest`` as ``root/manifest.json``, sealed: the current format version and its
    digest are set on the dict (in place) before the atomic write."""
    manifest["format_version"] = FORMAT_VERSION
    manifest["digest"] = manifest_digest(manifest)
    atomic_write_json(Path(root) / "manifest.json", manifest)


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def save_tensors(path: Path, tensors: dict, metadata: dict[str, str] | None = None) -> str:
    """Write tensors atomically as safetensors; returns the file's SHA-256 (hex)."""
    from safetensors.torch import save

    data = save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata)
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


# Nothing this toolkit writes comes near these; a file above them is not a run's file.
MAX_JSON_BYTES = 256 << 20
MAX_TENSOR_BYTES = 4 << 30


def read_regular(path: Path, limit: int, check=None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes. A FIFO, device, directory or
    socket is refused without blocking (opened non-blocking, checked with fstat); a symlink loop
    or an unreadable file is a one-line RunError naming the file. ``check(f, size)``, given the
    open file and its size, may refuse it from its header before the body is read."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise RunError(f"{path}: file is missing") from None
    except OSError as e:
        raise RunError(f"{path}: cannot be read ({one_line(e)})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RunError(f"{path}: not a regular file")
        raise RunError(f"{path}: {st.st_size} bytes, larger than any file a run writes ({limit} bytes at most)")
    with os.fdopen(fd, "rb") as f:
        try:
            if check is not None:
                check(f, st.st_size)
                f.seek(0)
            return f.read()
        except OSError as e:
            raise RunError(f"{path}: cannot be read ({one_line(e)})") from None


def _safetensors_size(f, size: int) -> None:
    """A safetensors file is 8 bytes of header length, the JSON header, then the tensors' bytes;
    its size must be what the header says."""
    head = f.read(8)
    n = int.from_bytes(head, "little") if len(head) == 8 else -1
    if n < 2 or 8 + n > size:
        raise ValueError(f"header length {n} does not fit a file of {size} bytes")
    try:
        header = json.loads(f.read(n))
        ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"bad header ({one_line(e)})") from None
    want = 8 + n + max(ends, default=0)
    if want != size:
        raise ValueError(f"the header describes {want} bytes, the file has {size}")


def load_tensors(path: Path, sha256: str | None = None) -> dict:
    """Read a safetensors file (never pickle); with `sha256`, the file must have that digest."""
    from safetensors.torch import load

    path = Path(path)

    def check(f, size):
        try:
            _safetensors_size(f, size)
        except ValueError as e:
            raise RunError(f"{path}: not a readable safetensors file ({e})") from None

    data = read_regular(path, MAX_TENSOR_BYTES, check)
    try:
        tensors = load(data)
    except Exception as e:  # safetensors raises its own error types for truncation/corruption
        raise RunError(f"{path}: not a readable safetensors file ({type(e).__name__}: {one_line(e)})") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise RunError(f"{path}: checksum mismatch, the file is corrupt or was changed after it was written")
    # a run stores its weights and AdamW's moments in float32: a file rewritten in another
    # precision (with its checksum updated) would be cast on load and change the run unseen
    odd = sorted(k for k, v in tensors.items() if v.is_floating_point() and str(v.dtype) != "torch.float32")
    if odd:
        raise RunError(
            f"{path}: {odd[0]} has dtype {tensors[odd[0]].dtype}, a run's weights are float32 (its optimizer state too)"
        )
    return tensors


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a regular file of a run (weights or resume state), read as the
    loaders read it."""
    return hashlib.sha256(read_regular(Path(path), MAX_TENSOR_BYTES)).hexdigest()


# the crash hook's names for a run folder's files (written_kind); any other file goes by its name
RUN_FILE_KINDS = {"command.json": "command", "config.json": "config", "manifest.json": "manifest"}
CRASH_MOMENTS = ("before", "half", "after")


def written_kind(path: Path) -> str:
    """What a write puts on disk, as ``MI_PLATEAU_CRASH`` names it: ``weights`` and ``record``
    (``ckpt/``), ``resume`` (``resume/``), ``command``, ``config``, ``manifest``; any other file
    (a sweep's ``sweep.json``, an analysis table) by its file name."""
    path = Path(path)
    if path.parent.name == "ckpt":
        return "weights" if path.suffix == ".safetensors" else "record"
    if path.parent.name == "resume":
        return "resume"
    return RUN_FILE_KINDS.get(path.name, path.name)


def crash_point(what: str, moment: str = "before") -> None:
    """Test hook: kill the process (``os._exit(137)``, as kill -9 would) where
    ``MI_PLATEAU_CRASH=<what>:<n>[:<moment>]`` says, from the n-th time ``what`` reaches
    ``moment`` in this process on. ``what`` is a write (``written_kind``: ``weights``,
    ``manifest``, ...; ``moment`` ``before`` it starts, ``half`` with half of it in the temporary
    file, ``after`` it is renamed into place; ``before`` if the value names none) or ``step``
    (a training step taken, before the checkpoint due at it).

    ``manifest:3:half`` dies halfway through the third manifest write, ``weights:1`` before
    the first weights file, ``step:53`` after the 53rd step. A value that is not of this form is
    a ValueError, so a test never waits for a crash that cannot come."""
    spec = os.environ.get("MI_PLATEAU_CRASH")
    if not spec:
        return
    want, _, rest = spec.partition(":")
    n, _, at = rest.partition(":")
    at = at or "before"
    if not want or not n.isdigit() or int(n) < 1 or at not in CRASH_MOMENTS:
        raise ValueError(f"MI_PLATEAU_CRASH={spec}: expected <what>:<n>[:<moment>], n >= 1, moment in {CRASH_MOMENTS}")
    if (want, at) != (what, moment):
        return
    counter = "_MI_PLATEAU_CRASH_COUNT_" + re.sub(r"\W", "_", f"{what}_{moment}")
    seen = int(os.environ.get(counter, "0")) + 1
    os.environ[counter] = str(seen)  # in the environment: a process started from this one counts on
    if seen >= int(n):
        os._exit(137)


def read_json(path: Path) -> Any:
    data = read_regular(path, MAX_JSON_BYTES)
    try:
        return json.loads(data.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({one_line(e)})") from None
    except RecursionError:
        raise RunError(f"{path}: not valid JSON (nested too deeply)") from None


def provenance(prog: str, argv: list[str] | None = None) -> dict[str, Any]:
    """What a record written for docs names as its origin: ``command`` (``prog`` and its
    arguments, ``argv`` or else the process's own), the code's ``commit`` (``code_commit``) and
    the UTC ``date``."""
    import datetime as dt

    args = argv if argv is not None else sys.argv[1:]
    return {
        "command": " ".join([prog, *args]),
        "commit": code_commit(),
        "date": dt.datetime.now(dt.timezone.utc).date().isoformat(),
    }


def writable_out(out: str | os.PathLike | None) -> None:
    """Refuse, before any work, an output file that cannot be written: its folder missing or not
    writable, or the name an existing folder (a command would otherwise compute for minutes and
    then fail to write)."""
    if not out:
        return
    path = Path(out)
    if path.is_dir():
        raise RunError(f"--out {out}: is a folder; name the file to write")
    if not path.parent.is_dir():
        raise RunError(f"--out {out}: no folder {path.parent}")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise RunError(f"--out {out}: folder {path.parent} is not writable")


def emit_json(doc: Any, out: str | os.PathLike | None) -> None:
    """``doc`` as indented JSON (NaN as null) into the file ``out`` (written atomically), or onto
    stdout."""
    text = json.dumps(nan_to_none(doc), indent=1) + "\n"
    if out:
        atomic_write_text(Path(out), text)
    else:
        print(text, end="")


def code_commit() -> str | None:
    """The git commit of the code here (None outside a checkout; "+changes" where tracked files
    differ from it): what a snapshot or a replay written to docs names as its code."""
    import subprocess

    def git(*args: str):
        return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=Path(__file__).parent)

    try:
        out = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
        return (out.stdout.strip() + ("+changes" if dirty else "")) or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None
