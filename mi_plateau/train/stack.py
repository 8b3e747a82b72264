"""M runs' parameters and AdamW state as stacked tensors, updated by one fused step (the batched
trainer's state, ``batched``).

Every trainable tensor of the members is one leaf ``[M, ...]`` (``params``); AdamW's moments
are tensors of the same shapes and its step count, learning rate, betas, eps, weight decay and
clipping norm are ``[M]`` tensors, so one update serves every member with its own schedule and
clipping. Nothing in ``step`` reads a value back to the host: the training losses, the gradient
norms (before clipping), their squares, maxima and clipped counts, and the first-token losses
accumulate in device buffers (``Stats``) that the trainer reads when a member's checkpoint is due.
The members' own modules and AdamW hold their state only at checkpoints (``sync``): what their
run folders and resume files get, in the single-run trainer's format.

The update is torch's AdamW written out (decoupled weight decay, bias-corrected moments, eps
outside the square root) and clipping is ``clip_grad_norm_``'s (coefficient max_norm / (norm +
1e-6), at most 1); the bias corrections are computed in fp32 tensors rather than Python floats,
so a member equals its single run within float rounding, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .step import lr_at


@dataclass
class Stats:
    """Per member, sums over the steps since its last checkpoint (device tensors ``[M]``)."""

    loss: torch.Tensor
    first: torch.Tensor
    norm: torch.Tensor
    norm_sq: torch.Tensor
    norm_max: torch.Tensor
    clipped: torch.Tensor

    @classmethod
    def zeros(cls, m: int, device: torch.device) -> Stats:
        return cls(*(torch.zeros(m, device=device, dtype=torch.float64) for _ in range(6)))

    def add(self, loss, first, norm, clipped) -> None:
        self.loss += loss.detach().double()
        self.first += first.double()
        self.norm += norm.double()
        self.norm_sq += norm.double() ** 2
        torch.maximum(self.norm_max, norm.double(), out=self.norm_max)
        self.clipped += clipped.double()

    def take(self, i: int, n: int, clip: float) -> tuple[float, dict[str, float], float]:
        """Member ``i``'s means over its ``n`` steps (the one host read, at its checkpoint), and
        its sums reset: (training loss, gradient-norm statistics, first-token loss)."""
        v = torch.stack([getattr(self, k)[i] for k in ("loss", "first", "norm", "norm_sq", "norm_max", "clipped")])
        loss, first, norm, sq, mx, clipped = v.tolist()
        for k in ("loss", "first", "norm", "norm_sq", "norm_max", "clipped"):
            getattr(self, k)[i] = 0.0
        norms = {"mean": norm / n, "max": mx, "clipped": clipped / n if clip > 0 else 0.0, "sq_mean": sq / n}
        return loss / n, norms, first / n

    def keep(self, rows: torch.Tensor) -> None:
        for k in ("loss", "first", "norm", "norm_sq", "norm_max", "clipped"):
            setattr(self, k, getattr(self, k)[rows])


class Stack:
    """The members' trainable tensors stacked (``params``: name -> leaf ``[M, ...]``), the
    others (``fixed``), and AdamW's state for all of them (module docstring)."""

    def __init__(self, members: Sequence):
        self.members = list(members)
        dev = self.members[0].device
        self.order = [_trainable(m) for m in self.members]  # per member: its params in its AdamW's order
        sds = [m.model.state_dict(keep_vars=True) for m in self.members]
        index = {id(p): i for i, p in enumerate(self.order[0])}
        self.names = list(sds[0])
        self.slot = {k: index.get(id(v)) for k, v in sds[0].items()}  # state-dict name -> AdamW index (None: fixed)
        with torch.no_grad():
            self.params = {
                k: torch.stack([sd[k].detach() for sd in sds]).requires_grad_(True)
                for k, i in self.slot.items()
                if i is not None
            }
            self.fixed = {k: torch.stack([sd[k].detach() for sd in sds]) for k, i in self.slot.items() if i is None}
            by_index = {i: k for k, i in self.slot.items() if i is not None}
            self.keys = [by_index[i] for i in range(len(by_index))]  # trainable names in AdamW's order
            self.exp_avg, self.exp_avg_sq, steps = {}, {}, []
            for j, m in enumerate(self.members):
                st = [m.opt.state.get(p, {}) for p in self.order[j]]
                steps.append(float(st[0]["step"]) if st and "step" in st[0] else 0.0)
                for k, s, p in zip(self.keys, st, self.order[j]):
                    self.exp_avg.setdefault(k, []).append(s.get("exp_avg", torch.zeros_like(p)).detach())
                    self.exp_avg_sq.setdefault(k, []).append(s.get("exp_avg_sq", torch.zeros_like(p)).detach())
            self.exp_avg = {k: torch.stack(v).to(dev) for k, v in self.exp_avg.items()}
            self.exp_avg_sq = {k: torch.stack(v).to(dev) for k, v in self.exp_avg_sq.items()}
        tr = [m.cfg.train for m in self.members]
        vec = lambda xs: torch.tensor(xs, device=dev, dtype=torch.float32)  # noqa: E731
        self.t = vec(steps)
        self.beta1, self.beta2 = vec([t.beta1 for t in tr]), vec([t.beta2 for t in tr])
        self.eps, self.wd = vec([t.eps for t in tr]), vec([t.weight_decay for t in tr])
        self.clip = vec([t.grad_clip if t.grad_clip > 0 else float("inf") for t in tr])
        self.stats = Stats.zeros(len(self.members), dev)

    def weights(self) -> dict[str, torch.Tensor]:
        """Every state-dict tensor, stacked (what the stacked forward reads)."""
        return {k: self.params[k] if k in self.params else self.fixed[k] for k in self.names}

    def lrs(self) -> torch.Tensor:
        """Each member's learning rate for its next update (host values: the schedules are pure)."""
        return torch.tensor([lr_at(m.cfg, m.step) for m in self.members], dtype=torch.float32).to(
            self.t.device, non_blocking=True
        )

    @torch.no_grad()
    def update(self, lr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Clip each member's gradient to its norm and take AdamW's step, all members at once;
        returns (each member's gradient norm before clipping, whether clipping shortened it)."""
        grads = [self.params[k].grad for k in self.keys]
        m = len(self.members)
        norm = torch.stack([g.reshape(m, -1).pow(2).sum(1) for g in grads]).sum(0).sqrt()
        coef = torch.clamp(self.clip / (norm + 1e-6), max=1.0)
        self.t += 1
        c1 = 1 - self.beta1**self.t
        c2 = 1 - self.beta2**self.t
        for k, g in zip(self.keys, grads):
            p, a, s = self.params[k], self.exp_avg[k], self.exp_avg_sq[k]
            shape = (m,) + (1,) * (p.dim() - 1)
            view = lambda x: x.view(shape)  # noqa: E731
            g = g * view(coef)
            p.mul_(1 - view(lr * self.wd))
            a.lerp_(g, view(1 - self.beta1))
            s.mul_(view(self.beta2)).addcmul_(g, g * view(1 - self.beta2))
            denom = (s.sqrt() / view(c2.sqrt())).add_(view(self.eps))
            p.sub_(view(lr / c1) * a / denom)
            self.params[k].grad = None
        return norm, norm > self.clip

    @torch.no_grad()
    def sync(self, i: int) -> None:
        """Member ``i``'s module and AdamW hold its slice of the stack (before its checkpoint)."""
        m = self.members[i]
        sd = m.model.state_dict(keep_vars=True)
        for k in self.params:
            sd[k].data.copy_(self.params[k][i])
        for k, p in zip(self.keys, self.order[i]):
            m.opt.state[p] = {
                "step": self.t[i].detach().to("cpu").clone(),
                "exp_avg": self.exp_avg[k][i].clone(),
                "exp_avg_sq": self.exp_avg_sq[k][i].clone(),
            }

    def keep(self, rows: Sequence[int]) -> None:
        """Only the members at ``rows`` go on (a stopped member drops out)."""
        idx = torch.as_tensor(list(rows), dtype=torch.long, device=self.t.device)
        self.members = [self.members[i] for i in rows]
        self.order = [self.order[i] for i in rows]
        with torch.no_grad():
            self.params = {k: v[idx].detach().requires_grad_(True) for k, v in self.params.items()}
            self.fixed = {k: v[idx] for k, v in self.fixed.items()}
            self.exp_avg = {k: v[idx] for k, v in self.exp_avg.items()}
            self.exp_avg_sq = {k: v[idx] for k, v in self.exp_avg_sq.items()}
        for k in ("t", "beta1", "beta2", "eps", "wd", "clip"):
            setattr(self, k, getattr(self, k)[idx])
        self.stats.keep(idx)


def _trainable(member) -> list[torch.nn.Parameter]:
    return [p for g in member.opt.param_groups for p in g["params"]]
