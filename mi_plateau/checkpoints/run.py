"""The reader: ``Run``, a run folder on disk (config, manifest, records, weights, models)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..config import ConfigError, RunConfig
from ..summaries import nan_to_none, nearest, summarize
from .files import FORMAT_VERSION, LEGACY_DEFAULTS, RunError, load_tensors, one_line, read_json

def check_manifest(m: Any, path: Path) -> None:
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
        if rec.get("step") != step or isinstance(rec.get("step"), bool):  # the readers take a record's step from it
            raise bad(f"checkpoints[{i}].record.step {rec.get('step')!r} is not the checkpoint's step {step}")
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
        from ..model import build_model

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

    # --- reading -----------------------------------------------------------------
    def config(self) -> RunConfig:
        path = self.path / "config.json"
        d = read_json(path)
        if not isinstance(d, dict):
            raise RunError(f"{path}: not a mi_plateau config (expected a JSON object)")
        for section, key, value, applies in LEGACY_DEFAULTS:
            if isinstance(d.get(section), dict) and applies(d):
                d[section].setdefault(key, value)
        try:
            from ..config import validate

            return validate(RunConfig.from_dict(d))
        except (ConfigError, TypeError, ValueError) as e:
            raise RunError(f"{path}: {one_line(e)}") from None

    def manifest(self) -> dict[str, Any]:
        path = self.path / "manifest.json"
        if not self.path.is_dir():
            raise RunError(f"{self.path}: no such run folder")
        m = read_json(path)
        check_manifest(m, path)
        return m

    def records(self) -> list[dict[str, Any]]:
        """The checkpoint records (step, examples seen, metrics), in step order."""
        return [c["record"] for c in self.manifest()["checkpoints"]]

    def records_df(self):
        """The records as a pandas DataFrame: one row per checkpoint, the metrics as columns."""
        from ..frames import frame

        return frame([{k: v for k, v in r.items() if k != "metrics"} | dict(r.get("metrics") or {}) for r in self.records()])

    def eval_set(self):
        """The run's fixed evaluation set (tokens, groups, selectors, candidates; ``layout``
        gives the positions: ``first_pred`` is the query that predicts A1)."""
        from ..task import make_eval_set, make_task

        cfg = self.config()
        return make_eval_set(make_task(cfg.task), cfg.eval)

    @staticmethod
    def to_str_tokens(tokens) -> list[str] | list[list[str]]:
        """String tokens of one sequence (or a batch): characters as themselves, specials BOS,
        SEP, EOS, PAD."""
        from ..task import token_labels

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
                path = self.inside(c["weights"])
                tensors = load_tensors(path, c.get("sha256"))
                odd = sorted(k for k, v in tensors.items() if str(v.dtype) != "torch.float32")
                if odd:  # the toolkit trains and stores fp32
                    raise RunError(f"{path}: {odd[0]} has dtype {tensors[odd[0]].dtype}, a run's weights are float32")
                return tensors
        raise RunError(f"{self.path}: no checkpoint at step {step}; steps are {self.steps()}")

    def load_model(self, step: int | None = None):
        """The model at the checkpoint nearest ``step`` (the last one by default), in eval mode:
        a TransformerBridge, so ``run_with_cache``, ``run_with_hooks`` and ``W_Q`` ... work. A
        step between checkpoints snaps to the nearest one, as the CLI does, and says so."""
        from ..model import build_model

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
