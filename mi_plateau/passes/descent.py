"""Figure 3(b) as the paper drew it, "transition is onset of coherent descent": how the weights
move between checkpoints, from the weights alone (no forward pass).

On a grid of spacing Delta (default 200 steps) over a run's checkpoints, the displacement
``d(t) = W(t) - W(t - Delta)`` is taken over all parameters, flattened in one fixed order:

- ``disp``: ||d(t)||, the Euclidean norm (weight units);
- ``rel_disp``: ||d(t)|| / ||W(t - Delta)||;
- ``disp_<component>``: the norm over one component's parameters (``COMPONENTS``: embed, attn,
  mlp, unembed; the LayerNorm gains and biases, which the paper's panels do not name, as ``ln``);
- ``cos``: the cosine similarity of consecutive displacements, d(t) . d(t - Delta) /
  (||d(t)|| ||d(t - Delta)||), defined from t = 2 Delta (1: the weights keep moving the same way;
  0: the directions are unrelated, as in a random walk);
- ``cos_smooth``: ``cos`` as the paper plots it, a 5-point rolling mean (centred; fewer points at
  the ends of the run).

``windows`` reads the mean cosine in three windows around the first-token tau (Lc < alpha log
K): plateau (t < tau / 2), pre-transition (tau / 2 <= t < tau) and post (t >= tau); a run that
stopped before that tau is read against its L_seq tau, and says so (``window_tau``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError
from ..frames import frame

# parameter name -> component, by the first part of its state-dict name that decides it
COMPONENTS = ("embed", "attn", "mlp", "unembed", "ln")
ROLLING = 5  # points of the paper's rolling mean


def component(name: str) -> str:
    """The component of a state-dict parameter: ``embed`` (token and position embeddings),
    ``attn`` (W_Q, W_K, W_V, W_O and their biases), ``mlp``, ``unembed`` (W_U, b_U) or ``ln``."""
    parts = name.split(".")
    if parts[0] in ("embed", "pos_embed"):
        return "embed"
    if parts[0] == "unembed":
        return "unembed"
    if parts[0] == "blocks" and parts[2] in ("attn", "mlp"):
        return parts[2]
    if parts[0].startswith("ln") or (parts[0] == "blocks" and parts[2].startswith("ln")):
        return "ln"
    raise RunError(f"parameter {name!r}: no component of Figure 3(b) holds it")


def descent_grid(steps: list[int], delta: int, spacing: int, where: str = "run") -> list[int]:
    """The grid 0, Delta, 2 Delta, ... over the run's checkpoints, up to the first grid step that
    is no checkpoint (a run whose spacing left the grid after its dense stretch ends its grid
    there). Delta must be a positive multiple of the run's checkpoint spacing and the grid at
    least three points long (two displacements make one cosine); else a one-line error naming
    what is missing."""
    if delta <= 0 or delta % spacing:
        raise RunError(f"{where}: Delta {delta} is not a positive multiple of the checkpoint spacing ({spacing} steps)")
    if not steps:
        raise RunError(f"{where}: the run has no checkpoints yet")
    have, grid = set(steps), []
    for t in range(0, steps[-1] + 1, delta):
        if t not in have:
            break
        grid.append(t)
    if len(grid) < 3:
        raise RunError(
            f"{where}: {len(grid)} checkpoint(s) on the Delta = {delta} grid (no checkpoint at step "
            f"{len(grid) * delta}, the run's last is {steps[-1]}); a cosine of consecutive displacements needs 3"
        )
    return grid


def _flat(sd: dict, names: list[str]) -> dict[str, np.ndarray]:
    """Each component's parameters as one float64 vector (names in sorted order)."""
    out: dict[str, list[np.ndarray]] = {c: [] for c in COMPONENTS}
    for n in names:
        out[component(n)].append(sd[n].detach().double().reshape(-1).numpy())
    return {c: np.concatenate(v) if v else np.zeros(0) for c, v in out.items()}


