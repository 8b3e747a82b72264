"""The run being trained (``Member``): its model, optimizer, sampler and evaluation set, restored
from the folder's last checkpoint if it has one, counting steps and writing each checkpoint
when the spacing rule says one is due."""

from __future__ import annotations

import math
import time

import torch

from ..checkpoints import (
    FORMAT_VERSION,
    Run,
    RunError,
    crash_point,
    load_state_checked,
    load_tensors,
    read_json,
    remove_stale_files,
    write_checkpoint,
    write_manifest,
)
from ..config import RunConfig, layout_for
from ..devices import check_precision, configure, in_precision, to_cpu
from ..metrics import evaluate, live_subset
from ..model import build_model
from ..model.forward import Weights, forward
from ..settle import retire_live, settled_summary
from ..summaries import nan_to_none, summarize
from ..task import derangement, make_eval_set, make_sampler, make_task
from .init_from import load_init
from .rules import next_interval, run_over
from .step import load_optimizer, lr_at, make_optimizer, optimizer_tensors
from .tracking import checkpoint_scalars, open_tracker


def diverged_quantity(record: dict) -> str | None:
    """The first quantity of a checkpoint record that is not finite (the training loss since the
    last checkpoint, then Lc, the gradient norm): the run has diverged; None where all are."""
    checks = [("train_loss", record.get("train_loss")), ("Lc", record["metrics"].get("Lc"))]
    checks.append(("grad_norm_max", record.get("grad_norm_max")))
    for name, v in checks:
        if v is not None and not math.isfinite(v):
            return name
    return None


