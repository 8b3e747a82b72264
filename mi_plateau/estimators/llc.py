"""The local learning coefficient (LLC) at a run's checkpoints, estimated with devinterp's SGLD.

Optional: needs the ``llc`` extra (``pip install -e ".[llc]"``, devinterp 2.0.1); devinterp is
imported inside the functions that use it, so the package imports without it
(``require_devinterp`` says so in one line). ``mi-plateau llc RUN --out FILE`` records a curve.

Definition. At a checkpoint w* with training loss ``L_n`` (nats; below), the estimate is

    lambda_hat(w*) = n beta * (E_w[L_n(w)] - L_n(w*))

where the expectation is over the localised tempered posterior
``p(w) ~ exp(-n beta L_n(w) - gamma/2 ||w - w*||^2)``, sampled by SGLD from w*:

    w <- w - eps/2 * (n beta * grad L_m(w) + gamma * (w - w*)) + N(0, eps)

(``L_m`` the same loss on a minibatch of m examples; devinterp's ``sgmcmc_sgld``). lambda_hat is
dimensionless (n beta has units 1/nat). Each chain's ``E_w[L_n(w)]`` is the mean minibatch loss
over its ``n_draws`` steps after ``n_burnin`` burn-in steps (devinterp's own ``compute_llc``
also averages the burn-in; this pass does not); ``L_n(w*)`` is the loss at the checkpoint on
all ``n_batches`` batches. ``llc_mean`` and ``llc_std`` are the mean and the standard deviation
(ddof = 1) over chains; ``llc_drift`` is n beta times (mean loss over the second half of the
draws - mean over the first half), averaged over chains: near 0 when the chains have settled,
in the units of lambda_hat.

The loss. ``L_n`` is the training loss: the mean next-token cross-entropy over the target
positions (A1..A4 and EOS) of the functional forward (``train.batch_loss`` on
``model.forward``), on a fixed set of ``n_batches`` training batches of ``batch_size`` examples
drawn by the run's own sampler (``task.make_sampler``: its batching and label noise) seeded
with ``seed``. devinterp takes a per-token loss of shape [batch, seq_len - 1] and averages it
over both axes; ``target_loss`` puts the batch's ``batch_loss`` at every place, so that average
(and its gradient) is ``batch_loss`` exactly.

Calibration of the default settings and the K = 10 curve: docs/mechanisms.md, "The learning coefficient".
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from ..checkpoints import Run, atomic_write_json
from ..checkpoints.files import code_commit
from ..config import ConfigError, RunConfig, SGLDSettings, layout_for
from ..devices import resolve
from ..frames import frame, records
from ..model.forward import Weights, forward
from ..summaries import nan_to_none, nearest, summarize
from ..task import make_sampler, make_task
from ..train import batch_loss

# a ten times larger step for the tests' short chains on the ``tiny`` preset (it fails the
# calibration rule there: its drift exceeds the chains' spread at a converged checkpoint)
TINY = SGLDSettings(lr=3e-5, localization=1000.0)


# --- the model and the loss devinterp sees ------------------------------------------------
class TargetLossModel(nn.Module):
    """A checkpoint as a plain ``nn.Module``: the bridge's trainable tensors as Parameters (its
    buffers, such as a fixed zero b_U, as buffers), the forward ``model.forward`` on them.

    ``forward(tokens)`` takes whole sequences [batch, seq_len] and returns the logits at the
    loss positions [batch, n_pred, d_vocab] (the EOS input is dropped, as in training). A plain
    module, not the bridge itself: devinterp copies the model once per chain and steps
    ``named_parameters()``, and this one copies in microseconds and has nothing else to step."""

    def __init__(self, cfg: RunConfig, state: dict[str, Tensor], trainable: set[str]):
        super().__init__()
        self.run_cfg = cfg  # not ``cfg``: devinterp treats a module with ``cfg.n_heads`` as TransformerLens'
        self.keys = list(state)
        for i, k in enumerate(self.keys):  # a Parameter name may not contain "."
            v = state[k].detach().clone()
            if k in trainable:
                self.register_parameter(f"p{i}", nn.Parameter(v))
            else:
                self.register_buffer(f"p{i}", v)

    @classmethod
    def from_bridge(cls, cfg: RunConfig, bridge: nn.Module) -> TargetLossModel:
        sd = bridge.state_dict(keep_vars=True)
        return cls(cfg, sd, {k for k, v in sd.items() if isinstance(v, nn.Parameter)})

    def state(self) -> dict[str, Tensor]:
        return {k: getattr(self, f"p{i}") for i, k in enumerate(self.keys)}

    def forward(self, tokens: Int[Tensor, "batch seq_len"]) -> Float[Tensor, "batch n_pred d_vocab"]:
        m = self.run_cfg.model
        pos = layout_for(self.run_cfg.task).pred_positions
        W = Weights.of(self.state(), m)
        return forward(W, tokens[:, :-1], pos.start)[:, : len(pos)]


def target_loss(model: TargetLossModel, tokens: Int[Tensor, "batch seq_len"]) -> Float[Tensor, "batch seq_len_1"]:
    """devinterp's per-token loss for ``TargetLossModel``: ``train.batch_loss`` of the batch,
    repeated at every one of the [batch, seq_len - 1] places devinterp expects. devinterp only
    ever averages them (the SGLD gradient, the init loss, the loss trace), and the average of the
    repeated value, and its gradient, are ``batch_loss``'s own."""
    loss = batch_loss(model.run_cfg, model(tokens), tokens)
    return loss.expand(tokens.shape[0], tokens.shape[1] - 1)


