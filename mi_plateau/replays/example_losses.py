"""Every evaluation example's losses at a run's checkpoints, scored once per step and kept, so
that several replays of one run (``replays.sampled``, ``replays.noise``) share one scoring; with
a ``keep`` folder also on disk, so that a replay run again on a run that has trained further
scores only the new checkpoints."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..checkpoints import Run, load_state_checked, load_tensors, save_tensors


class ExampleLosses:
    """Every evaluation example's L_seq at a run's checkpoints, one model loaded once and refilled
    per step, each step scored once and kept: hand one to ``sampled_tau`` and ``sampled_width``
    and the two replays of a run share their scoring (``summary --sampled-tau --sampled-width``).
    ``scored``: the steps scored, in order (read from ``keep`` or computed). ``keep``: a folder
    that holds each step's scores as safetensors, named by the step and its weights' checksum
    (a checkpoint rewritten with other weights is scored again)."""

    def __init__(self, run: Run, progress: bool = False, keep: str | Path | None = None):
        self.run, self.progress = run, progress
        self.keep = Path(keep) if keep is not None else None
        self.ev = run.eval_set()
        self.scored: list[int] = []
        self._kept: dict[int, dict[str, np.ndarray]] = {}
        self._model = None

    def __call__(self, step: int) -> np.ndarray:
        return self.at(step)["L_seq"]

    def at(self, step: int) -> dict[str, np.ndarray]:
        """Every example's ``L_seq``, ``Lc`` and ``swap_gap`` at ``step`` (``metrics.example_losses``,
        as float64), scored on the first call for the step and kept."""
        if step in self._kept:
            return self._kept[step]
        import torch

        kept = self._kept_file(step)
        if kept is not None and kept.is_file():
            out = {k: v.double().numpy() for k, v in load_tensors(kept).items()}
            return self._keep(step, out)

        from ..metrics import example_losses  # here, not at the top: torch (a summary imports this module)

        if self._model is None:
            self._model = self.run.load_model(step)
        load_state_checked(self._model, self.run.weights(step), self.run.weights_path(step))
        with torch.no_grad():
            got = example_losses(self._model, self.ev)
        if kept is not None:  # the scores are float32 numbers: kept as such, read back exactly
            kept.parent.mkdir(parents=True, exist_ok=True)
            save_tensors(kept, {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in got.items()})
        return self._keep(step, {k: np.asarray(v, dtype=np.float64) for k, v in got.items()})

    def _kept_file(self, step: int) -> Path | None:
        if self.keep is None:
            return None
        sha = self.run.weights_sha256([step])[step]
        return self.keep / f"step_{step:06d}_{sha[:16]}.safetensors"

    def _keep(self, step: int, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._kept[step] = out
        self.scored.append(step)
        if self.progress:
            L = out["L_seq"].mean()
            print(f"\r{self.run.path.name}: step {step}, L_seq {L:.3f}", end="", flush=True, file=sys.stderr)
        return out


def replay_scorer(run: Run, shared: ExampleLosses | None, progress: bool):
    """(a function giving every evaluation example's L_seq at a step, the steps this replay
    read, the evaluation set): ``shared`` where given (one scoring per step across replays),
    else a fresh ``ExampleLosses``."""
    if shared is None:
        shared = ExampleLosses(run, progress)
    elif shared.run.path.resolve() != run.path.resolve():
        raise ValueError(f"the shared losses belong to {shared.run.path}, not {run.path}")
    read: list[int] = []

    def losses(step: int) -> np.ndarray:
        read.append(step)
        return shared(step)

    return losses, read, shared.ev
