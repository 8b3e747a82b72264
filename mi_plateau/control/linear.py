"""The linear-network control of the paper's Table 12 (docs/mechanisms.md): can a two-layer *linear*
network leave the log K plateau of the K-fold ambiguous lookup task?

Data. The task's own groups, selectors and targets (``task.make_task``): example (g, k) pairs
base string B_g with selector z_k and target A_{g,k}. Every distinct string gets a fixed Gaussian
embedding, each of its ``d_embed`` = D components drawn i.i.d. N(0, 1) from ``embed_seed``:
b_g for B_g, z_k for z_k, a_{g,k} for A_{g,k}. The input is x = [b_g; z_k] (2D numbers).

Model. y = W2 W1 x with W1 of shape (H, 2D) and W2 of shape (D, H), H = ``d_hidden``, no bias,
both Xavier-uniform initialised (bound sqrt(6 / (fan_in + fan_out))) from ``init_seed``.

Training. Plain SGD, W <- W - lr dMSE/dW, on batches of ``batch_size`` examples drawn uniformly
with replacement from the n_b K examples (``batch_seed``), for ``steps`` steps, where
MSE = 1/(N D) sum_i ||y_i - a_i||^2 (mean over examples and components; 1.0 for y = 0).

Measurement (nats), on ``n_eval`` fixed examples (``eval_seed``, drawn without replacement):
candidate loss = mean over examples of -log softmax_j(-||y - a_{g,j}||^2 / D)[k], the softmax
running over the K targets of the example's group. A prediction equidistant from the K
candidates scores log K exactly; the ratio candidate_loss / log K is 1 on the plateau and 0 for
a perfect conditional solution. Because y is additive in b and z (y = M_b b + M_z z), the network
cannot represent the (B, z) interaction the task needs, which is the claim this control tests.

Limit. Training minimises the MSE over the model class {y = M x, rank M <= min(D, H)}; its
minimiser over all n_b K examples (``least_squares_limit``: least squares, reduced to rank H when
H < D) is where the network goes given time, so its candidate loss is the "permanently" of the
paper's claim, measured without waiting for it.

Regenerate the artifact: ``mi-plateau linear-control --out docs/reproduction/linear_control.json``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..config import ConfigError, TaskConfig
from ..task import Task, make_task

PAPER_CLAIM = "stays at log K permanently"
ESCAPE_FRACTION = 0.9  # our verdict: "stays at log K" while the final candidate loss > 0.9 log K
PAPER_KS = (10, 20, 36)
COLUMNS = ("step", "candidate_loss", "candidate_loss_over_logK", "mse", "cand_acc")


@dataclass(frozen=True)
class LinearConfig:
    """The linear control's settings; the defaults are the original's (docs/mechanisms.md)."""

    K: int = 10  # targets per base string (= selectors)
    n_b: int = 1000  # base strings (groups)
    d_embed: int = 128  # D: width of every Gaussian embedding (input 2D, output D)
    d_hidden: int = 128  # H: width of the hidden layer
    lr: float = 1e-3  # plain SGD step size
    batch_size: int = 128
    steps: int = 30000
    eval_every: int = 500  # steps between evaluations (step 0 and the last step are always evaluated)
    n_eval: int = 4096  # fixed evaluation examples (all of them if the task has fewer)
    data_seed: int = 0  # the task's strings (task.data_seed)
    embed_seed: int = 1
    init_seed: int = 2
    batch_seed: int = 3
    eval_seed: int = 4

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("seed") and not 0 <= v < 2**63:
                raise ConfigError(f"linear.{f.name}={v}: seeds must be in [0, 2^63)")
            if not f.name.endswith("seed") and not v > 0:
                raise ConfigError(f"linear.{f.name}={v}: must be positive")
        if not 2 <= self.K <= 36:
            raise ConfigError(f"linear.K={self.K}: must be in 2..36 (distinct first characters per group)")

    @property
    def log_K(self) -> float:
        return math.log(self.K)

    @property
    def task(self) -> TaskConfig:
        return TaskConfig(K=self.K, n_b=self.n_b, data_seed=self.data_seed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Embeddings:
    """Fixed Gaussian embeddings of the task's strings, components i.i.d. N(0, 1)."""

    b: Float[Tensor, "n_b D"]  # one per base string B_g
    z: Float[Tensor, "K D"]  # one per selector z_k
    a: Float[Tensor, "n_b K D"]  # one per target A_{g,k}


