"""The reader: ``Run``, a run folder on disk (config, manifest, records, weights, models)."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import ConfigError, RunConfig, config_diff, extends, validate
from ..config.layout import token_labels
from ..frames import frame
from ..summaries import nearest
from .files import (
    FORMAT_VERSION,
    LEGACY_DEFAULTS,
    SEALED_FROM,
    RunError,
    file_sha256,
    load_tensors,
    manifest_digest,
    one_line,
    read_json,
)
from .settled import cached_exact, resolve

# What a record's numbers may be: every metric and these record fields are a finite number or
# null; losses (cross-entropies, nats) and counts are never negative; accuracies are shares.
LOSSES = ("L_seq", "Lc", "L1", "full_loss", "train_loss", "train_first_loss", "train_first_loss_z_deranged")
SHARES = ("acc_mean", "groups_ge80", "groups_100", "cand_acc", "cand_groups_ge80", "cand_groups_100", "clipped_frac")
RECORD_NUMBERS = (
    "examples_seen",
    "lr",
    "train_loss",
    "grad_norm_mean",
    "grad_norm_max",
    "grad_norm_sq_mean",
    "clipped_frac",
    "train_first_loss",
    "train_first_loss_z_deranged",
)
NON_NEGATIVE = (
    "examples_seen",
    "lr",
    "grad_norm_mean",
    "grad_norm_max",
    "grad_norm_sq_mean",
    "cand_mass",
    "groups_scored",
    "L_seq_se",
    "Lc_se",
    "swap_gap_se",
    "L_seq_rows",
    "rows_scored",
)


def _number_problem(k: str, v: Any) -> str | None:
    """Why ``v`` cannot be the record value ``k`` (None if it can)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "is not a finite number"
    if v < 0 and (k in LOSSES or k in SHARES or k in NON_NEGATIVE):
        return "is negative"
    if v > 1 and k in SHARES:
        return "is a share above 1"
    return None


def check_record(rec: dict, where: str, bad) -> None:
    """A checkpoint record's numbers as the readers (tau, plateau heights, the stopping rule)
    take them: ``bad(what)`` names the first value that cannot be one."""
    for k, v in rec["metrics"].items():
        why = _number_problem(k, v)
        if why:
            raise bad(f"{where}.metrics.{k} {v!r} {why}")
    for k in RECORD_NUMBERS:
        why = _number_problem(k, rec.get(k))
        if why:
            raise bad(f"{where}.{k} {rec.get(k)!r} {why}")


