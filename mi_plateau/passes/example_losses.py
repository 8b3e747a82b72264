"""Every evaluation example's losses at a run's checkpoints, scored once per step and kept, so
that several replays of one run (``passes.sampled``, ``passes.noise``) share one scoring."""

from __future__ import annotations

import sys

import numpy as np

from ..checkpoints import Run, load_state_checked


class ExampleLosses:
    """Every evaluation example's L_seq at a run's checkpoints, one model loaded once and refilled
    per step, each step scored once and kept: hand one to ``sampled_tau`` and ``sampled_width``
    and the two replays of a run share their scoring (``summary --sampled-tau --sampled-width``).
    ``scored``: the steps scored, in order."""

    def __init__(self, run: Run, progress: bool = False):
        self.run, self.progress = run, progress
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

        from ..metrics import example_losses

        if self._model is None:
            self._model = self.run.load_model(step)
        load_state_checked(self._model, self.run.weights(step), self.run.weights_path(step))
        with torch.no_grad():
            out = {k: np.asarray(v, dtype=np.float64) for k, v in example_losses(self._model, self.ev).items()}
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