def make_embeddings(task: Task, cfg: LinearConfig) -> Embeddings:
    """Draw b, z and a (in that order) from ``embed_seed``; the task fixes which strings exist."""
    gen = torch.Generator().manual_seed(cfg.embed_seed)
    n_b, K, D = task.cfg.n_b, task.cfg.K, cfg.d_embed
    b = torch.randn(n_b, D, generator=gen)
    z = torch.randn(len(task.selectors), D, generator=gen)
    a = torch.randn(n_b, K, D, generator=gen)
    return Embeddings(b, z, a)


def inputs(emb: Embeddings, g: Int[Tensor, N], s: Int[Tensor, N]) -> Float[Tensor, "N two_D"]:
    """x = [b_g; z_k] for examples (g, k)."""
    return torch.cat([emb.b[g], emb.z[s]], dim=1)


def init_weights(cfg: LinearConfig) -> tuple[Float[Tensor, "H two_D"], Float[Tensor, "D H"]]:
    """Xavier-uniform W1 (H x 2D) and W2 (D x H) from ``init_seed``: U(-r, r), r = sqrt(6 / (fan_in + fan_out))."""
    gen = torch.Generator().manual_seed(cfg.init_seed)
    D, H = cfg.d_embed, cfg.d_hidden

    def xavier(fan_out: int, fan_in: int) -> Tensor:
        r = math.sqrt(6.0 / (fan_in + fan_out))
        return (torch.rand(fan_out, fan_in, generator=gen) * 2 - 1) * r

    return xavier(H, 2 * D), xavier(D, H)


def forward(W1: Tensor, W2: Tensor, x: Float[Tensor, "N two_D"]) -> Float[Tensor, "N D"]:
    """y = W2 W1 x for each row x."""
    return x @ W1.T @ W2.T


def mse_and_grads(
    W1: Tensor, W2: Tensor, x: Float[Tensor, "N two_D"], a: Float[Tensor, "N D"]
) -> tuple[float, Tensor, Tensor]:
    """MSE = 1/(N D) sum ||y - a||^2 and its gradients in closed form.

    With h = W1 x and G = dMSE/dy = 2 (y - a) / (N D) (rows per example):
    dMSE/dW2 = G^T h and dMSE/dW1 = (G W2)^T x.
    """
    h = x @ W1.T
    r = h @ W2.T - a
    G = r * (2.0 / r.numel())
    return (r.square().mean().item(), (G @ W2).T @ x, G.T @ h)


def candidate_losses(
    y: Float[Tensor, "N D"], cands: Float[Tensor, "N K D"], k: Int[Tensor, N]
) -> tuple[Tensor, Tensor]:
    """Per example: (-log softmax_j(-||y - a_j||^2 / D)[k], [argmax_j == k]), in nats and {0, 1}.

    ``cands`` holds the K candidate embeddings a_j of the example's group; k is the true one.
    """
    D = y.shape[-1]
    logits = -(y[:, None, :] - cands).square().sum(-1) / D
    loss = -logits.log_softmax(-1).gather(1, k[:, None]).squeeze(1)
    return loss, (logits.argmax(-1) == k).float()


def eval_examples(task: Task, cfg: LinearConfig) -> tuple[Tensor, Tensor]:
    """The fixed evaluation examples (g, k): min(n_eval, n_b K) of them, without replacement, sorted."""
    rng = np.random.default_rng([cfg.eval_seed, 0x11EA])
    n = task.n_examples
    idx = np.sort(rng.choice(n, size=min(cfg.n_eval, n), replace=False))
    g, s = task.all_examples()
    return torch.from_numpy(g[idx]), torch.from_numpy(s[idx])