class Member:
    """One run being trained: its model, optimizer, sampler and evaluation set, restored from
    the folder's last checkpoint if it has one; ``after_step`` counts a step and writes the
    checkpoint when one is due. The single-run trainer drives one, the batched trainer several
    (``batched``). The caller holds the folder's lock. ``device``: where its model, optimizer
    and evaluation live (the CPU by default). ``track``: log each checkpoint it writes to the
    tracker ``train.log`` names (``tracking``; False for a Member made only for its checks);
    ``close`` closes that tracker."""

    def __init__(self, cfg: RunConfig, run: Run, device: torch.device | None = None, *, track: bool = True):
        self.cfg, self.run = cfg, run
        self.device = device or torch.device("cpu")
        check_precision(self.device, cfg.train.precision)
        configure(self.device)
        task = make_task(cfg.task)
        self.ev = make_eval_set(task, cfg.eval).on(self.device)
        self.live = live_subset(cfg.eval.live_groups, self.ev.groups, cfg.task.K, cfg.eval.eval_seed)
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
        self.firsts: list[float] = []  # the first-token loss of each step since the last checkpoint (single run)
        self.last_batch: torch.Tensor | None = None
        # opened before the first checkpoint it logs; a resumed run logs only what it writes from here
        self.tracker = open_tracker(cfg, run, self.step) if track and not self.done else None
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
            if run_over(cfg, recs):
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
        try:  # wall_s counts training time across resumes, with every evaluation before the checkpoint
            rec = read_json(run.inside(last["record_file"]))
            self.wall_before = float(rec.get("wall_s", 0.0)) + float(rec.get("eval_s") or 0.0)
        except (ValueError, KeyError, TypeError, AttributeError, RunError):
            self.wall_before = 0.0

    def checkpoint(
        self,
        step: int,
        train_loss: float | None,
        norms: dict[str, float] | None = None,
        first_mean: float | None = None,
    ) -> None:
        """Evaluate and write the checkpoint at ``step``: the means since the last one (training loss,
        gradient-norm statistics, the training batches' first-token loss) go into its record."""
        cfg, model = self.cfg, self.model
        wall = time.perf_counter() - self.t0 if step else 0.0
        model.eval()
        t_eval = time.perf_counter()
        # L_seq live until its estimate is below every threshold a live rule or a default question reads
        seq = self.live is None or not retire_live(cfg, self.records)
        # in the training's precision: bf16 evaluation moved no crossing on the runs checked
        # (docs/reproduction/eval_precision.md); settlement's full scorings stay fp32
        metrics = evaluate(model, self.ev, live=self.live, sequence=seq, precision=cfg.train.precision)
        eval_s = time.perf_counter() - t_eval
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
            # Table 11's original z-gap: the training batches' first-token loss, the mean over the
            # steps since the last checkpoint, and the last batch's with z deranged across it
            "train_first_loss": first_mean,
            "train_first_loss_z_deranged": self._deranged_first_loss(step),
            "device": str(self.device),
            "precision": cfg.train.precision,
            "eval_precision": cfg.train.precision,
            "metrics": metrics,
        }
        bad = diverged_quantity(record)
        if bad is not None:  # a result, not damage: recorded, and the run ends here
            record["diverged"] = {"step": step, "quantity": bad}
        self.records.append(record)
        self.done = run_over(cfg, self.records)
        write_checkpoint(
            self.run.path,
            self.manifest,
            record,
            wall,
            to_cpu(model.state_dict()),
            to_cpu({**optimizer_tensors(self.opt), **self.sampler.state()}),
            summarize(cfg, self.records) if self.done else None,
            eval_s=eval_s,
        )
        if self.tracker is not None:  # after the commit: what it logs is what the folder holds
            self.tracker.log(step, checkpoint_scalars(cfg, self.records))
        if self.done:
            self.finish()

    def close(self) -> None:
        """Flush and close the tracker, if there is one (the trainers call it however training ends)."""
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None

    def finish(self) -> None:
        """Put the finished run's summary (``settle.run_summary``'s) in the manifest: every crossing the
        live estimate's, with its interval, or exact where a settlement cache already holds it.
        Training never settles (``mi-plateau settle`` does, on request)."""
        summary = settled_summary(self.run, allow_scoring=False)
        self.manifest["summary"] = nan_to_none(summary)
        write_manifest(self.run.path, self.manifest)

    def _deranged_first_loss(self, step: int) -> float | None:
        """The first-token loss (whole vocabulary) of the last training batch with its selectors
        deranged across the batch (a permutation without a fixed point, seeded by the step; the
        target stays each example's own): the left side of Table 11's original z-gap. None
        before the first step, or without a selector."""
        batch, lay = self.last_batch, layout_for(self.cfg.task)
        if batch is None or len(batch) < 2 or not self.cfg.task.has_selector:
            return None
        z, fp = lay.span("z"), lay.first_pred
        perm = torch.as_tensor(derangement(len(batch), step), device=batch.device)
        toks = batch[:, : fp + 1].clone()
        toks[:, z.start : z.stop] = batch[perm, z.start : z.stop]
        W = Weights.of(self.model.state_dict(), self.model.cfg)
        with torch.no_grad():  # in the training forward's precision, as the clean side is
            logits = in_precision(lambda t: forward(W, t), self.cfg.train.precision)(toks)[:, fp]
            return float(torch.nn.functional.cross_entropy(logits.float(), batch[:, fp + 1]))

    def after_step(
        self, loss: float, grad_norm: float | None = None, first: float | None = None, batch: torch.Tensor | None = None
    ) -> bool:
        """Count the step just taken (its loss, gradient norm, first-token loss and batch);
        checkpoint if one is due. True if it did."""
        if first is not None:
            self.firsts.append(first)
        self.running += loss
        self.n_run += 1
        if grad_norm is not None:
            self.norms.append(grad_norm)
        if self.count(batch):
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
            first_mean = sum(self.firsts) / len(self.firsts) if self.firsts else None
            self.take_checkpoint(self.running / self.n_run, norms, first_mean)
            return True
        return False

    def count(self, batch: torch.Tensor | None) -> bool:
        """Count one step taken on ``batch`` (the last one is kept: Table 11's deranged loss reads
        it); True when a checkpoint is due."""
        self.last_batch = batch
        self.step += 1
        crash_point("step")
        return self.step >= self.next_ckpt or self.step >= self.cfg.train.max_steps

    def take_checkpoint(self, train_loss: float, norms: dict[str, float] | None, first_mean: float | None) -> None:
        """Write the due checkpoint from the means over the steps since the last one (the training
        loss, the gradient norm's statistics, the training batches' first-token loss), and reset."""
        self.checkpoint(self.step, train_loss, norms, first_mean)
        self.running, self.n_run, self.norms, self.firsts = 0.0, 0, [], []
        self.next_ckpt = self.step + next_interval(self.cfg, self.records)
