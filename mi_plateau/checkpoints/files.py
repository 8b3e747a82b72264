"""Files of a run folder: atomic writes (temporary name, fsync, rename), safetensors and JSON
read back with one-line errors that name the file, and the crash hook the tests use."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ..summaries import nan_to_none

FORMAT_VERSION = 1
TMP_MARK = ".tmp"  # temporary files are ".<name>.tmp<pid>" beside their target
TMP_NAME = re.compile(r"\..+\.tmp\d+")


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


def one_line(e: BaseException) -> str:
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
        raise RunError(f"{path}: cannot be read ({one_line(e)})") from None
    try:
        tensors = load(data)
    except Exception as e:  # safetensors raises its own error types for truncation/corruption
        raise RunError(f"{path}: not a readable safetensors file ({type(e).__name__}: {one_line(e)})") from None
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


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RunError(f"{path}: file is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({one_line(e)})") from None
    except (OSError, RecursionError) as e:
        raise RunError(f"{path}: cannot be read ({one_line(e) or type(e).__name__})") from None
