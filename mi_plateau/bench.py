"""``mi-plateau bench``: the toolkit's training step and analysis passes against plain references.

Four measurements, side by side in one process, candidates alternated (ABBA order, so load
that drifts during the run falls on every candidate alike):

1. **Training step.** The trainer's step (``train._train_loop``: sample, ``build_model`` bridge
   forward on ``tokens[:, :-1]``, cross-entropy over the target positions, backward, AdamW)
   against ``PlainTransformer``, the same architecture written as a small ``nn.Module``, with the
   same optimiser. Throughput is put against a measured fp32 matmul peak. FLOPs per step::

       6 * N_mm * B * P  +  3 * n_layers * B * 4 * P^2 * d_model

   ``N_mm`` is the number of weights that take part in matmuls (attention, MLP, unembedding; the
   embeddings are lookups), ``B * P`` the tokens of a step (P = seq_len - 1), the second term the
   attention products QK^T and pattern @ V over the full P x P square; x3 for forward + backward.
   Candidate fast paths (opt-in ideas, not the trainer's default) run in the same alternation and
   their 50-step loss curve is checked against the default path.
2. **Analysis passes** at one checkpoint: ``checkpoint_passes`` (batched, functional forward)
   against ``loop_passes``, the straightforward TransformerLens version (``run_with_cache`` for
   the patterns, one ``run_with_hooks`` per head and input for the ablations, one per layer for
   the patching), both on the paper evaluation set. Their numbers are compared too.
3. **Checkpoint overhead**: ``metrics.evaluate`` and the files of one checkpoint, against the 50
   training steps between two checkpoints; and ``evaluate_packed``, an idea that gets the same
   metrics from one packed forward.
4. **End to end** (not with ``--quick``): the training wall time recorded by the finished run
   ``checkpoints/paper_K10_nb1000_s0`` and the time of ``analyze_run`` over it (into a temp dir);
   and the toolkit's step at 1 thread against one thread per core (oversubscription check).

Nothing is written outside temporary folders. See docs/performance.md for results.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from .config import RunConfig, layout_for, preset
from .task import D_VOCAB, BatchSampler, make_eval_set, make_task

E2E_RUN = Path("checkpoints/paper_K10_nb1000_s0")
QUICK_CANDIDATES = ["toolkit", "plain", "fast"]
FULL_CANDIDATES = ["toolkit", "plain", "plain+sdpa", "plain+last", "plain+fused", "fast", "fast+compile"]


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# --- the reference model ------------------------------------------------------------


class PlainBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_head: int, d_mlp: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_head
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.q, self.k, self.v = (nn.Linear(d_model, n_heads * d_head) for _ in range(3))
        self.o = nn.Linear(n_heads * d_head, d_model)
        self.mlp_in, self.mlp_out = nn.Linear(d_model, d_mlp), nn.Linear(d_mlp, d_model)

    def forward(self, x: Tensor, mask: Tensor, rows: slice | Tensor = slice(None), sdpa: bool = False) -> Tensor:
        """``rows``: the positions whose output is wanted (queries, attention output and MLP are
        computed there only; keys and values everywhere); ``mask[i, j]``: row i may see key j."""
        B, P, _ = x.shape
        H, E = self.n_heads, self.d_head
        h = self.ln1(x)
        q = self.q(h[:, rows]).view(B, -1, H, E).transpose(1, 2)
        k = self.k(h).view(B, P, H, E).transpose(1, 2)
        v = self.v(h).view(B, P, H, E).transpose(1, 2)
        if sdpa:
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            scores = (q @ k.transpose(-1, -2) / math.sqrt(E)).masked_fill(~mask, float("-inf"))
            z = scores.softmax(-1) @ v
        x = x[:, rows] + self.o(z.transpose(1, 2).reshape(B, -1, H * E))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.ln2(x))))


class PlainTransformer(nn.Module):
    """The paper architecture in plain PyTorch: token + position embedding, pre-LN blocks with
    causal multi-head attention and a GELU MLP, final LayerNorm, unembedding without bias.

    ``forward(tokens, from_pos)`` returns logits for positions ``from_pos..`` only: the last
    block then computes queries, attention output and MLP at those positions alone (the keys
    and values of every position are still computed). ``from_pos=0`` is the ordinary forward.
    """

    def __init__(self, cfg: RunConfig, sdpa: bool = False):
        super().__init__()
        m = cfg.model
        self.sdpa = sdpa
        self.embed = nn.Embedding(D_VOCAB, m.d_model)
        self.pos_embed = nn.Embedding(layout_for(cfg.task).seq_len, m.d_model)
        self.blocks = nn.ModuleList(PlainBlock(m.d_model, m.n_heads, m.d_head, m.d_mlp) for _ in range(m.n_layers))
        self.ln_final = nn.LayerNorm(m.d_model)
        self.unembed = nn.Linear(m.d_model, D_VOCAB, bias=False)

    def forward(self, tokens: Int[Tensor, "batch pos"], from_pos: int = 0) -> Float[Tensor, "batch out_pos vocab"]:
        P = tokens.shape[1]
        return self.run(tokens, torch.arange(P), torch.ones(P, P, dtype=torch.bool).tril(), slice(from_pos, None))

    def run(self, tokens: Int[Tensor, "batch pos"], positions: Int[Tensor, "pos"], mask: Tensor, rows: slice | Tensor):
        """Forward with explicit position ids, attention mask [pos, pos] and output rows."""
        x = self.embed(tokens) + self.pos_embed.weight[positions]
        full = slice(None)
        for i, b in enumerate(self.blocks):
            last = i == len(self.blocks) - 1
            x = b(x, mask[rows] if last else mask, rows if last else full, self.sdpa)
        return self.unembed(self.ln_final(x))

    @staticmethod
    def tl_name(name: str) -> str:
        """Our parameter name -> the bridge's TransformerLens state-dict name."""
        return name.replace("mlp_in.", "mlp.in.").replace("mlp_out.", "mlp.out.").replace(".q.", ".attn.q.") \
            .replace(".k.", ".attn.k.").replace(".v.", ".attn.v.").replace(".o.", ".attn.o.")

    @classmethod
    def from_bridge(cls, model: nn.Module, cfg: RunConfig, *, share: bool, sdpa: bool = False) -> "PlainTransformer":
        """A copy of the bridge's weights (``share=False``), or a module whose parameters *are*
        the bridge's Parameter objects (``share=True``): training through it updates the bridge,
        so its optimizer, state dict and checkpoints stay exactly the trainer's."""
        plain = cls(cfg, sdpa)
        sd = model.state_dict(keep_vars=True)
        assert not sd["unembed.bias"].any(), "the native bridge's unembedding bias is a zero buffer"
        for name, p in list(plain.named_parameters()):
            src = sd[cls.tl_name(name)]
            mod_name, _, attr = name.rpartition(".")
            mod = plain.get_submodule(mod_name)
            if share:
                setattr(mod, attr, src)
            else:
                with torch.no_grad():
                    p.copy_(src)
        return plain


