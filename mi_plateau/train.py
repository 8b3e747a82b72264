"""Training with dense checkpoints and exact resume.

AdamW (paper defaults), linear warm-up then constant (or cosine) learning rate, batches drawn
uniformly with replacement from the sampler's own generator, fp32. A checkpoint (weights, record,
optimizer and sampler state) is written at step 0 and every ``ckpt_every`` steps, every
``ckpt_every_transition`` steps while the transition is under way. Training stops once Lc has
fallen below ``converge_Lc``, ``margin_steps`` have passed since, and the step is at least
``post_tau_frac * tau``; or at ``max_steps``.

Resume restores weights, optimizer moments and the sampler's RNG state from the last checkpoint,
so an interrupted run continues exactly as if it had not stopped.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from .checkpoints import (
    FORMAT_VERSION,
    Run,
    RunError,
    RunLock,
    atomic_write_json,
    check_own_folder,
    crash_point,
    load_state_checked,
    load_tensors,
    read_json,
    remove_stale_files,
    write_checkpoint,
)
from .config import QUIET_GAP, RunConfig, config_diff, extends, layout_for, validate
from .devices import describe as describe_device
from .devices import resolve as resolve_device
from .devices import to_cpu
from .metrics import eval_guard, evaluate
from .summaries import num as _num
from .summaries import summarize
from .summaries import tau as tau_of
from .task import make_eval_set, make_sampler, make_task


def lr_at(cfg: RunConfig, step: int) -> float:
    """Learning rate for the update that takes the model from `step` to `step + 1`."""
    tr = cfg.train
    if tr.warmup_steps and step < tr.warmup_steps:
        return tr.lr * (step + 1) / tr.warmup_steps
    if tr.schedule == "cosine":
        span = max(1, tr.max_steps - tr.warmup_steps)
        return tr.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - tr.warmup_steps) / span)))
    return tr.lr


def make_optimizer(cfg: RunConfig, model: torch.nn.Module) -> torch.optim.AdamW:
    """AdamW; ``train.impl = "fast"`` takes the fused kernel (the same update and state, rounded
    differently)."""
    tr = cfg.train
    return torch.optim.AdamW(
        model.parameters(),
        lr=tr.lr,
        betas=(tr.beta1, tr.beta2),
        eps=tr.eps,
        weight_decay=tr.weight_decay,
        fused=True if tr.impl == "fast" else None,
    )


def train_step(
    cfg: RunConfig, forward, opt: torch.optim.Optimizer, tokens: torch.Tensor, step: int
) -> tuple[float, float]:
    """One update: the mean next-token cross-entropy over the target positions (A1..A4, EOS) of
    the batch ``tokens``, backward, optional clipping, AdamW at ``lr_at(step)``; returns the
    loss and the gradient's norm before clipping. ``forward`` maps the inputs [batch, seq_len - 1] (the EOS input
    predicts nothing) to the logits of the loss positions (``model.training_forward``). The trainer and the bench
    both step with this function; the batched trainer uses its parts (``batch_loss``,
    ``apply_update``)."""
    loss = batch_loss(cfg, forward(tokens[:, :-1]), tokens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = apply_update(cfg, opt, step)
    return loss.item(), norm


def batch_loss(
    cfg: RunConfig, logits: torch.Tensor, tokens: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean cross-entropy of the loss-position ``logits`` [batch, n_pred, vocab] against the next
    tokens of ``tokens`` [batch, seq_len]; ``weight`` [batch] (0 or 1) leaves padded rows out."""
    pos = layout_for(cfg.task).pred_positions
    target = tokens[:, pos.start + 1 : pos.stop + 1]
    if weight is None:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none").view(target.shape)
    return (ce * weight[:, None]).sum() / (weight.sum() * target.shape[1])


def apply_update(cfg: RunConfig, opt: torch.optim.Optimizer, step: int) -> float:
    """Clip (if ``grad_clip``) and take AdamW's step at ``lr_at(step)`` from the gradients in
    place; returns the gradient's global L2 norm before clipping (read only: without clipping
    the update is the same as if it were not computed)."""
    for g in opt.param_groups:
        g["lr"] = lr_at(cfg, step)
    params = [p for g in opt.param_groups for p in g["params"]]
    if cfg.train.grad_clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, cfg.train.grad_clip)
    else:
        norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    opt.step()
    return float(norm)