def llc_examples(cfg: RunConfig, n_batches: int, batch_size: int, seed: int) -> Int[Tensor, "n seq_len"]:
    """``n_batches * batch_size`` training examples: the first batches the run's own sampler
    (its batching, label noise) draws from a generator seeded ``seed``, concatenated."""
    sampler = make_sampler(make_task(cfg.task), cfg.train.batching, batch_size, seed)
    need, got = n_batches * batch_size, []
    while sum(len(t) for t in got) < need:  # an epoch's last batch may be short
        got.append(sampler.sample())
    return torch.cat(got)[:need]


# --- sampling -----------------------------------------------------------------------------
def require_devinterp() -> None:
    """ConfigError, in one line, where the ``llc`` extra (devinterp and the ``datasets`` it
    brings) is not installed: what a caller checks before any work."""
    try:
        import datasets  # noqa: F401
        import devinterp  # noqa: F401
    except ImportError:
        raise ConfigError('the LLC needs devinterp (the llc extra): pip install -e ".[llc]"') from None


@dataclass(frozen=True)
class Chains:
    """What the chains of one checkpoint recorded: ``trace`` [chain, step] the minibatch loss
    (nats) at every step, burn-in included; ``init_loss`` ``L_n(w*)`` on all the batches;
    ``failed`` the chains devinterp stopped because their loss or logits went non-finite."""

    trace: np.ndarray
    init_loss: float
    failed: int