@torch.no_grad()
def evaluate_packed(plain: PlainTransformer, ev, batch: int = 4096) -> dict[str, Any]:
    """``metrics.evaluate``'s numbers from less work (an opt-in idea, measured by the bench).

    One forward per batch on a packed sequence: the clean positions 0..seq_len-2 (EOS predicts
    nothing) followed by the selector-swapped positions zs..fp only; a swapped position attends
    to the clean keys before zs (the same tokens, so, causally, the same keys and values) and to
    the swapped positions up to itself. The last block computes only the rows that are read."""
    from .metrics import candidate_losses, example_correct, group_accuracy, target_loss

    if not ev.task.cfg.has_selector:
        raise ValueError(f"evaluate_packed: direction {ev.task.cfg.direction!r} has no selector to swap")
    lay, K = ev.task.layout, ev.task.cfg.K
    P, fp, zs = lay.seq_len - 1, lay.first_pred, lay.selector_positions.start
    n_sw = fp + 1 - zs
    positions = torch.cat([torch.arange(P), torch.arange(zs, fp + 1)])
    mask = torch.zeros(P + n_sw, P + n_sw, dtype=torch.bool)
    mask[:P, :P] = torch.ones(P, P, dtype=torch.bool).tril()
    mask[P:, :zs] = True
    mask[P:, P:] = torch.ones(n_sw, n_sw, dtype=torch.bool).tril()
    rows = torch.tensor([*range(fp, P), P + n_sw - 1])  # clean target positions, swapped fp
    swapped = ev.swapped_tokens(1)[:, zs : fp + 1]
    out: dict[str, list] = {k: [] for k in ("Lc", "mass", "L1", "full", "correct", "swap")}
    for i in range(0, len(ev.tokens), batch):
        sl = slice(i, i + batch)
        toks = ev.tokens[sl]
        lg = plain.run(torch.cat([toks[:, :P], swapped[sl]], 1), positions, mask, rows)
        logits = lg.new_zeros(len(toks), P, lg.shape[-1])  # metrics read positions fp.. only
        logits[:, fp:] = lg[:, :-1]
        lc, mass = candidate_losses(lg[:, 0], ev.candidates[sl], ev.cand_index[sl])
        out["Lc"].append(lc)
        out["mass"].append(mass)
        out["L1"].append(F.cross_entropy(lg[:, 0], ev.target_first[sl], reduction="none"))
        out["full"].append(target_loss(logits, toks, lay) * len(toks))
        out["correct"].append(example_correct(logits, toks, lay))
        out["swap"].append(candidate_losses(lg[:, -1], ev.candidates[sl], ev.cand_index[sl])[0])
    c = {k: torch.cat(v) if k != "full" else torch.stack(v) for k, v in out.items()}
    acc = group_accuracy(c["correct"], K)
    return {"Lc": c["Lc"].mean().item(), "L1": c["L1"].mean().item(), "full_loss": c["full"].sum().item() / len(ev.tokens),
            "cand_mass": c["mass"].mean().item(), "swap_gap": c["swap"].mean().item() - c["Lc"].mean().item(),
            "acc_mean": float(acc.mean()), "groups_ge80": float((acc >= 0.8 - 1e-9).mean()),
            "groups_100": float((acc >= 1.0 - 1e-9).mean())}