def displacement_rows(weights: dict[int, dict], grid: list[int]) -> list[dict[str, Any]]:
    """One row per grid step t >= Delta from ``weights`` (step -> state dict): the displacement
    norms and the cosine of consecutive displacements (module docstring); plain NumPy."""
    names = sorted(weights[grid[0]])
    prev = _flat(weights[grid[0]], names)
    rows, d_prev = [], None
    for t in grid[1:]:
        cur = _flat(weights[t], names)
        d = {c: cur[c] - prev[c] for c in COMPONENTS}
        d_all = np.concatenate([d[c] for c in COMPONENTS])
        w_prev = np.concatenate([prev[c] for c in COMPONENTS])
        n = float(np.linalg.norm(d_all))
        row: dict[str, Any] = {"step": t, "disp": n, "rel_disp": n / float(np.linalg.norm(w_prev))}
        row.update({f"disp_{c}": float(np.linalg.norm(d[c])) for c in COMPONENTS})
        if d_prev is None:
            row["cos"] = math.nan
        else:
            den = n * float(np.linalg.norm(d_prev))
            row["cos"] = float(d_all @ d_prev / den) if den > 0 else math.nan
        rows.append(row)
        prev, d_prev = cur, d_all
    cos = np.array([r["cos"] for r in rows], dtype=float)
    for i, r in enumerate(rows):  # centred rolling mean over the defined cosines
        w = cos[max(0, i - ROLLING // 2) : i + ROLLING // 2 + 1]
        w = w[np.isfinite(w)]
        r["cos_smooth"] = float(w.mean()) if len(w) else math.nan
    return rows


def coherent_descent(run: Run | str, delta: int = 200):
    """Figure 3(b) of one run: ``displacement_rows`` on its Delta grid, as a DataFrame (one row
    per grid step from Delta, with ``t_over_tau`` against the first-token tau where it exists)."""
    from ..summaries import summarize

    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    grid = descent_grid(run.steps(), delta, cfg.train.ckpt_every, str(run.path))
    rows = displacement_rows({t: run.weights(t) for t in grid}, grid)
    fams = summarize(cfg, run.records())["definitions"]
    tau, tau_paper = fams["first_token"]["tau"], fams["paper"]["tau"]
    for r in rows:
        r.update({"run": run.name, "K": cfg.task.K, "delta": delta, "tau_first_token": tau, "tau_paper": tau_paper})
        r["t_over_tau"] = r["step"] / tau if tau else math.nan
    return frame(rows)


def window_tau(rows) -> tuple[int | None, str | None]:
    """The tau the windows are read against: the first-token tau (the paper's), or where the run
    stopped before it (the K sweep stops at 1.2 x the L_seq tau), the paper family's L_seq tau,
    named as such; (None, None) without either."""
    from ..frames import records

    rs = records(rows)
    for key, name in (("tau_first_token", "first_token"), ("tau_paper", "paper (L_seq)")):
        t = rs[0].get(key) if rs else None
        if isinstance(t, (int, float)) and math.isfinite(t):
            return int(t), name
    return None, None


def windows(rows, tau: int | None) -> dict[str, Any]:
    """The mean raw cosine (and the number of grid points) in the plateau (t < tau / 2), the
    pre-transition (tau / 2 <= t < tau) and the post (t >= tau) windows; None where a window is
    empty or tau is unknown."""
    from ..frames import records

    out: dict[str, Any] = {"tau": tau}
    bounds = {"plateau": (0, 0.5), "pre": (0.5, 1.0), "post": (1.0, math.inf)}
    for name, (lo, hi) in bounds.items():
        c = [
            r["cos"]
            for r in records(rows)
            if tau and lo * tau <= r["step"] < hi * tau and isinstance(r["cos"], float) and math.isfinite(r["cos"])
        ]
        out[f"cos_{name}"] = float(np.mean(c)) if c else None
        out[f"n_{name}"] = len(c)
    return out