def sample_chains(
    model: TargetLossModel,
    tokens: Int[Tensor, "n seq_len"],
    s: SGLDSettings,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> Chains:
    """Run devinterp's SGLD (``slt.sampling.sample``) from the model's weights on ``tokens``
    (cut into batches of ``s.batch_size``, one seeded shuffle, replayed); ``s`` resolved. Chain
    c is seeded ``seed + c`` (its noise) and every chain sees the batches in the same order."""
    from datasets import Dataset
    from devinterp.slt.sampling import sample

    data = Dataset.from_dict({"input_ids": tokens.tolist()}).with_format("torch")
    quiet = contextlib.nullcontext() if progress else contextlib.redirect_stderr(io.StringIO())  # its tqdm bars
    with tempfile.TemporaryDirectory(prefix="llc_") as tmp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet:
            tree = sample(
                model,
                data,
                {},
                lr=s.lr,
                n_beta=s.nbeta,
                localization=s.localization,
                num_chains=s.n_chains,
                num_draws=s.n_draws,
                num_burnin_steps=s.n_burnin,
                batch_size=s.batch_size,
                num_init_loss_batches=s.n_batches,
                init_seed=seed,
                device=str(resolve(device)),
                output_path=Path(tmp) / "samples.zarr",
                loss_fn=target_loss,
            )
        ds = tree.dataset
        # every stored value of a step is that step's batch loss (``target_loss``): the mean is it
        trace = ds.sampling_loss_micro.mean(dim=["batch_sampling", "token_pos"]).values.astype(np.float64)
        init = float(ds.init_loss.values.astype(np.float64).mean())
    failed = sum("Chain failed" in str(w.message) for w in caught)
    for w in caught:  # passed on, now that the recording is over
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return Chains(trace=trace, init_loss=init, failed=failed)


def llc_estimate(chains: Chains, s: SGLDSettings) -> dict[str, float]:
    """``llc_mean``, ``llc_std`` (over chains, ddof = 1), ``llc_drift`` (module docstring) and
    the losses they come from (nats); NaN LLCs where a chain failed (its trace holds NaN), as
    the settings are then unstable at this checkpoint."""
    draws = chains.trace[:, s.n_burnin :]
    per_chain = s.nbeta * (draws.mean(1) - chains.init_loss)
    half = draws.shape[1] // 2
    drift = s.nbeta * (draws[:, half:].mean(1) - draws[:, :half].mean(1))
    bad = chains.failed > 0 or not np.isfinite(draws).all()
    nan = float("nan")
    return {
        "llc_mean": nan if bad else float(per_chain.mean()),
        "llc_std": nan if bad else float(per_chain.std(ddof=1)) if len(per_chain) > 1 else nan,
        "llc_drift": nan if bad else float(drift.mean()),
        "init_loss": chains.init_loss,
        "draw_loss": float(np.nanmean(draws)),
        "chains_failed": int(chains.failed),
    }


def llc_at(
    run: Run,
    step: int,
    settings: SGLDSettings = SGLDSettings(),
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> tuple[dict[str, Any], Chains]:
    """The LLC of ``run``'s checkpoint at ``step`` (a step between checkpoints reads the nearest
    one, and the row names that one): (the row ``llc_pass`` reports, the chains)."""
    t0 = time.perf_counter()
    step = step if step in run.steps() else run.nearest_step(step)
    cfg = run.config()
    s = settings.resolved(cfg)
    model = TargetLossModel.from_bridge(cfg, run.load_model(step))
    tokens = llc_examples(cfg, s.n_batches, s.batch_size, seed)
    chains = sample_chains(model, tokens, s, seed, device, progress)
    row = {"step": step, **llc_estimate(chains, s), **asdict(s), "seed": seed}
    return row | {"seconds": time.perf_counter() - t0}, chains


def llc_pass(
    run: str | Run,
    steps: Sequence[int] | None = None,
    *,
    n_chains: int = SGLDSettings.n_chains,
    n_draws: int = SGLDSettings.n_draws,
    n_burnin: int = SGLDSettings.n_burnin,
    lr: float = SGLDSettings.lr,
    localization: float = SGLDSettings.localization,
    nbeta: float = SGLDSettings.nbeta,
    batch_size: int | None = SGLDSettings.batch_size,
    n_batches: int = SGLDSettings.n_batches,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: bool = False,
):
    """The LLC (module docstring) at each checkpoint of ``steps`` (default: all), one row each:
    step, ``t_over_tau`` (step / tau, tau from ``summaries.summarize``; NaN without a tau),
    ``llc_mean``, ``llc_std``, ``llc_drift`` (dimensionless), ``init_loss`` (L_n(w*), nats),
    ``draw_loss`` (the mean loss over the draws, nats), ``chains_failed``, the sampler settings
    (``SGLDSettings``, resolved), ``seed``, and ``seconds`` (wall time of the checkpoint).

    The same run, steps, settings, seed and device give the same numbers: the data, the batch
    order and every chain's noise are seeded."""
    run = run if isinstance(run, Run) else Run(run)
    settings = SGLDSettings(
        lr=lr,
        localization=localization,
        nbeta=nbeta,
        n_chains=n_chains,
        n_draws=n_draws,
        n_burnin=n_burnin,
        batch_size=batch_size,
        n_batches=n_batches,
    )
    tau = summarize(run.config(), run.records())["tau"]
    rows = []
    for step in run.steps() if steps is None else steps:
        row, _ = llc_at(run, step, settings, seed, device)
        rows.append({"step": row["step"], "t_over_tau": row["step"] / tau if tau else float("nan")} | row)
        if progress:
            print(
                f"step {step}: llc {row['llc_mean']:.2f} +- {row['llc_std']:.2f} ({row['seconds']:.0f} s)",
                file=sys.stderr,
            )
    return frame(rows)


def spread_steps(run: Run, n: int = 10, upto: float = 1.2) -> list[int]:
    """About ``n`` checkpoints spread evenly over [0, upto * tau]: the checkpoint nearest each of
    ``n`` equally spaced targets, each once (so fewer when checkpoints are sparse)."""
    tau = summarize(run.config(), run.records())["tau"]
    if not tau:
        raise ValueError(f"{run.path}: the run has no tau yet")
    steps = run.steps()
    return sorted({nearest(steps, x) for x in np.linspace(0, upto * tau, n)})


# --- the recorded curve (docs/reproduction/llc_K10.json) --------------------------------
def record_curve(
    run: str | Run,
    out: str | Path,
    n: int = 10,
    upto: float = 1.2,
    *,
    lr: float = SGLDSettings.lr,
    localization: float = SGLDSettings.localization,
    progress: bool = False,
    **settings,
) -> dict[str, Any]:
    """Compute the LLC at ``spread_steps(run, n, upto)`` (``llc_pass``; ``settings``: its other
    sampler settings) and write it, with the settings, tau, date, commit and the command that
    reruns it, as JSON to ``out``; returns what it wrote."""
    run = run if isinstance(run, Run) else Run(run)
    df = llc_pass(run, spread_steps(run, n, upto), lr=lr, localization=localization, progress=progress, **settings)
    flags = ["--n", str(n), "--upto", str(upto), "--lr", str(lr), "--localization", str(localization)]
    return _stamp(run, out, flags, records(df))


# --- calibration (docs/mechanisms.md, "The learning coefficient") -----------------------
CALIBRATION_LRS = (1e-6, 3e-6, 1e-5, 3e-5, 1e-4)
PULL = 0.03  # eps * gamma held fixed across the calibration grid: the loosest directions settle alike


def calibrate(
    run: str | Run,
    fractions: Sequence[float] = (0.5, 1.2),
    lrs: Sequence[float] = CALIBRATION_LRS,
    nbeta: float = SGLDSettings.nbeta,
    **kw,
) -> list[dict[str, Any]]:
    """The sampler's step size swept at fixed ``eps * gamma = PULL`` and fixed n beta, at the
    checkpoints nearest ``fractions`` of tau (a plateau one and a converged one): one row per
    (eps, checkpoint) with the estimate, its spread over chains, its drift between the halves of
    the draws and the chains that failed. The calibration rule (docs/mechanisms.md): the largest
    eps whose chains all survive at every checkpoint and whose |drift| stays below the spread
    over chains; a smaller eps only samples slower."""
    run = run if isinstance(run, Run) else Run(run)
    tau = summarize(run.config(), run.records())["tau"]
    if not tau:
        raise ValueError(f"{run.path}: the run has no tau yet")
    steps = sorted({nearest(run.steps(), f * tau) for f in fractions})
    rows = []
    for lr in lrs:
        df = llc_pass(run, steps, lr=lr, localization=PULL / lr, nbeta=nbeta, **kw)
        rows += records(df)
    return rows


def record_calibration(run: str | Run, out: str | Path, progress: bool = False) -> dict[str, Any]:
    """``calibrate``'s rows at its default grid, written as ``record_curve`` writes a curve."""
    run = run if isinstance(run, Run) else Run(run)
    return _stamp(run, out, ["--calibrate"], calibrate(run, progress=progress))


def _stamp(run: Run, out: str | Path, command: list[str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    doc = {
        "run": str(run.path),
        "tau": summarize(run.config(), run.records())["tau"],
        "date": date.today().isoformat(),
        "commit": code_commit(),
        "command": " ".join(["mi-plateau llc", str(run.path), "--out", str(out), *command]),
        "rows": rows,
    }
    doc = nan_to_none(doc)
    atomic_write_json(Path(out), doc)
    return doc