# --- timing helpers -----------------------------------------------------------------


def alternate(cands: dict[str, Callable[[], Any]], reps: int, inner: int) -> dict[str, list[float]]:
    """Seconds of each call of each candidate, run in ABBA order: rep r runs every candidate
    ``inner`` times, in the listed order for even r and reversed for odd r."""
    times: dict[str, list[float]] = {k: [] for k in cands}
    names = list(cands)
    for r in range(reps):
        for k in names if r % 2 == 0 else names[::-1]:
            for _ in range(inner):
                t = time.perf_counter()
                cands[k]()
                times[k].append(time.perf_counter() - t)
    return times


def matmul_peak_gflops(n: int = 2048, reps: int = 5) -> float:
    """Best fp32 ``torch.mm`` rate of an n x n product, GFLOP/s (2 n^3 FLOPs each)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(reps))
    return 2 * n**3 / best / 1e9


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def train_step_flops(cfg: RunConfig) -> float:
    """Nominal FLOPs of one training step (formula in the module docstring)."""
    m, B = cfg.model, cfg.train.batch_size
    P = layout_for(cfg.task).seq_len - 1
    hd = m.n_heads * m.d_head
    n_mm = m.n_layers * (4 * m.d_model * hd + 2 * m.d_model * m.d_mlp) + m.d_model * D_VOCAB
    return 6 * n_mm * B * P + 3 * m.n_layers * B * 4 * P * P * hd


# --- 1. training step ---------------------------------------------------------------


def _stepper(cfg: RunConfig, forward: Callable[[Tensor], Tensor], params, opt: torch.optim.Optimizer, loss_rows_only: bool):
    """One training step exactly as ``train._train_loop`` takes it; ``loss_rows_only`` means
    ``forward`` already returns the logits of the loss positions only."""
    from .train import lr_at

    task = make_task(cfg.task)
    pos = task.layout.pred_positions
    sampler = BatchSampler(task, cfg.train.batch_size, cfg.train.batch_seed)
    state = {"step": 0, "losses": []}

    def step() -> float:
        tokens = sampler.sample()
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, state["step"])
        logits = forward(tokens[:, :-1])
        lg = logits if loss_rows_only else logits[:, pos.start : pos.stop]
        loss = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tokens[:, pos.start + 1 : pos.stop + 1].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.train.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, cfg.train.grad_clip)
        opt.step()
        state["step"] += 1
        state["losses"].append(loss.item())
        return state["losses"][-1]

    step.losses = state["losses"]  # type: ignore[attr-defined]
    return step


def make_candidate(cfg: RunConfig, name: str) -> Callable[[], float]:
    """One training-step candidate with its own model (the same initial weights for every
    candidate) and its own sampler (the same batches). Names:

    - ``toolkit``: the trainer's default: TransformerBridge forward, ``make_optimizer``.
    - ``plain``: PlainTransformer, an independent copy of the weights, the same AdamW.
      Options joined with "+": ``sdpa`` (F.scaled_dot_product_attention), ``last`` (last block
      and unembedding at the loss positions only), ``fused`` (AdamW ``fused=True``),
      ``compile`` (the forward under ``torch.compile``).
    - ``fast``: the opt-in idea, = plain+sdpa+last+fused on a PlainTransformer that *shares*
      the bridge's parameters and steps them with an AdamW over ``bridge.parameters()``, so
      state dicts, optimizer state and checkpoints are the trainer's own. ``fast+compile`` too.
    """
    from .model import build_model
    from .train import make_optimizer

    bridge = build_model(cfg)
    bridge.train()
    if name == "toolkit":
        return _stepper(cfg, bridge, list(bridge.parameters()), make_optimizer(cfg, bridge), False)
    base, *opts = name.split("+")
    if base not in ("plain", "fast") or not set(opts) <= {"sdpa", "last", "fused", "compile"}:
        raise ValueError(f"unknown candidate {name!r}")
    o = set(opts) | ({"sdpa", "last", "fused"} if base == "fast" else set())
    plain = PlainTransformer.from_bridge(bridge, cfg, share=base == "fast", sdpa="sdpa" in o)
    params = list((bridge if base == "fast" else plain).parameters())
    tr = cfg.train
    opt = torch.optim.AdamW(params, lr=tr.lr, betas=(tr.beta1, tr.beta2), eps=tr.eps, weight_decay=tr.weight_decay,
                            fused=True if "fused" in o else None)
    start = layout_for(cfg.task).pred_positions.start if "last" in o else 0
    fwd = (lambda t: plain(t, start))
    return _stepper(cfg, torch.compile(fwd) if "compile" in o else fwd, params, opt, "last" in o)


def bench_train(cfg: RunConfig, which: list[str], *, reps: int, inner: int, check_steps: int) -> dict[str, Any]:
    """ms per step of each candidate, alternated. First every candidate takes ``check_steps``
    steps from the same initial weights on the same batches (warm-up and compilation, and the
    loss curves compared with the toolkit's); the timed steps follow."""
    cands = {k: make_candidate(cfg, k) for k in ("toolkit", *[w for w in which if w != "toolkit"])}
    first: dict[str, float] = {}
    for k, fn in cands.items():
        first[k] = _timed(fn)
        for _ in range(check_steps - 1):
            fn()
    curves = {k: list(fn.losses) for k, fn in cands.items()}  # type: ignore[attr-defined]
    times = alternate(cands, reps, inner)
    flops = train_step_flops(cfg)
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    rows = {
        k: {"ms_per_step": ms[k], "ms_mean": 1e3 * statistics.fmean(v), "n_steps": len(v),
            "gflops": flops / ms[k] / 1e6, "vs_toolkit": ms[k] / ms["toolkit"], "first_step_s": first[k],
            "max_abs_loss_diff": max(abs(a - b) for a, b in zip(curves[k], curves["toolkit"]))}
        for k, v in times.items()
    }
    return {"flops_per_step": flops, "tokens_per_step": cfg.train.batch_size * (layout_for(cfg.task).seq_len - 1),
            "check_steps": check_steps, "candidates": rows}



def bench_threads(cfg: RunConfig, *, reps: int, inner: int) -> dict[str, Any]:
    """The toolkit's step at 1 intra-op thread and at one per core, alternated: on a machine
    where other jobs hold cores, more threads than free cores can be far slower (OpenMP
    threads wait at every op for a partner that is not scheduled)."""
    step, default = make_candidate(cfg, "toolkit"), torch.get_num_threads()
    counts = sorted({1, os.cpu_count() or 1})
    for _ in range(2):
        step()

    def at(n: int) -> Callable[[], float]:
        def run() -> float:
            torch.set_num_threads(n)
            try:
                return step()
            finally:
                torch.set_num_threads(default)

        return run

    times = alternate({n: at(n) for n in counts}, reps, inner)
    return {str(n): 1e3 * statistics.median(v) for n, v in times.items()}

# --- 2. analysis passes -------------------------------------------------------------


@torch.no_grad()
def loop_passes(model, ev, *, ablation: bool = True, batch: int = 1000, shift: int = 1) -> dict[str, Any]:
    """The passes of ``probes.checkpoint_passes`` (zero ablation, one shift) written plainly
    with TransformerLens hooks on the bridge: per example batch, ``run_with_cache`` of the clean
    and the swapped inputs, then one ``run_with_hooks`` per head and input zeroing
    ``blocks.{l}.attn.hook_z[:, :, h]``, and one per layer patching ``blocks.{l}.hook_resid_pre``
    at the selector positions from the swapped run. Returns per-head [layer][head] lists."""
    from .metrics import candidate_losses, example_correct
    from .task import CHAR0

    task, lay = ev.task, ev.task.layout
    K, fp, N = task.cfg.K, lay.first_pred, len(ev.tokens)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    selpos = list(lay.selector_positions)
    swapped = ev.swapped_tokens(shift)
    other = torch.from_numpy(task.targets[ev.g, (ev.s + shift) % K, 0] + CHAR0) if task.cfg.targets_A else ev.target_first
    acc = {k: torch.zeros(L, H) for k in ("sel_attn", "dLc", "dL1", "dLc_sw")}
    moved, tot = torch.zeros(L), {"Lc": 0.0, "Lc_sw": 0.0, "correct": 0.0, "ld_clean": 0.0, "ld_swap": 0.0}

    def losses(logits, sl):
        lg = logits[:, fp]
        lc = candidate_losses(lg, ev.candidates[sl], ev.cand_index[sl])[0]
        ld = lg.gather(1, ev.target_first[sl, None])[:, 0] - lg.gather(1, other[sl, None])[:, 0]
        return lc, F.cross_entropy(lg, ev.target_first[sl], reduction="none"), ld

    for i in range(0, N, batch):
        sl = slice(i, min(N, i + batch))
        toks, sw = ev.tokens[sl], swapped[sl]
        logits, cache = model.run_with_cache(toks, names_filter=lambda n: n.endswith("hook_pattern"))
        lc, l1, ld = losses(logits, sl)
        sw_logits, sw_cache = model.run_with_cache(sw, names_filter=lambda n: n.endswith("hook_resid_pre"))
        lc_sw, _, ld_sw = losses(sw_logits, sl)
        tot["Lc"] += lc.sum().item()
        tot["Lc_sw"] += lc_sw.sum().item()
        tot["correct"] += example_correct(logits, toks, lay).float().sum().item()
        tot["ld_clean"] += ld.sum().item()
        tot["ld_swap"] += ld_sw.sum().item()
        for l in range(L):
            acc["sel_attn"][l] += cache[f"blocks.{l}.attn.hook_pattern"][:, :, fp, selpos].sum((0, 2))
        if not ablation:
            continue
        for l in range(L):
            for h in range(H):
                def zero(z, hook, h=h):
                    z[:, :, h] = 0.0
                    return z

                hook = [(f"blocks.{l}.attn.hook_z", zero)]
                a_lc, a_l1, _ = losses(model.run_with_hooks(toks, fwd_hooks=hook), sl)
                acc["dLc"][l, h] += (a_lc - lc).sum()
                acc["dL1"][l, h] += (a_l1 - l1).sum()
                acc["dLc_sw"][l, h] += (losses(model.run_with_hooks(sw, fwd_hooks=hook), sl)[0] - lc_sw).sum()

            src = sw_cache[f"blocks.{l}.hook_resid_pre"]

            def patch(x, hook, src=src):
                x[:, selpos] = src[:, selpos]
                return x

            moved[l] += (losses(model.run_with_hooks(toks, fwd_hooks=[(f"blocks.{l}.hook_resid_pre", patch)]), sl)[2] - ld).sum()

    sel_base = len(selpos) / (fp + 1)
    out = {"Lc": tot["Lc"] / N, "swap_gap": (tot["Lc_sw"] - tot["Lc"]) / N, "acc_mean": tot["correct"] / N,
           "sel_attn": (acc["sel_attn"] / N - sel_base).tolist()}
    if ablation:
        denom = (tot["ld_swap"] - tot["ld_clean"]) / N
        out["dLc"] = (acc["dLc"] / N).tolist()
        out["dL1"] = (acc["dL1"] / N).tolist()
        out["swap_contrib"] = ((acc["dLc"] - acc["dLc_sw"]) / N).tolist()
        out["patch_frac"] = (moved / N / denom).tolist()
    return out


def _max_diff(tool: dict, ref: dict) -> float:
    """Largest absolute difference between the toolkit's rows and the loop reference."""
    ck, heads = tool["checkpoint"][0], tool["heads"]
    d = [abs(ck[k] - ref[k]) for k in ("Lc", "swap_gap", "acc_mean")]
    for k in ("sel_attn", "dLc", "dL1", "swap_contrib"):
        if k in ref:
            d += [abs(r[k] - ref[k][r["layer"]][r["head_index"]]) for r in heads]
    d += [abs(r["patch_frac"] - ref["patch_frac"][r["layer"]]) for r in tool["patching"] if "patch_frac" in ref]
    return max(d)


def bench_passes(cfg: RunConfig, *, reps: int, weights: dict | None = None) -> dict[str, Any]:
    from .model import build_model
    from .passes.forward import Weights
    from .passes.probes import checkpoint_passes

    model = build_model(cfg)
    if weights is not None:
        model.load_state_dict(weights, strict=False)
    m = cfg.model
    W = Weights.from_state_dict(model.state_dict(), m.n_layers, m.n_heads, m.d_head, m.act_fn)
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    cands = {
        "toolkit_all": lambda: checkpoint_passes(W, ev, ablation=True),
        "loop_all": lambda: loop_passes(model, ev, ablation=True),
        "toolkit_cheap": lambda: checkpoint_passes(W, ev, ablation=False),
        "loop_cheap": lambda: loop_passes(model, ev, ablation=False),
    }
    agree = {
        "all": _max_diff(checkpoint_passes(W, ev, ablation=True), loop_passes(model, ev, ablation=True)),
        "cheap": _max_diff(checkpoint_passes(W, ev, ablation=False), loop_passes(model, ev, ablation=False)),
    }
    s = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
    return {
        "n_sequences": len(ev.tokens),
        "weights": "trained checkpoint" if weights is not None else "initialisation",
        "rows": {kind: {"toolkit_s": s[f"toolkit_{kind}"], "loop_s": s[f"loop_{kind}"],
                        "speedup": s[f"loop_{kind}"] / s[f"toolkit_{kind}"], "max_abs_diff": agree[kind]}
                 for kind in ("all", "cheap")},
    }


# --- 3. checkpoint overhead ---------------------------------------------------------


def bench_overhead(cfg: RunConfig, *, reps: int, n_records: int = 100) -> dict[str, Any]:
    """Seconds of ``evaluate`` (bridge; the same function through PlainTransformer; the packed
    idea ``evaluate_packed``) and of
    writing one checkpoint the way ``train._train_loop`` does (weights, record, resume state,
    a manifest of ``n_records`` checkpoints; atomic writes with fsync) into a temp dir."""
    from .checkpoints import atomic_write_json, save_tensors
    from .metrics import evaluate
    from .model import build_model
    from .train import _optimizer_tensors, make_optimizer

    model = build_model(cfg)
    opt = make_optimizer(cfg, model)
    task = make_task(cfg.task)
    sampler = BatchSampler(task, cfg.train.batch_size, cfg.train.batch_seed)
    model(sampler.sample()).sum().backward()
    opt.step()  # the optimizer now holds its moments, as at every checkpoint but step 0
    model.eval()
    plain = PlainTransformer.from_bridge(model, cfg, share=True).eval()
    ev = make_eval_set(task, cfg.eval)
    metrics = evaluate(model, ev)
    diff = {name: max(abs(v - other[k]) for k, v in metrics.items() if not math.isnan(v))
            for name, other in (("plain", evaluate(plain, ev)), ("packed", evaluate_packed(plain, ev)))}
    record = {"step": 50, "examples_seen": 6400, "lr": 1e-3, "train_loss": 1.0, "metrics": metrics}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        manifest = {"format_version": 1, "status": "running", "resume": None, "checkpoints": [
            {"step": 50 * i, "weights": f"ckpt/step_{50 * i:06d}.safetensors", "sha256": "0" * 64,
             "record_file": f"ckpt/step_{50 * i:06d}.json", "record": record} for i in range(n_records)]}
        n = [0]

        def save() -> None:  # the file work of train._train_loop's checkpoint(), in the same order
            n[0] += 1
            name = f"step_{n[0]:06d}"
            save_tensors(root / "ckpt" / f"{name}.safetensors", model.state_dict(), {"step": str(n[0])})
            atomic_write_json(root / "ckpt" / f"{name}.json", {**record, "wall_s": 0.0})
            rel = f"resume/state_{n[0]:06d}.safetensors"
            save_tensors(root / rel, {**_optimizer_tensors(opt), "sampler_rng": sampler.get_state()})
            old, manifest["resume"] = manifest["resume"], rel
            atomic_write_json(root / "manifest.json", manifest)
            if old:
                (root / old).unlink()

        cands = {"evaluate": lambda: evaluate(model, ev), "evaluate_plain": lambda: evaluate(plain, ev),
                 "evaluate_packed": lambda: evaluate_packed(plain, ev), "save": save}
        t = {k: statistics.median(v) for k, v in alternate(cands, reps, 1).items()}
    return {"evaluate_s": t["evaluate"], "evaluate_plain_s": t["evaluate_plain"], "evaluate_packed_s": t["evaluate_packed"],
            "save_s": t["save"], "evaluate_plain_max_abs_diff": diff["plain"], "evaluate_packed_max_abs_diff": diff["packed"],
            "n_sequences": len(ev.tokens), "manifest_records": n_records}


# --- 4. end to end ------------------------------------------------------------------


def bench_end_to_end(path: Path = E2E_RUN, *, allow_running: bool = False) -> dict[str, Any]:
    """Training wall time from a finished run's records, and ``analyze_run`` over it, timed.
    ``allow_running`` takes a run still training as it stands (its checkpoints so far)."""
    from .checkpoints import Run
    from .passes.analyze import analyze_run

    run = Run(path)
    if not run.exists():
        return {"skipped": f"{path} does not exist"}
    status = run.manifest().get("status")
    if status != "finished" and not allow_running:
        return {"skipped": f"{path} is not finished (status {status!r})"}
    walls = [json.loads(f.read_text()).get("wall_s", 0.0) for f in sorted((run.path / "ckpt").glob("step_*.json"))]
    # wall_s restarts from 0 when a run is resumed: add up the segments
    train_s = sum(a for a, b in zip(walls, walls[1:] + [0.0]) if b < a)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        tables = analyze_run(run, d, progress=False)
        analyze_s = time.perf_counter() - t
    cfg = run.config()
    return {"run": str(path), "status": status, "last_step": run.records()[-1]["step"], "n_checkpoints": len(tables["checkpoint"]),
            "n_heavy": len(tables["patching"]) // cfg.model.n_layers, "train_wall_s": train_s,
            "resumed_segments": 1 + sum(b < a for a, b in zip(walls, walls[1:])), "analyze_s": analyze_s}


# --- the whole benchmark ------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "python": platform.python_version(), "platform": platform.platform()}


def run_benchmarks(quick: bool, *, cfg: RunConfig | None = None, e2e_run: Path | None = E2E_RUN) -> dict[str, Any]:
    """Run all benchmarks; ``quick`` uses fewer repetitions and sequences and skips end to end.
    ``cfg`` (default: the paper preset) is the model and task benchmarked."""
    cfg = cfg or preset("paper")
    res: dict[str, Any] = {"quick": quick, "preset": cfg.preset, "ckpt_every": cfg.train.ckpt_every,
                           "machine": machine(), "load_start": os.getloadavg()}
    t0 = time.perf_counter()
    busy = res["load_start"][0] + torch.get_num_threads() > (os.cpu_count() or 1) + 0.5
    if busy and torch.get_num_threads() > 1:
        _log(f"warning: load average {res['load_start'][0]:.1f} on {os.cpu_count()} cores and torch uses "
             f"{torch.get_num_threads()} threads: timings will be inflated (try OMP_NUM_THREADS=1)")
    _log("fp32 matmul peak")
    res["matmul_peak_gflops"] = matmul_peak_gflops(1024 if quick else 2048, 3 if quick else 7)
    _log("training step")
    which = QUICK_CANDIDATES if quick else FULL_CANDIDATES
    res["train"] = bench_train(cfg, which, reps=2 if quick else 6, inner=5 if quick else 10, check_steps=10 if quick else 50)
    for row in res["train"]["candidates"].values():
        row["frac_of_peak"] = row["gflops"] / res["matmul_peak_gflops"]
    if not quick and (os.cpu_count() or 1) > 1:
        _log("training step at 1 thread and at one per core")
        res["threads_ms_per_step"] = bench_threads(cfg, reps=2, inner=3)
    _log("analysis passes")
    pcfg = replace(cfg, eval=replace(cfg.eval, n_groups=40)) if quick else cfg
    trained = None
    if e2e_run is not None and (Path(e2e_run) / "manifest.json").exists():
        from .checkpoints import Run

        run = Run(e2e_run)
        if run.config().model == cfg.model and run.config().task == cfg.task:
            trained = run.weights(run.steps()[-1])
    res["passes"] = bench_passes(pcfg, reps=1 if quick else 3, weights=trained)
    _log("checkpoint overhead")
    ov = bench_overhead(cfg, reps=2 if quick else 5)
    step_s = res["train"]["candidates"]["toolkit"]["ms_per_step"] / 1e3
    fast_s = res["train"]["candidates"]["fast"]["ms_per_step"] / 1e3
    for every in (cfg.train.ckpt_every, cfg.train.ckpt_every_transition):
        ck = ov["evaluate_s"] + ov["save_s"]
        ov[f"share_every_{every}"] = ck / (every * step_s + ck)
        # wall time per checkpoint interval with the fast step and packed evaluation, vs now
        ov[f"ideas_time_ratio_every_{every}"] = (every * fast_s + ov["evaluate_packed_s"] + ov["save_s"]) / (every * step_s + ck)
    ov["train_steps_between_ckpts_s"] = cfg.train.ckpt_every * step_s
    res["overhead"] = ov
    if not quick and e2e_run is not None:
        _log("end to end (analyze_run over a finished run)")
        res["end_to_end"] = bench_end_to_end(Path(e2e_run))
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - t0
    return res


def to_markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['threads']} threads), Python {m['python']}; "
        f"load average (1/5/15 min) {_load(res['load_start'])} at start, {_load(res['load_end'])} at end; "
        f"fp32 matmul peak {res['matmul_peak_gflops']:.0f} GFLOP/s; {'quick' if res['quick'] else 'full'} run, {res['total_s']:.0f} s.",
        "",
        f"**Training step** (preset {res['preset']}, {res['train']['tokens_per_step']} tokens, "
        f"{res['train']['flops_per_step'] / 1e9:.2f} GFLOP nominal; loss checked over {res['train']['check_steps']} steps)",
        "",
        "| candidate | ms/step (median) | mean | GFLOP/s | of peak | vs toolkit | max abs loss diff | first step (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, r in res["train"]["candidates"].items():
        lines.append(f"| {k} | {r['ms_per_step']:.1f} | {r['ms_mean']:.1f} | {r['gflops']:.0f} | {100 * r['frac_of_peak']:.0f}% "
                     f"| {r['vs_toolkit']:.2f} | {r['max_abs_loss_diff']:.1e} | {r['first_step_s']:.2f} |")
    if "threads_ms_per_step" in res:
        lines += ["", "Toolkit step by intra-op thread count (ms/step, median, alternated): "
                  + ", ".join(f"{n} thread(s) {v:.0f}" for n, v in res["threads_ms_per_step"].items())]
    p = res["passes"]
    lines += ["", f"**Analysis passes at one checkpoint** ({p['n_sequences']} sequences, {p['weights']})", "",
              "| passes | toolkit (s) | TransformerLens loop (s) | speed-up | max abs diff |", "|---|---:|---:|---:|---:|"]
    for kind, label in (("all", "all (ablation=True)"), ("cheap", "cheap (ablation=False)")):
        r = p["rows"][kind]
        lines.append(f"| {label} | {r['toolkit_s']:.2f} | {r['loop_s']:.2f} | {r['speedup']:.1f}x | {r['max_abs_diff']:.1e} |")
    o = res["overhead"]
    lines += ["", f"**Checkpoint overhead** ({o['n_sequences']} eval sequences; manifest of {o['manifest_records']} checkpoints)", "",
              "| item | seconds |", "|---|---:|",
              f"| evaluate() (bridge) | {o['evaluate_s']:.3f} |",
              f"| evaluate() through PlainTransformer (max abs diff {o['evaluate_plain_max_abs_diff']:.0e}) | {o['evaluate_plain_s']:.3f} |",
              f"| idea: evaluate_packed (max abs diff {o['evaluate_packed_max_abs_diff']:.0e}) | {o['evaluate_packed_s']:.3f} |",
              f"| checkpoint files | {o['save_s']:.3f} |",
              f"| {res['ckpt_every']} training steps (toolkit) | {o['train_steps_between_ckpts_s']:.2f} |"]
    for k, v in o.items():
        every = k.rsplit("_", 1)[1]
        if k.startswith("share_every_"):
            lines.append(f"| share of wall time in evaluate + files, checkpoint every {every} steps | {100 * v:.1f}% |")
        if k.startswith("ideas_time_ratio_every_"):
            lines.append(f"| idea: wall time with fast step + evaluate_packed, relative (every {every}) | {v:.2f} |")
    e = res.get("end_to_end")
    if e is not None:
        lines += ["", "**End to end**", ""]
        if "skipped" in e:
            lines.append(f"skipped: {e['skipped']}")
        else:
            lines += ["| item | value |", "|---|---:|",
                      f"| run | {e['run']} ({e['status']}, last step {e['last_step']}) |",
                      f"| training wall time (records' wall_s, {e['resumed_segments']} segment(s)) | {e['train_wall_s']:.0f} s |",
                      f"| analyze_run: {e['n_checkpoints']} checkpoints, {e['n_heavy']} with ablation + patching | {e['analyze_s']:.0f} s |"]
    return "\n".join(lines) + "\n"


def _load(la) -> str:
    return "/".join(f"{x:.1f}" for x in la)


def main(args) -> int:
    res = run_benchmarks(quick=args.quick)
    md = to_markdown(res)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)
    from .metrics import nan_to_none

    print(json.dumps(nan_to_none(res), indent=2) if args.json else md)
    return 0