def optimizer_tensors(opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """AdamW's state as flat tensors ``opt.<param index>.<step|exp_avg|exp_avg_sq>`` (resume files)."""
    out = {}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            out[f"opt.{i}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    return out


def load_optimizer(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], path: Path | None = None) -> None:
    sd = opt.state_dict()
    params = [p for g in opt.param_groups for p in g["params"]]
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, v in tensors.items():
        if key.startswith("opt."):
            _, i, k = key.split(".", 2)
            ok = i.isdigit() and int(i) < len(params) and k in ("step", "exp_avg", "exp_avg_sq")
            if ok:
                want = () if k == "step" else tuple(params[int(i)].shape)
                ok = tuple(v.shape) == want and (k == "step" or v.is_floating_point())
            if not ok:
                raise RunError(f"{path}: optimizer state {key!r} does not match this model")
            state.setdefault(int(i), {})[k] = v
    for i, st in state.items():
        if set(st) != {"step", "exp_avg", "exp_avg_sq"}:
            raise RunError(f"{path}: optimizer state for parameter {i} is incomplete")
    sd["state"] = state
    opt.load_state_dict(sd)


def next_interval(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> int:
    """Checkpoint spacing after the last of ``records``: denser while the transition is under
    way in either family (0.1 log K < Lc or L_seq < 0.95 log K).

    The slow convergence tail below 0.1 log K goes back to the plateau spacing: it is long and
    nothing in it needs 25-step resolution. With ``train.ckpt_every_max`` above ``ckpt_every``,
    a run that sits on the plateau (both losses above 0.95 log K and the swap gap below
    ``QUIET_GAP``, the z-dependence that leads the loss's fall) doubles its spacing at each
    checkpoint up to that maximum, and returns to ``ckpt_every`` as soon as either moves.
    """
    log_K = cfg.task.log_K
    last = records[-1]["metrics"]
    lo = max(cfg.train.converge_Lc, 0.1 * log_K)
    if any(lo < _num(last.get(k)) < 0.95 * log_K for k in ("Lc", "L_seq")):
        return cfg.train.ckpt_every_transition
    top = cfg.train.ckpt_every_max
    quiet = (
        all(not _num(last.get(k)) < 0.95 * log_K for k in ("Lc", "L_seq")) and _num(last.get("swap_gap")) < QUIET_GAP
    )
    if top > cfg.train.ckpt_every and quiet and len(records) > 1 and records[-1]["step"] >= cfg.eval.plateau_start:
        return min(top, max(cfg.train.ckpt_every, 2 * (records[-1]["step"] - records[-2]["step"])))
    return cfg.train.ckpt_every


def should_stop(cfg: RunConfig, records: Sequence[dict[str, Any]]) -> bool:
    """The stopping rule ``train.stop``.

    "converge": Lc has fallen below ``converge_Lc``, ``margin_steps`` have passed since, and the
    step is at least ``post_tau_frac`` times the later of the two families' tau.
    "tau": the tau of the families named by ``tau_on`` are known and the step is at least
    ``tau_margin`` times the later.
    "floor": the last checkpoint's loss of the families named by ``tau_on`` is below
    ``stop_floor * log K`` (the original's phase-boundary early stop, 0.01 log K on L_seq).
    "budget": never early; the run ends at ``max_steps``.
    """
    if cfg.train.stop == "budget":
        return False
    steps = [r["step"] for r in records]

    def tau_for(key: str) -> float | None:
        return tau_of(steps, [r["metrics"].get(key) for r in records], cfg.task.log_K, cfg.eval.alpha)

    # the paper family is undefined for B-target directions: "both" waits for Lc alone there
    keys = {"paper": ("L_seq",), "first_token": ("Lc",)}.get(cfg.train.tau_on, ("Lc", "L_seq"))
    if not cfg.task.targets_A:
        keys = ("Lc",)
    if cfg.train.stop == "floor":
        floor = cfg.train.stop_floor * cfg.task.log_K
        return all(_num(records[-1]["metrics"].get(k)) < floor for k in keys)
    if cfg.train.stop == "tau":
        taus = [tau_for(k) for k in keys]
        return None not in taus and steps[-1] >= cfg.train.tau_margin * max(taus)
    known = [t for t in (tau_for("Lc"), tau_for("L_seq")) if t is not None]
    Lc = [r["metrics"]["Lc"] for r in records]
    conv = next((s for s, v in zip(steps, Lc) if v < cfg.train.converge_Lc), None)
    if conv is None:
        return False
    t = max(known) if known else conv
    return steps[-1] >= conv + cfg.train.margin_steps and steps[-1] >= cfg.train.post_tau_frac * t


def _provenance(argv: Sequence[str] | None, device: torch.device | None = None) -> dict[str, Any]:
    import importlib.metadata as md

    def version(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "argv": list(argv) if argv is not None else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {p: version(p) for p in ("mi-plateau", "torch", "transformer-lens", "numpy", "safetensors")},
        "torch_threads": torch.get_num_threads(),
        **describe_device(device or torch.device("cpu")),
    }


def train(
    cfg: RunConfig | None,
    out: str | os.PathLike,
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
    device: str | torch.device | None = "auto",
) -> Run:
    """Train a run into folder `out` and return it.

    With ``resume=True`` an existing folder continues from its last checkpoint (its stored
    config is used; a different `cfg` is refused). Without it, an existing run is refused.
    ``device``: where the model, the optimizer and the evaluation live (``devices.resolve``:
    "auto" takes a GPU when there is one); the folder holds CPU tensors whatever it is.
    """
    dev = resolve_device(device)
    run = Run(out)
    if cfg is not None:
        validate(cfg)  # before the lock creates the folder
    if run.path.is_symlink():
        raise RunError(f"{run.path}: is a symbolic link; give the run folder itself")
    with RunLock(run.path):
        member = Member(open_config(cfg, run, resume, argv, dev), run, dev)
        _train_loop(member, progress=progress)
    return run


def open_config(
    cfg: RunConfig | None,
    run: Run,
    resume: bool,
    argv: Sequence[str] | None,
    device: torch.device | None = None,
    *,
    write: bool = True,
) -> RunConfig:
    """The config a run folder trains with; call it holding the folder's lock. A new folder
    gets ``cfg`` (config.json and command.json written); an existing one keeps its stored config
    (``resume`` required; a different ``cfg`` is refused unless it only raises the step cap).
    ``write=False``: every check and the answer, nothing written (the batched trainer checks all
    its folders before it writes into any)."""
    check_own_folder(run.path)
    # a run killed before its first checkpoint was committed has a config but no manifest yet
    if run.exists() or (resume and (run.path / "config.json").exists()):
        if not resume:
            raise RunError(
                f"{run.path}: a run already exists here; pass --resume to continue it or choose another --out"
            )
        stored = run.config()  # validated, and checked against the config the manifest records
        recorded = run.recorded_config()
        if cfg is not None and cfg.to_dict() != stored.to_dict():
            if not extends(stored, cfg):
                diff = config_diff(stored.to_dict(), cfg.to_dict())
                raise RunError(f"{run.path / 'config.json'}: resume with a different config is refused ({diff})")
            if not _stopped_by_rule(stored, run):  # a run its own rule stopped keeps its config
                if write:
                    _write_raised_cap(cfg, run, device)
                stored = cfg
        elif write and recorded is not None and recorded.train.max_steps != stored.train.max_steps:
            # a raise killed between its two writes (run.config allows no other difference): finish it
            _write_raised_cap(stored, run, device)
        cfg = stored
    else:
        if cfg is None:
            raise RunError(f"{run.path}: no run to resume here")
        validate(cfg)
        if not write:
            return cfg
        run.path.mkdir(parents=True, exist_ok=True)
        # provenance first: config.json makes the folder a run, so a kill between the two writes
        # leaves a folder that a rerun starts afresh, never a run without its command
        atomic_write_json(run.path / "command.json", _provenance(argv, device))
        atomic_write_json(run.path / "config.json", cfg.to_dict())
    return validate(cfg)


def _write_raised_cap(cfg: RunConfig, run: Run, device: torch.device | None) -> None:
    """Store a raised step cap (``config.extends``): config.json, then the manifest's record of
    the config, each written atomically. First the restore that the resume will do is done once
    (``Member``: weights, optimizer and sampler state, checksums, dtypes), so that a resume
    refused for a damaged file has written nothing. A kill between the two writes leaves a
    config.json that only raises the recorded cap: the readers accept it, the next resume
    finishes the write."""
    if run.exists():
        Member(cfg, run, device)  # its checks only; a folder with a manifest gets no checkpoint from it
    atomic_write_json(run.path / "config.json", cfg.to_dict())
    if run.exists():
        m = run.manifest()
        m["config"] = cfg.to_dict()
        atomic_write_json(run.path / "manifest.json", m)


def _stopped_by_rule(cfg: RunConfig, run: Run) -> bool:
    """The run finished because its stopping rule said so (not at its step cap): a higher cap
    changes nothing."""
    if not run.exists():
        return False
    m = run.manifest()
    recs = [c["record"] for c in m["checkpoints"]]
    return m.get("status") == "finished" and bool(recs) and should_stop(cfg, recs)


def init_source(cfg: RunConfig, run: Run) -> tuple[Run, int]:
    """The run and checkpoint ``train.init_from`` / ``train.init_step`` name (a relative folder
    is read from ``run``'s parent folder); a one-line RunError where there is none to start from."""
    where = Path(cfg.train.init_from)
    src = Run(where if where.is_absolute() else run.path.parent / where)
    if not src.exists():
        raise RunError(f"train.init_from={cfg.train.init_from!r}: no run at {src.path}")
    steps = src.steps()
    if cfg.train.init_step < 0:
        if src.manifest().get("status") != "finished":
            raise RunError(
                f"train.init_from={cfg.train.init_from!r}: {src.path} has not finished (its last "
                "checkpoint is not final yet); finish it or name a checkpoint with train.init_step"
            )
        return src, steps[-1]
    if cfg.train.init_step not in steps:
        raise RunError(
            f"train.init_step={cfg.train.init_step}: {src.path} has no checkpoint there "
            f"(its steps run {steps[0]}..{steps[-1]})"
        )
    return src, cfg.train.init_step


def load_init(cfg: RunConfig, run: Run, model: torch.nn.Module) -> dict[str, Any]:
    """Load the weights ``train.init_from`` names into ``model`` (in place: the optimizer made on
    it stays valid) and return what the manifest keeps of them: the source folder, its step and
    the SHA-256 of its weights file. The source's model must have this run's shapes."""
    src, step = init_source(cfg, run)
    theirs = src.config().model
    if theirs.act_fn != cfg.model.act_fn:  # the shapes load_state_checked checks; the activation it cannot see
        raise RunError(
            f"train.init_from={cfg.train.init_from!r}: {src.path} uses model.act_fn={theirs.act_fn!r}, "
            f"this run {cfg.model.act_fn!r}"
        )
    load_state_checked(model, src.weights(step), src.weights_path(step))
    return {"run": str(src.path), "step": step, "sha256": src.weights_sha256([step])[step]}


class Member:
    """One run being trained: its model, optimizer, sampler and evaluation set, restored from
    the folder's last checkpoint if it has one; ``after_step`` counts a step and writes the
    checkpoint when one is due. The single-run trainer drives one, the batched trainer several
    (``batched``). The caller holds the folder's lock. ``device``: where its model, optimizer
    and evaluation live (the CPU by default)."""

    def __init__(self, cfg: RunConfig, run: Run, device: torch.device | None = None):
        from .model import build_model

        self.cfg, self.run = cfg, run
        self.device = device or torch.device("cpu")
        task = make_task(cfg.task)
        self.ev = make_eval_set(task, cfg.eval).on(self.device)
        self.model = build_model(cfg)  # on the CPU; moved before the optimizer, which holds the parameters
        if self.device.type != "cpu":  # (TransformerBridge.to prints a line even for a no-op move)
            self.model = self.model.to(self.device)
        self.opt = make_optimizer(cfg, self.model)
        self.sampler = make_sampler(task, cfg.train.batching, cfg.train.batch_size, cfg.train.batch_seed)
        self.done = False
        if run.exists():
            self._restore()
        else:
            self.wall_before = 0.0
            self.manifest = {"format_version": FORMAT_VERSION, "status": "running", "checkpoints": [], "resume": None}
            remove_stale_files(run, self.manifest)  # leftovers of an attempt killed before its first commit
            self.step = 0
            if cfg.train.init_from:
                self.manifest["init"] = load_init(cfg, run, self.model)
        self.records = [c["record"] for c in self.manifest["checkpoints"]]
        self.t0 = time.perf_counter() - self.wall_before
        self.running, self.n_run, self.norms = 0.0, 0, []
        if not self.done:
            if self.step == 0 and not self.records:
                self.checkpoint(0, None)
            self.next_ckpt = self.step + next_interval(cfg, self.records)
        self.model.train()

    def _restore(self) -> None:
        cfg, run = self.cfg, self.run
        manifest = self.manifest = run.manifest()
        remove_stale_files(run, manifest)  # we hold the lock: any temporary file is a dead writer's
        ckpts = manifest["checkpoints"]
        if manifest.get("status") == "finished":
            recs = [c["record"] for c in ckpts]
            if should_stop(cfg, recs) or recs[-1]["step"] >= cfg.train.max_steps:
                self.done, self.step, self.wall_before = True, recs[-1]["step"], 0.0
                return
            manifest["status"] = "running"  # finished at a cap that `extends` has raised
            manifest.pop("summary", None)
        if not ckpts or not manifest.get("resume"):
            raise RunError(f"{run.path / 'manifest.json'}: names no checkpoint and resume state to continue from")
        last = ckpts[-1]
        wpath = run.inside(last["weights"])
        load_state_checked(self.model, load_tensors(wpath, last.get("sha256")), wpath)
        spath = run.inside(manifest["resume"])
        state = load_tensors(spath, manifest.get("resume_sha256"))
        load_optimizer(self.opt, state, spath)
        try:
            self.sampler.load_state(state)
        except (KeyError, TypeError, RuntimeError, ValueError) as e:
            raise RunError(f"{spath}: the sampler state is missing or does not fit this run ({e})") from None
        self.step = last["step"]
        try:  # wall_s counts training time across resumes
            self.wall_before = float(read_json(run.inside(last["record_file"])).get("wall_s", 0.0))
        except (ValueError, KeyError, TypeError, AttributeError, RunError):
            self.wall_before = 0.0

    def checkpoint(self, step: int, train_loss: float | None, norms: dict[str, float] | None = None) -> None:
        cfg, model = self.cfg, self.model
        wall = time.perf_counter() - self.t0 if step else 0.0
        model.eval()
        metrics = evaluate(
            model, self.ev, seq_groups=cfg.eval.seq_groups(cfg.task.K), guard=eval_guard(cfg, self.ev, step)
        )
        model.train()
        record = {
            "step": step,
            "examples_seen": cfg.examples_seen(step),
            "lr": lr_at(cfg, max(step - 1, 0)) if step else 0.0,
            "train_loss": train_loss,
            # the gradient's norm before clipping over the steps since the last checkpoint: mean,
            # max, and the share of steps that clipping shortened (None without clipping)
            "grad_norm_mean": norms["mean"] if norms else None,
            "grad_norm_max": norms["max"] if norms else None,
            "clipped_frac": norms["clipped"] if norms and cfg.train.grad_clip > 0 else None,
            # the mean squared norm over the same steps (Table 11's dissipation Q reads it)
            "grad_norm_sq_mean": norms["sq_mean"] if norms else None,
            "device": str(self.device),
            "metrics": metrics,
        }
        self.records.append(record)
        self.done = should_stop(cfg, self.records) or step >= cfg.train.max_steps
        write_checkpoint(
            self.run.path,
            self.manifest,
            record,
            wall,
            to_cpu(model.state_dict()),
            to_cpu({**optimizer_tensors(self.opt), **self.sampler.state()}),
            summarize(cfg, self.records) if self.done else None,
        )

    def after_step(self, loss: float, grad_norm: float | None = None) -> bool:
        """Count the step just taken (its loss and gradient norm); checkpoint if one is due.
        True if it did."""
        self.running += loss
        self.step += 1
        self.n_run += 1
        if grad_norm is not None:
            self.norms.append(grad_norm)
        crash_point("step")
        if self.step >= self.next_ckpt or self.step >= self.cfg.train.max_steps:
            n = self.norms
            clip = self.cfg.train.grad_clip
            norms = (
                {
                    "mean": sum(n) / len(n),
                    "max": max(n),
                    "clipped": sum(x > clip for x in n) / len(n),
                    "sq_mean": sum(x * x for x in n) / len(n),
                }
                if n
                else None
            )
            self.checkpoint(self.step, self.running / self.n_run, norms)
            self.running, self.n_run, self.norms = 0.0, 0, []
            self.next_ckpt = self.step + next_interval(self.cfg, self.records)
            return True
        return False


def _train_loop(m: Member, *, progress: bool) -> None:
    from .model import training_forward

    if m.done:
        return
    cfg = m.cfg
    # The step runs on the bridge's own parameters without its hooks (model.training_forward);
    # evaluation, checkpoints and every analysis still read the TransformerBridge.
    forward = training_forward(cfg, m.model)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=cfg.train.max_steps, initial=m.step, desc=m.run.name, unit="step", dynamic_ncols=True, file=sys.stderr
        )
    try:
        while not m.done:
            loss, norm = train_step(cfg, forward, m.opt, m.sampler.sample().to(m.device, non_blocking=True), m.step)
            wrote = m.after_step(loss, norm)
            if bar is not None:
                bar.update(1)
                if wrote:
                    x = m.records[-1]["metrics"]
                    bar.set_postfix(
                        L_seq=f"{x['L_seq']:.3f}",
                        Lc=f"{x['Lc']:.3f}",
                        gap=f"{x['swap_gap']:.3f}",
                        acc=f"{x['acc_mean']:.2f}",
                    )
    finally:
        if bar is not None:
            bar.close()