def check_manifest(m: Any, path: Path) -> None:
    """Refuse a manifest whose structure is not what this version writes (one line, names the file)."""
    if not isinstance(m, dict) or "format_version" not in m:
        raise RunError(f"{path}: not a mi_plateau manifest")
    v = m["format_version"]
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise RunError(f"{path}: malformed manifest (format_version {v!r} is not a positive integer)")
    if v > FORMAT_VERSION:
        raise RunError(
            f"{path}: format version {v} is newer than this mi_plateau understands ({FORMAT_VERSION}); "
            "upgrade mi_plateau"
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
    if m["status"] == "finished" and not ckpts:  # a finished run ends at a checkpoint
        raise bad("status 'finished' with no checkpoints")
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
        if rec.get("step") != step or isinstance(rec.get("step"), bool):  # the readers take a record's step from it
            raise bad(f"checkpoints[{i}].record.step {rec.get('step')!r} is not the checkpoint's step {step}")
        diverged = rec.get("diverged")
        if diverged is not None and not (isinstance(diverged, dict) and diverged.get("step") == step):
            raise bad(f"checkpoints[{i}].record.diverged is not the record of a divergence at its step")
        lc = rec["metrics"].get("Lc")
        if not (diverged is not None and lc is None) and (not isinstance(lc, (int, float)) or isinstance(lc, bool)):
            raise bad(f"checkpoints[{i}].record.metrics.Lc is not a number")  # a diverged record's may be null
        check_record(rec, f"checkpoints[{i}].record", bad)
    if "config" in m and not isinstance(m["config"], dict):
        raise bad("config is not an object")
    # a digest found is checked whatever the version says (a version moved back to 1 does not
    # turn the check off); from SEALED_FROM on it is required
    if "digest" in m or v >= SEALED_FROM:
        try:
            same = m.get("digest") == manifest_digest(m)
        except (RecursionError, TypeError, ValueError):  # nested too deeply, or keys JSON cannot sort
            raise bad("its content cannot be digested") from None
        if not same:
            raise bad("its content does not match its digest: edited or damaged after it was written")


class Run:
    """A run folder on disk. Reading never executes code and never leaves the folder."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        try:
            cfg, steps = self.config(), self.steps()
            status = self.manifest().get("status")
            span = f"steps {steps[0]}-{steps[-1]}" if steps else "no checkpoints"
            return (
                f"Run({str(self.path)!r}: preset {cfg.preset}, K={cfg.task.K}, n_b={cfg.task.n_b}, "
                f"{cfg.task.direction}, {len(steps)} checkpoints, {span}, {status})"
            )
        except RunError as e:
            return f"Run({str(self.path)!r}: unreadable: {e})"

    def __iter__(self):
        """(step, model) for every checkpoint, in step order; one model is built and reloaded."""
        from ..model import build_model  # here, not at the top: torch (a summary reads a run without it)

        model = build_model(self.config())
        for step in self.steps():
            load_state_checked(model, self.weights(step), self.weights_path(step))
            yield step, model

    # --- paths -------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The folder's name, as text: bytes that are not UTF-8 become U+FFFD, so the name can go
        into tables, DataFrames, reports and analysis folder names (the path keeps the bytes)."""
        try:
            raw = self.path.resolve().name
        except (RuntimeError, OSError):
            raw = self.path.name
        return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")

    def inside(self, rel: str) -> Path:
        """Resolve a manifest path, refusing anything that leaves the run folder."""
        where = self.path / "manifest.json"
        if not isinstance(rel, str) or not rel or "\x00" in rel:
            raise RunError(f"{where}: {rel!r} is not a file path")
        try:
            root = self.path.resolve()
            p = (root / rel).resolve()
        except (RuntimeError, OSError) as e:  # a symlink loop
            raise RunError(f"{where}: path {rel!r} cannot be resolved ({one_line(e)})") from None
        if os.path.isabs(rel) or root not in p.parents:
            raise RunError(f"{where}: path {rel!r} leaves the run folder")
        return p

    def exists(self) -> bool:
        return (self.path / "manifest.json").exists()

    def own_file(self, name: str) -> Path:
        """The run's own file ``name`` (``config.json``, ``manifest.json``, ``command.json``),
        refused if it is a symbolic link: a reader answers for the files inside this folder only
        (the writers refuse links too)."""
        p = self.path / name
        if p.is_symlink():
            raise RunError(f"{p}: is a symbolic link; a run's config and manifest are read from the run folder itself")
        return p

    # --- reading -----------------------------------------------------------------
    def config(self) -> RunConfig:
        """The run's config (``config.json``), validated as values given on the command line
        are, and checked against the config the manifest records (the one the weights were
        trained with): an edit of a setting is refused, naming those that differ, except a
        raised ``train.max_steps`` that ``config.extends`` allows (the documented ``--max-steps``
        raise, which moves only the stopping rule); the ``preset`` is a name, not compared. A
        run without a manifest yet, or one written before the manifest recorded its config,
        reads as its config.json says."""
        path = self.own_file("config.json")
        cfg = _parse_config(read_json(path), path, "not a mi_plateau config (expected a JSON object)")
        recorded = self.recorded_config()
        if recorded is not None:
            recorded = replace(recorded, preset=cfg.preset)  # the preset is a name; the four sections are the run
        if recorded is not None and recorded != cfg and not extends(recorded, cfg):
            diff = config_diff(recorded.to_dict(), cfg.to_dict())
            raise RunError(
                f"{path}: changed after the run was trained ({diff}; stored: the config manifest.json "
                "records, given: config.json)"
            )
        return cfg

    def recorded_config(self) -> RunConfig | None:
        """The config the manifest records, the one the run's weights were trained with (None
        where there is no manifest yet, or it predates the record)."""
        path = self.own_file("manifest.json")
        if not (path.exists() or path.is_symlink()):
            return None
        d = self.manifest().get("config")
        if d is None:
            return None
        return _parse_config(d, path, "malformed manifest (config is not an object)", check=False)

    def manifest(self) -> dict[str, Any]:
        path = self.own_file("manifest.json")
        if not self.path.is_dir():
            raise RunError(f"{self.path}: no such run folder")
        m = read_json(path)
        check_manifest(m, path)
        return m

    def record_files(self) -> list[dict[str, Any]]:
        """Each checkpoint's record file, in step order: its record and costs (``wall_s``, the
        training time before it; ``eval_s``, its evaluation's seconds)."""
        return [read_json(self.inside(c["record_file"])) for c in self.manifest()["checkpoints"]]

    def records(self, settled: bool = True) -> list[dict[str, Any]]:
        """The checkpoint records (step, examples seen, metrics), in step order. ``settled``:
        with the full-set values the run's settlement cache holds in place of the live
        estimates (``settled``, the cache ``mi_plateau.settle`` writes; those steps' metrics say
        ``settled``), so a curve or a crossing read from them is the settled one; False: as
        recorded while training."""
        records = [c["record"] for c in self.manifest()["checkpoints"]]
        if not settled:
            return records
        return resolve(records, cached_exact(self))

    def records_df(self):
        """The records as a pandas DataFrame: one row per checkpoint, the metrics as columns."""
        return frame(
            [{k: v for k, v in r.items() if k != "metrics"} | dict(r.get("metrics") or {}) for r in self.records()]
        )

    def eval_set(self):
        """The run's fixed evaluation set (tokens, groups, selectors, candidates; ``layout``
        gives the positions: ``first_pred`` is the query that predicts A1)."""
        from ..task import make_eval_set, make_task  # here, not at the top: torch

        cfg = self.config()
        return make_eval_set(make_task(cfg.task), cfg.eval)

    @staticmethod
    def to_str_tokens(tokens) -> list[str] | list[list[str]]:
        """String tokens of one sequence (or a batch): characters as themselves, specials BOS,
        SEP, EOS, PAD."""
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

    def weights(self, step: int) -> dict:
        for c in self.manifest()["checkpoints"]:
            if c["step"] == step:
                return load_tensors(self.inside(c["weights"]), c.get("sha256"))  # float32 only: load_tensors checks
        raise RunError(f"{self.path}: no checkpoint at step {step}; steps are {self.steps()}")

    def weights_sha256(self, steps) -> dict[int, str]:
        """{step: SHA-256 of its weights} for the checkpoints at ``steps``: the manifest's, or,
        for a manifest written before checksums were recorded, the file's own (what a cache of
        results computed from the weights is keyed by)."""
        want = set(steps)
        return {
            c["step"]: c.get("sha256") or file_sha256(self.inside(c["weights"]))
            for c in self.manifest()["checkpoints"]
            if c["step"] in want
        }

    def load_model(self, step: int | None = None):
        """The model at the checkpoint nearest ``step`` (the last one by default), in eval mode:
        a TransformerBridge, so ``run_with_cache``, ``run_with_hooks`` and ``W_Q`` ... work. A
        step between checkpoints snaps to the nearest one, as the CLI does, and says so."""
        from ..model import build_model  # here, not at the top: torch

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


def _parse_config(d: Any, path: Path, not_object: str, check: bool = True) -> RunConfig:
    """A config dict read from ``path`` as a RunConfig (a field added since the run was written
    gets the value it was trained with: ``LEGACY_DEFAULTS``); ``check``: validated as CLI values are."""
    if not isinstance(d, dict):
        raise RunError(f"{path}: {not_object}")
    for section, key, value, applies in LEGACY_DEFAULTS:
        if isinstance(d.get(section), dict) and applies(d):
            d[section].setdefault(key, value)
    try:
        cfg = RunConfig.from_dict(d)
        return validate(cfg) if check else cfg
    except (ConfigError, TypeError, ValueError) as e:
        raise RunError(f"{path}: {one_line(e)}") from None


def load_state_checked(model, state: dict, path: Path) -> None:
    """Load weights, failing with one line naming the file if the architecture differs."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        raise RunError(
            f"{path}: weights do not match this architecture (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    for k, v in expected.items():
        if tuple(state[k].shape) != tuple(v.shape):
            raise RunError(f"{path}: {k} has shape {tuple(state[k].shape)}, the model expects {tuple(v.shape)}")
        if state[k].dtype != v.dtype:
            raise RunError(f"{path}: {k} has dtype {state[k].dtype}, the model expects {v.dtype}")
    model.load_state_dict(state)
