"""The Hessian spectrum of the training loss on the plateau (the paper's Table 10).

The loss is ``L(theta)``: the full-vocabulary next-token cross-entropy in nats, averaged over
the target positions (A1..A4 and EOS, the positions ``train.batch_loss`` reads) of a fixed set
of ``n`` training examples, as a function of the flat vector ``theta`` of every trainable
parameter (in state-dict order). ``H = d^2 L / d theta^2`` (nats per unit parameter squared)
is never formed: every estimator sees it only through Hessian-vector products (``hvp``).

Two estimators of its extreme eigenvalues (``estimators.spectrum``):

- ``power_extremes`` ("original_power"), the original code's: power iteration for lambda_max,
  then power iteration on ``H - sigma I`` with ``sigma = lambda_max + 1`` for lambda_min.
- ``lanczos_extremes`` ("lanczos"): implicitly restarted Lanczos (ARPACK through
  ``scipy.sparse.linalg.eigsh``) for the k largest and the k smallest eigenvalues, each pair
  checked by its relative residual ``||H v - lambda v|| / |lambda|`` from a fresh product.

Both estimate ``anisotropy = |lambda_max| / max(|lambda_min|, 1e-10)``. ``hessian_pass`` runs
both at plateau checkpoints (``plateau_checkpoints``) and ``table10`` aggregates per run.
Definitions, precision and cost: docs/mechanisms.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..checkpoints import Run, RunError
from ..config import RunConfig, layout_for
from ..frames import Rows, frame, records
from ..model.forward import Weights, forward
from ..paper import TABLE10
from ..summaries import nearest, summarize
from ..task import Task, make_task
from ..train import batch_loss
from .spectrum import Extremes, lanczos_extremes, power_extremes

N_EXAMPLES = 512  # the original's fixed set of training examples
ESTIMATORS = ("original_power", "lanczos")

LossFn = Callable[[Float[Tensor, "n_params"]], Float[Tensor, ""]]


# --- the loss and its Hessian-vector product -----------------------------------------------
BLOCK_KEYS = tuple(
    f"{part}.{w}"
    for part in ("ln1", "attn.q", "attn.k", "attn.v", "attn.o", "ln2", "mlp.in", "mlp.out")
    for w in ("weight", "bias")
)


def trainable_names(cfg: RunConfig, state: dict[str, Tensor]) -> list[str]:
    """The state-dict keys of the trainable parameters in the model's state-dict order (embed,
    pos_embed, each block's ln1, q, k, v, o, ln2, mlp.in, mlp.out, ln_final, unembed), whatever
    the order of ``state`` (a safetensors file loads in no fixed order): the flat vector, and so
    what a seeded start vector means, is the same in every process. ``unembed.bias`` is left out
    where the model keeps it as a fixed zero buffer (``model.train_b_U`` off)."""
    blocks = [f"blocks.{l}.{k}" for l in range(cfg.model.n_layers) for k in BLOCK_KEYS]
    every = [
        "embed.weight",
        "pos_embed.weight",
        *blocks,
        "ln_final.weight",
        "ln_final.bias",
        "unembed.weight",
        "unembed.bias",
    ]
    missing, extra = sorted(set(every) - set(state)), sorted(set(state) - set(every))
    if missing or extra:
        raise RunError(f"the weights do not match the config's model (missing {missing[:3]}, unexpected {extra[:3]})")
    return every if cfg.model.train_b_U else every[:-1]


def hessian_examples(task: Task, n: int = N_EXAMPLES, seed: int = 0) -> Int[Tensor, "n seq_len"]:
    """Tokens of the fixed example set: the first ``min(n, D)`` entries of a permutation of the
    D training examples (group, selector) drawn from ``torch.Generator().manual_seed(seed)``,
    with the labels they are trained on: under ``label_noise_mode = "fixed"`` an example's
    fixed noisy target (``Task.noisy_target_sel``), else its own (per-draw noise belongs to
    the draws, not to the examples)."""
    g, s = task.all_examples()
    idx = torch.randperm(len(g), generator=torch.Generator().manual_seed(int(seed)))[:n].numpy()
    g, s = g[idx], s[idx]
    cfg = task.cfg
    fixed_noise = cfg.label_noise > 0 and cfg.label_noise_mode == "fixed"
    return task.tokens(g, s, target_sel=task.noisy_target_sel[g, s] if fixed_noise else None)


def hessian_loss(
    cfg: RunConfig, state: dict[str, Tensor], tokens: Int[Tensor, "n seq_len"], dtype: torch.dtype = torch.float64
) -> tuple[LossFn, Float[Tensor, n_params]]:
    """``(loss, theta)``: ``loss(theta)`` is the mean cross-entropy (nats) over the target
    positions of ``tokens`` (``train.batch_loss`` on the functional forward), ``theta`` the
    checkpoint's trainable parameters (``trainable_names``) flattened and cast to ``dtype``.
    Fixed buffers (a non-trainable b_U) enter as constants of the same dtype."""
    names = trainable_names(cfg, state)
    shapes = [tuple(state[k].shape) for k in names]
    sizes = [math.prod(s) for s in shapes]
    fixed = {k: v.detach().to(dtype) for k, v in state.items() if k not in names}
    theta = torch.cat([state[k].detach().reshape(-1) for k in names]).to(dtype)
    m, start = cfg.model, layout_for(cfg.task).pred_positions.start
    inputs = tokens[:, :-1]  # the EOS input predicts nothing

    def loss(th: Tensor) -> Tensor:
        parts = dict(zip(names, (p.view(s) for p, s in zip(th.split(sizes), shapes))))
        W = Weights.of({**fixed, **parts}, m)
        return batch_loss(cfg, forward(W, inputs, start), tokens)

    with torch.no_grad():  # one plain call first: the forward caches its causal mask outside any transform
        loss(theta)
    return loss, theta


def hvp(loss: LossFn, theta: Float[Tensor, n_params], v: Float[Tensor, n_params]) -> Float[Tensor, n_params]:
    """``H v`` with ``H`` the Hessian of ``loss`` at ``theta``: reverse-over-reverse (the
    gradient's graph kept, then differentiated along ``v``); exact up to rounding."""
    th = theta.detach().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(loss(th), th, create_graph=True)
        (hv,) = torch.autograd.grad(g, th, v.to(theta.dtype))
    return hv


# --- checkpoints, the pass, the table --------------------------------------------------------
def plateau_checkpoints(
    steps: Sequence[int], tau: float, n: int = 5, lo: float = 0.2, hi: float = 0.8, min_step: int = 100
) -> list[int]:
    """The original's plateau checkpoints: ``n`` targets evenly spaced in
    ``[max(min_step, lo * tau), hi * tau]`` (steps), each snapped to the nearest existing
    checkpoint (``summaries.nearest``: the earlier one on a tie); sorted, a checkpoint that two
    targets snap to counted once."""
    if not steps:
        raise ValueError("no checkpoints to choose from")
    if tau is None or not tau > 0:
        raise ValueError(f"tau {tau!r}: the plateau checkpoints need the run's tau")
    targets = np.linspace(max(min_step, lo * tau), hi * tau, n)
    return sorted({nearest(steps, float(t)) for t in targets})


def _row(est: Extremes) -> dict:
    res = (*est.residual_top, *est.residual_bottom)
    return {
        "estimator": est.estimator,
        "lambda_max": est.lambda_max,
        "lambda_min": est.lambda_min,
        "anisotropy": est.anisotropy,
        "residual_max": est.residual_top[0],
        "residual_min": est.residual_bottom[0],
        "tol": est.tol,
        "converged": est.converged,
        "n_pairs": len(res),
        "n_converged": sum(r <= est.tol for r in res),
        "n_hvp": est.n_hvp,
        "seconds": est.seconds,
        "power_iterations": list(est.iterations) or None,
    }


def hessian_pass(
    run: str | Run,
    steps: Sequence[int] | None = None,
    *,
    n_examples: int = N_EXAMPLES,
    seed: int = 0,
    k: int = 3,
    tol: float = 1e-4,
    dtype: torch.dtype = torch.float64,
    estimators: Sequence[str] = ESTIMATORS,
    maxiter: int | None = 200,
    progress: bool = False,
):
    """Both estimators at a run's plateau checkpoints (default ``plateau_checkpoints`` of the
    paper family's tau, ``summaries.summarize``); the Hessian of ``hessian_loss`` on
    ``hessian_examples(task, n_examples, seed)`` in ``dtype``.

    Returns a DataFrame, one row per (checkpoint, estimator): run, K, tau, step, t_over_tau,
    loss (nats at the checkpoint), estimator ("original_power" or "lanczos"), lambda_max,
    lambda_min, anisotropy, residual_max / residual_min (relative residuals of the two extreme
    pairs), tol, converged (every pair's residual <= tol), n_pairs, n_converged, n_hvp, seconds,
    power_iterations, n_examples, n_params, dtype. ``k`` and ``maxiter``: ``lanczos_extremes``."""
    run = run if isinstance(run, Run) else Run(run)
    unknown = sorted(set(estimators) - set(ESTIMATORS))
    if unknown:
        raise ValueError(f"estimators {unknown}: choose from {list(ESTIMATORS)}")
    cfg, recs = run.config(), run.records()
    if not recs:
        raise RunError(f"{run.path / 'manifest.json'}: the run has no checkpoints yet")
    tau = summarize(cfg, recs)["definitions"]["paper"]["tau"]
    if steps is None:
        if tau is None:
            raise RunError(f"{run.path}: the paper family's tau is unknown (no L_seq below alpha log K); pass steps")
        steps = plateau_checkpoints([r["step"] for r in recs], tau)
    tokens = hessian_examples(make_task(cfg.task), n_examples, seed)
    rows = []
    for step in steps:
        loss, theta = hessian_loss(cfg, run.weights(step), tokens, dtype)
        with torch.no_grad():
            value = float(loss(theta))
        base = {
            "run": run.name,
            "K": cfg.task.K,
            "tau": tau,
            "step": step,
            "t_over_tau": step / tau if tau else None,
            "loss": value,
            "n_examples": len(tokens),
            "n_params": theta.numel(),
            "dtype": str(dtype).removeprefix("torch."),
        }

        def H(v: Tensor) -> Tensor:
            return hvp(loss, theta, v)

        for name in estimators:
            est = (
                power_extremes(H, theta.numel(), dtype=dtype, tol=tol)
                if name == "original_power"
                else lanczos_extremes(H, theta.numel(), k, tol=tol, dtype=dtype, maxiter=maxiter)
            )
            rows.append({**base, **_row(est)})
            if progress:
                r = rows[-1]
                print(
                    f"hessian {run.name} step {step} {name}: lambda_max {r['lambda_max']:.4g} lambda_min "
                    f"{r['lambda_min']:.4g} ratio {r['anisotropy']:.4g} ({r['n_hvp']} HVPs, {r['seconds']:.0f} s)",
                    flush=True,
                )
    return frame(rows)


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values))}