def evaluate(W1: Tensor, W2: Tensor, emb: Embeddings, g: Tensor, s: Tensor, log_K: float) -> dict[str, float]:
    """Candidate loss (nats), its ratio to log K, MSE and candidate accuracy on examples (g, s),
    computed in float64."""
    y = forward(W1.double(), W2.double(), inputs(emb, g, s).double())
    cands = emb.a[g].double()
    loss, ok = candidate_losses(y, cands, s)
    Lc = loss.mean().item()
    mse = (y - cands[torch.arange(len(s)), s]).square().mean().item()
    return {"candidate_loss": Lc, "candidate_loss_over_logK": Lc / log_K, "mse": mse, "cand_acc": ok.mean().item()}


def train_linear(cfg: LinearConfig) -> pd.DataFrame:
    """Train the linear control; one row per evaluation (step 0, every ``eval_every`` steps, the
    last step) with columns ``COLUMNS`` (losses in nats, MSE in squared embedding units).

    Deterministic from the config's seeds (float32 training, float64 evaluation).
    """
    task = make_task(cfg.task)
    emb = make_embeddings(task, cfg)
    W1, W2 = init_weights(cfg)
    g_ev, s_ev = eval_examples(task, cfg)
    gen = torch.Generator().manual_seed(cfg.batch_seed)
    K = cfg.K
    rows = [{"step": 0, **evaluate(W1, W2, emb, g_ev, s_ev, cfg.log_K)}]
    for step in range(1, cfg.steps + 1):
        idx = torch.randint(0, task.n_examples, (cfg.batch_size,), generator=gen)
        g, s = idx // K, idx % K
        _, dW1, dW2 = mse_and_grads(W1, W2, inputs(emb, g, s), emb.a[g, s])
        W1 -= cfg.lr * dW1
        W2 -= cfg.lr * dW2
        if step % cfg.eval_every == 0 or step == cfg.steps:
            rows.append({"step": step, **evaluate(W1, W2, emb, g_ev, s_ev, cfg.log_K)})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def least_squares_limit(cfg: LinearConfig) -> dict[str, float]:
    """The MSE minimiser of the model class and its measurements on the fixed evaluation examples.

    M* = argmin_M sum over all n_b K examples of ||M x - a||^2 (least squares, float64, minimum norm);
    for H < D the best rank-H map, M* projected onto the top H right singular vectors of the
    fitted outputs X M* (reduced-rank regression). Returns ``evaluate``'s columns, prefixed ``limit_``.
    """
    task = make_task(cfg.task)
    emb = make_embeddings(task, cfg)
    g, s = (torch.from_numpy(v) for v in task.all_examples())
    X = inputs(emb, g, s).double()
    # gelsd (SVD): the minimum-norm solution also when there are fewer examples than inputs
    M = torch.linalg.lstsq(X, emb.a[g, s].double(), driver="gelsd").solution  # (2D, D): y = x M
    if cfg.d_hidden < cfg.d_embed:
        V = torch.linalg.svd(X @ M, full_matrices=False).Vh[: cfg.d_hidden]
        M = M @ V.T @ V
    g_ev, s_ev = eval_examples(task, cfg)
    # as the trained network: W1 = M^T (a 2D -> D map), W2 = identity
    out = evaluate(M.T, torch.eye(cfg.d_embed, dtype=torch.float64), emb, g_ev, s_ev, cfg.log_K)
    return {f"limit_{k}": v for k, v in out.items()}


def oracle_candidate_loss(cfg: LinearConfig) -> float:
    """The candidate loss of a perfect prediction y = a_k on the fixed evaluation examples (nats):
    mean of -log softmax_j(-||a_k - a_j||^2 / D)[k]. Not 0: with N(0, 1) components the wrong
    candidates sit at ||a_k - a_j||^2 / D ~ 2, so it is about log(1 + (K - 1) e^-2). The floor of
    the candidate loss, against which log K is the plateau."""
    task = make_task(cfg.task)
    emb = make_embeddings(task, cfg)
    g, s = eval_examples(task, cfg)
    cands = emb.a[g].double()
    return candidate_losses(cands[torch.arange(len(s)), s], cands, s)[0].mean().item()


