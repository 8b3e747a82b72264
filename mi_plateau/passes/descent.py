"""Figure 3(b) as the paper drew it, "transition is onset of coherent descent": how the weights
move between checkpoints, from the weights alone (no forward pass).

On a grid of spacing Delta (default 200 steps) over a run's checkpoints, the displacement
``d(t) = W(t) - W(t - Delta)`` is taken over all parameters, flattened in one fixed order:

- ``disp``: ||d(t)||, the Euclidean norm (weight units);
- ``rel_disp``: ||d(t)|| / ||W(t - Delta)||;
- ``disp_<component>``: the norm over one component's parameters (``COMPONENTS``: embed, attn,
  mlp, unembed; the LayerNorm gains and biases, which the paper's panels do not name, as ``ln``,
  the original's ``other``);
- ``cos``: the cosine similarity of consecutive displacements, d(t) . d(t - Delta) /
  (||d(t)|| ||d(t - Delta)||), defined from t = 2 Delta (1: the weights keep moving the same way;
  0: the directions are unrelated, as in a random walk); ``cos_<component>``: the same over one
  component's parameters;
- ``cos_smooth``: ``cos`` as the paper plots it, a 5-point rolling mean (``smooth``: centred;
  fewer points at the ends of the run).

``windows`` reads the mean cosine, whole and per component, in three windows around the
original's first-token tau (``passes.lead.original_tau``: the training batches' full-vocabulary
first-token loss < 0.5 log K): plateau (t < tau / 2), pre-transition (tau / 2 <= t < tau) and post
(tau <= t <= tau + 1,600, the original's reference window; ``post_to_end`` runs on to the grid's
end). A run that has not reached that tau has no windows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..checkpoints import Run, RunError
from ..frames import frame, records
from .lead import original_series, original_tau

# parameter name -> component, by the first part of its state-dict name that decides it
COMPONENTS = ("embed", "attn", "mlp", "unembed", "ln")
ROLLING = 5  # points of the paper's rolling mean
POST_SPAN = 1600  # the post window's length after tau (steps): the original's reference window
WINDOWS = ("plateau", "pre", "post")


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


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    """a . b / (||a|| ||b||); NaN where either is zero."""
    den = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    return float(a @ b / den) if den > 0 else math.nan


def displacement_rows(weights: dict[int, dict], grid: list[int]) -> list[dict[str, Any]]:
    """One row per grid step t >= Delta from ``weights`` (step -> state dict): the displacement
    norms and the cosines of consecutive displacements, whole and per component (module
    docstring); plain NumPy."""
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
        row["cos"] = math.nan if d_prev is None else _cos(d_all, np.concatenate([d_prev[c] for c in COMPONENTS]))
        row.update({f"cos_{c}": math.nan if d_prev is None else _cos(d[c], d_prev[c]) for c in COMPONENTS})
        rows.append(row)
        prev, d_prev = cur, d
    for r, m in zip(rows, smooth([r["cos"] for r in rows])):
        r["cos_smooth"] = m
    return rows


def smooth(cos) -> list[float]:
    """The paper's ``ROLLING``-point rolling mean of a cosine series, centred, over the defined
    values in each window (fewer points at the ends; NaN where a window holds none)."""
    c = np.array([math.nan if v is None else v for v in cos], dtype=float)
    out = []
    for i in range(len(c)):
        w = c[max(0, i - ROLLING // 2) : i + ROLLING // 2 + 1]
        w = w[np.isfinite(w)]
        out.append(float(w.mean()) if len(w) else math.nan)
    return out


def coherent_descent(run: Run | str, delta: int = 200):
    """Figure 3(b) of one run: ``displacement_rows`` on its Delta grid, as a DataFrame (one row
    per grid step from Delta, with ``tau``, the original's first-token tau from the run's
    records, and ``t_over_tau`` where it exists)."""
    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    grid = descent_grid(run.steps(), delta, cfg.train.ckpt_every, str(run.path))
    rows = displacement_rows({t: run.weights(t) for t in grid}, grid)
    tau = original_tau(original_series(run.records(), cfg.task.K), cfg.task.K)
    for r in rows:
        r.update({"run": run.name, "K": cfg.task.K, "delta": delta, "tau": tau})
        r["t_over_tau"] = r["step"] / tau if tau else math.nan
    return frame(rows)


def in_window(step: int, window: str, tau: int, span: int = POST_SPAN) -> bool:
    """Whether ``step`` lies in ``window`` around ``tau``: ``plateau`` t < tau / 2, ``pre``
    tau / 2 <= t < tau, ``post`` tau <= t <= tau + ``span`` (both ends in, as the original's
    reference window: to 4,200 for its K = 10 run's tau of 2,600), ``post_to_end`` t >= tau."""
    return {
        "plateau": step < tau / 2,
        "pre": tau / 2 <= step < tau,
        "post": tau <= step <= tau + span,
        "post_to_end": step >= tau,
    }[window]


def _in(rows: list[dict], key: str, window: str, tau: int | None, span: int) -> list[float]:
    """The finite ``key`` values of the rows in ``window`` (none where tau is unknown)."""
    if not tau:
        return []
    return [
        r[key]
        for r in rows
        if isinstance(r.get(key), (int, float)) and math.isfinite(r[key]) and in_window(r["step"], window, tau, span)
    ]


def mean_interval(xs: list[float]) -> tuple[float | None, float | None]:
    """The 95% interval of the mean of ``xs``: mean +- t(0.975, n - 1) sd / sqrt(n) (None under 2 values)."""
    if len(xs) < 2:
        return None, None
    from scipy.stats import t  # scipy: loaded where a window is read, not with the CLI

    m, half = float(np.mean(xs)), float(t.ppf(0.975, len(xs) - 1) * np.std(xs, ddof=1) / math.sqrt(len(xs)))
    return m - half, m + half


def windows(rows, tau: int | None, span: int = POST_SPAN) -> dict[str, Any]:
    """The windows of ``in_window`` read on displacement rows: per window of ``WINDOWS`` and
    ``post_to_end``, the mean raw cosine ``cos_<window>`` and the number of grid points with one
    ``n_<window>`` and the 95% interval of that mean (``cos_<window>_lo``, ``_hi``: t over the
    window's points, which follow each other and so understate it); per component and window of
    ``WINDOWS``, the mean of ``cos_<component>``
    (``cos_<component>_<window>``); ``post_end`` = tau + ``span``. None where a window holds no
    cosine or tau is unknown (a run that has not reached it)."""
    rs = records(rows)
    out: dict[str, Any] = {"tau": tau, "post_end": tau + span if tau else None}
    for w in (*WINDOWS, "post_to_end"):
        c = _in(rs, "cos", w, tau, span)
        out[f"cos_{w}"], out[f"n_{w}"] = (float(np.mean(c)) if c else None), len(c)
        out[f"cos_{w}_lo"], out[f"cos_{w}_hi"] = mean_interval(c)
    for comp in COMPONENTS:
        for w in WINDOWS:
            c = _in(rs, f"cos_{comp}", w, tau, span)
            out[f"cos_{comp}_{w}"] = float(np.mean(c)) if c else None
    return out