def table10(rows) -> Rows:
    """Table 10 per run from ``hessian_pass`` rows (a DataFrame or row dicts).

    For each run and estimator over its checkpoints: ``anisotropy`` (the mean of the
    per-checkpoint ratios |lambda_max| / max(|lambda_min|, 1e-10): the paper's column for
    "original_power"), ``anisotropy_min`` / ``anisotropy_max`` (their spread), ``lambda_max``
    (the mean), ``all_converged``; suffixed ``_original`` and ``_lanczos``, beside the paper's
    values for the run's K (``paper_anisotropy``, ``paper_lambda_max``; None where it has none).
    Returns a DataFrame, one row per run."""
    by_run: dict[str, list[dict]] = {}
    for r in records(rows):
        by_run.setdefault(r["run"], []).append(r)
    out = []
    for name, rs in by_run.items():
        K = rs[0]["K"]
        row = {"run": name, "K": K, "tau": rs[0]["tau"], "steps": sorted({r["step"] for r in rs})}
        for est, suffix in (("original_power", "original"), ("lanczos", "lanczos")):
            mine = [r for r in rs if r["estimator"] == est]
            if not mine:
                continue
            ratio = _spread([r["anisotropy"] for r in mine])
            row.update(
                {
                    f"anisotropy_{suffix}": ratio["mean"],
                    f"anisotropy_{suffix}_min": ratio["min"],
                    f"anisotropy_{suffix}_max": ratio["max"],
                    f"lambda_max_{suffix}": float(np.mean([r["lambda_max"] for r in mine])),
                    f"lambda_min_{suffix}": float(np.mean([r["lambda_min"] for r in mine])),
                    f"all_converged_{suffix}": all(bool(r["converged"]) for r in mine),
                }
            )
        kept = [r for r in rs if r["estimator"] == "original_power" and _original_keeps(r["step"], r["tau"])]
        row["steps_original_filter"] = sorted(r["step"] for r in kept)
        row["anisotropy_original_filter"] = float(np.mean([r["anisotropy"] for r in kept])) if kept else None
        paper = TABLE10.get(K)
        row.update({"paper_anisotropy": paper[0] if paper else None, "paper_lambda_max": paper[1] if paper else None})
        for col in ("anisotropy_original", "anisotropy_original_filter"):
            ours = row.get(col)
            row[f"{col}_over_paper"] = ours / paper[0] if paper and ours is not None else None
        out.append(row)
    return frame(out)


ORIGINAL_GRID = 100  # the original's checkpoint spacing (steps)


def _original_keeps(step: int, tau: int) -> bool:
    """The original's checkpoint filter, which its Table 10 code applied to the plateau
    checkpoints and ``table10`` applies to ours beside them (``anisotropy_original_filter``;
    docs/mechanisms.md, Checkpoints): a checkpoint its own run holds (on its 100-step grid)
    strictly before 0.8 tau."""
    return step % ORIGINAL_GRID == 0 and step < 0.8 * tau