def verdict(candidate_loss: float, log_K: float) -> str:
    """Ours: "stays at log K" if candidate_loss > ESCAPE_FRACTION log K, else "escapes"."""
    return "stays at log K" if candidate_loss > ESCAPE_FRACTION * log_K else "escapes"


def table12_row(curve: pd.DataFrame, cfg: LinearConfig, extra: dict[str, float] | None = None) -> dict[str, Any]:
    """Table 12's linear-network row for one K: the candidate loss at the curve's last step, its
    ratio to log K, our verdict and the paper's claim, plus the reference points in ``extra``
    (``least_squares_limit``, ``oracle_candidate_loss``)."""
    last = curve.iloc[-1]
    loss = float(last["candidate_loss"])
    return {
        "K": cfg.K,
        "steps": int(last["step"]),
        "candidate_loss": loss,
        "log_K": cfg.log_K,
        "ratio_to_logK": loss / cfg.log_K,
        "cand_acc": float(last["cand_acc"]),
        "verdict": verdict(loss, cfg.log_K),
        "paper": PAPER_CLAIM,
        **(extra or {}),
    }


def linear_control(cfgs: list[LinearConfig]) -> tuple[pd.DataFrame, pd.DataFrame, list[float]]:
    """Train each config in turn: (curves with a K column, Table 12 rows, wall seconds per run)."""
    curves, rows, walls = [], [], []
    for cfg in cfgs:
        t0 = time.perf_counter()
        curve = train_linear(cfg)
        walls.append(time.perf_counter() - t0)
        curves.append(curve.assign(K=cfg.K))
        rows.append(
            table12_row(curve, cfg, {**least_squares_limit(cfg), "oracle_candidate_loss": oracle_candidate_loss(cfg)})
        )
    return pd.concat(curves, ignore_index=True), pd.DataFrame(rows), walls


def record(cfgs: list[LinearConfig], curves: pd.DataFrame, table: pd.DataFrame, command: str) -> dict[str, Any]:
    """The JSON artifact: definitions, each run's config and curve, Table 12's rows, the command.
    Holds nothing that changes between two runs of the command (no dates, no wall times)."""
    return {
        "artifact": "Table 12, the linear network control",
        "command": command,
        "definitions": {
            "model": "y = W2 W1 [b; z], no bias, Xavier-uniform init; b, z, a fixed N(0, 1) embeddings of B, z, A",
            "mse": "1/(N D) sum ||y - a||^2 over examples and components (1.0 for y = 0)",
            "candidate_loss": "mean of -log softmax_j(-||y - a_j||^2 / D)[true] over the group's K targets, nats",
            "verdict": f"'stays at log K' if the final candidate loss > {ESCAPE_FRACTION} log K, else 'escapes'",
            "limit_*": "the same measurements for the least-squares map over all n_b K examples (rank <= H), "
            "the minimiser training approaches",
            "oracle_candidate_loss": "the candidate loss of a perfect prediction y = a "
            "(the floor; about log(1 + (K-1) e^-2))",
        },
        "runs": [
            {"config": cfg.to_dict(), "curve": curves[curves.K == cfg.K].drop(columns="K").to_dict("records")}
            for cfg in cfgs
        ],
        "table12": table.to_dict("records"),
    }


def control_record(
    Ks: Sequence[int] = PAPER_KS,
    *,
    steps: int = LinearConfig.steps,
    eval_every: int = LinearConfig.eval_every,
    command: str,
) -> tuple[dict[str, Any], list[float]]:
    """Train the control at each K of ``Ks`` (the original's other settings, ``LinearConfig``):
    (the JSON artifact, ``record``, naming ``command``; the wall seconds of each K's run). Every
    config is built before any training, so a bad K or count is a ConfigError at once."""
    cfgs = [LinearConfig(K=K, steps=steps, eval_every=eval_every) for K in Ks]
    curves, table, walls = linear_control(cfgs)
    return record(cfgs, curves, table, command), walls
