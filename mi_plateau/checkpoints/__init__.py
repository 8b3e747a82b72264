"""The checkpoints stage. Run folders: config, manifest, per-step weights (safetensors) with a JSON record beside each.

Layout of a run folder::

    config.json                 resolved RunConfig
    command.json                command line, versions, start time
    manifest.json               format version, status, the checkpoints (the commit point)
    ckpt/step_000050.safetensors  weights at step 50
    ckpt/step_000050.json       step, examples seen, metrics at step 50
    resume/state_000050.safetensors  optimizer moments and sampler RNG for exact resume
    settled.json                the settlement's full-set scorings, per step (``settled``)

Every file is written atomically (write to a temporary name, fsync, rename), and the manifest
is written last: a checkpoint exists once the manifest names it. Nothing is unpickled: weights
are safetensors, everything else JSON. Paths in a manifest must stay inside the run folder.
The manifest stores the SHA-256 of every safetensors file it names and the config the run was
trained with, and is sealed by a digest of its own content; loading checks all three (an edited
config.json or an edited record is refused).
See docs/reliability.md.
"""

from .files import (
    FORMAT_VERSION,
    LEGACY_DEFAULTS,
    TMP_MARK,
    TMP_NAME,
    RunError,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    crash_point,
    load_tensors,
    manifest_digest,
    one_line,
    read_json,
    save_tensors,
    write_manifest,
)
from .run import Run, check_manifest, load_state_checked
from .writer import RunLock, check_own_folder, refuse_inside_run, remove_stale_files, write_checkpoint

__all__ = [
    "FORMAT_VERSION",
    "LEGACY_DEFAULTS",
    "TMP_MARK",
    "TMP_NAME",
    "Run",
    "RunError",
    "RunLock",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_manifest",
    "check_own_folder",
    "crash_point",
    "load_state_checked",
    "load_tensors",
    "manifest_digest",
    "one_line",
    "read_json",
    "refuse_inside_run",
    "remove_stale_files",
    "save_tensors",
    "write_checkpoint",
    "write_manifest",
]
