"""The plain references the bench measures the toolkit against: ``PlainTransformer``, the paper
architecture as a small ``nn.Module`` (also the base of the opt-in fast paths in ``fast``), and
``loop_passes``, the analysis passes written plainly with the TransformerLens hooks that define
the interventions (``mi_plateau.interventions``)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from ..config import RunConfig, layout_for
from ..interventions import head_ablation_named, resid_patches
from ..metrics import candidate_losses, example_correct, sequence_losses, sequence_scores_reference
from ..task import CHAR0, D_VOCAB, derangement

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
        self.unembed = nn.Linear(m.d_model, D_VOCAB, bias=m.train_b_U)

    def forward(self, tokens: Int[Tensor, "batch pos"], from_pos: int = 0) -> Float[Tensor, "batch out_pos vocab"]:
        P = tokens.shape[1]
        return self.run(tokens, torch.arange(P), torch.ones(P, P, dtype=torch.bool).tril(), slice(from_pos, None))

    def run(self, tokens: Int[Tensor, "batch pos"], positions: Int[Tensor, pos], mask: Tensor, rows: slice | Tensor):
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
        return (
            name.replace("mlp_in.", "mlp.in.")
            .replace("mlp_out.", "mlp.out.")
            .replace(".q.", ".attn.q.")
            .replace(".k.", ".attn.k.")
            .replace(".v.", ".attn.v.")
            .replace(".o.", ".attn.o.")
        )

    @classmethod
    def from_bridge(cls, model: nn.Module, cfg: RunConfig, *, share: bool, sdpa: bool = False) -> PlainTransformer:
        """A copy of the bridge's weights (``share=False``), or a module whose parameters *are*
        the bridge's Parameter objects (``share=True``): training through it updates the bridge,
        so its optimizer, state dict and checkpoints stay exactly the trainer's."""
        plain = cls(cfg, sdpa)
        sd = model.state_dict(keep_vars=True)
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


# --- 2. analysis passes: the TransformerLens loop reference -------------------------


@torch.no_grad()
def loop_passes(
    model, ev, *, ablation: bool = True, batch: int = 1000, shift: int = 1, head_ablation: str = "zero"
) -> dict[str, Any]:
    """The passes of ``passes.per_checkpoint.checkpoint_passes`` (one shift) written plainly with
    the interventions' TransformerLens hooks on the bridge: per example batch,
    ``run_with_cache`` of the clean and the swapped inputs, then one ``run_with_hooks`` per head
    and input with the hooks of the registered head ablation ``head_ablation`` (zero:
    ``blocks.{l}.attn.hook_z[:, :, h]`` set to 0), and one per layer and registered patch
    (``blocks.{l}.hook_resid_pre``, ``hook_resid_post``) at the selector positions from the
    swapped run; the paper family by scoring every candidate string with its own forward
    (``metrics.sequence_scores_reference``), for the clean, swapped and z-shuffled prompts.
    Returns per-head [layer][head] lists."""
    loop = _LoopPasses(model, ev, shift, head_ablation_named(head_ablation), batch)
    for i in range(0, loop.N, batch):
        loop.add_batch(slice(i, min(loop.N, i + batch)), ablation)
    return loop.result(ablation)


class _LoopPasses:
    """``loop_passes`` over one evaluation set: the inputs (clean, swapped by ``shift``, z-shuffled),
    the head ablation ``iv`` with what it reads from the clean run (``ctx``, per layer), the sums
    that ``add_batch`` adds each example batch to, and ``result``, their means."""

    def __init__(self, model, ev, shift: int, iv, batch: int):
        task, lay = ev.task, ev.task.layout
        self.model, self.ev, self.shift, self.iv = model, ev, shift, iv
        self.K, self.fp, self.N = task.cfg.K, lay.first_pred, len(ev.tokens)
        self.L, self.H = model.cfg.n_layers, model.cfg.n_heads
        self.selpos = list(lay.selector_positions)
        self.swapped = ev.swapped_tokens(shift)
        # the swapped prompt's first target token: the logit difference's other side
        self.other = (
            torch.from_numpy(task.targets[ev.g, (ev.s + shift) % self.K, 0] + CHAR0)
            if task.cfg.targets_A
            else ev.target_first
        )
        self.acc = {k: torch.zeros(self.L, self.H) for k in ("sel_attn", "dL", "dLc", "dL1", "dLc_sw")}
        self.moved = {p.name: torch.zeros(self.L) for p in resid_patches()}
        self.tot = {"Lc": 0.0, "Lc_sw": 0.0, "correct": 0.0, "ld_clean": 0.0, "ld_swap": 0.0, "Lc_sh": 0.0}
        self.pos = lay.pred_positions
        self.shuffled_sel = ev.s[derangement(self.N, 0)]
        self.shuffled = task.tokens(ev.g, self.shuffled_sel, target_sel=ev.s)
        # each row's group (the rows are group-major), as the head ablation's hooks read it
        self.group = torch.arange(self.N, device=ev.tokens.device) // self.K
        self.ctx = self.context(batch)

    def context(self, batch: int) -> list:
        """Per layer, what the head ablation reads from the clean run (``iv.context`` of every
        row's ``hook_z``, cached batch by batch); Nones where it reads nothing."""
        if self.iv.context is None:
            return [None] * self.L
        zs: list[list[Tensor]] = [[] for _ in range(self.L)]
        for i in range(0, self.N, batch):
            _, cache = self.model.run_with_cache(
                self.ev.tokens[i : i + batch], names_filter=lambda n: n.endswith("attn.hook_z")
            )
            for l in range(self.L):
                zs[l].append(cache[self.iv.hook_name(l)])
        return [self.iv.context(torch.cat(z), self.K) for z in zs]

    def full_ce(self, logits: Tensor, toks: Tensor) -> Tensor:
        """Per example: the mean cross-entropy over the target positions."""
        pos = self.pos
        lg = logits[:, pos.start : pos.stop]
        return F.cross_entropy(lg.transpose(1, 2), toks[:, pos.start + 1 : pos.stop + 1], reduction="none").mean(1)

    def losses(self, logits: Tensor, sl: slice) -> tuple[Tensor, Tensor, Tensor]:
        """Per example at the first prediction: the candidate loss Lc, the first token's
        cross-entropy and the logit difference (own target minus the swapped prompt's)."""
        ev = self.ev
        lg = logits[:, self.fp]
        lc = candidate_losses(lg, ev.candidates[sl], ev.cand_index[sl])[0]
        ld = lg.gather(1, ev.target_first[sl, None])[:, 0] - lg.gather(1, self.other[sl, None])[:, 0]
        return lc, F.cross_entropy(lg, ev.target_first[sl], reduction="none"), ld

    def add_batch(self, sl: slice, ablation: bool) -> None:
        """Add the examples ``sl``: losses, accuracy and selector attention from the clean,
        swapped and shuffled forwards, then (``ablation``) every head's ablation and every
        layer's patching."""
        model, tot, fp = self.model, self.tot, self.fp
        toks, sw = self.ev.tokens[sl], self.swapped[sl]
        logits, cache = model.run_with_cache(toks, names_filter=lambda n: n.endswith("hook_pattern"))
        lc, l1, ld = self.losses(logits, sl)
        patched = tuple(f"hook_{p.name}" for p in resid_patches())
        sw_logits, sw_cache = model.run_with_cache(sw, names_filter=lambda n: n.endswith(patched))
        lc_sw, _, ld_sw = self.losses(sw_logits, sl)
        tot["Lc_sh"] += self.losses(model(self.shuffled[sl]), sl)[0].sum().item()
        ce = self.full_ce(logits, toks)
        tot["Lc"] += lc.sum().item()
        tot["Lc_sw"] += lc_sw.sum().item()
        tot["correct"] += example_correct(logits, toks, self.ev.task.layout).float().sum().item()
        tot["ld_clean"] += ld.sum().item()
        tot["ld_swap"] += ld_sw.sum().item()
        for l in range(self.L):
            self.acc["sel_attn"][l] += cache[f"blocks.{l}.attn.hook_pattern"][:, :, fp, self.selpos].sum((0, 2))
        if not ablation:
            return
        for l in range(self.L):
            self.ablate_heads(l, sl, toks, sw, (ce, lc, l1, lc_sw))
            self.patch_layer(l, sl, toks, sw_cache, ld)

    def ablate_heads(self, l: int, sl: slice, toks: Tensor, sw: Tensor, clean: tuple[Tensor, ...]) -> None:
        """Ablate each head h of layer l with the head ablation's hooks (zero:
        ``blocks.{l}.attn.hook_z[:, :, h]`` set to 0), on the clean and the swapped inputs; add
        the rise of the full loss, Lc, the first token's loss and the swapped Lc. ``clean``: the
        unablated (full loss, Lc, first-token loss, swapped Lc)."""
        ce, lc, l1, lc_sw = clean
        acc, model = self.acc, self.model
        for h in range(self.H):
            hook = self.iv.fwd_hooks(l, h, ctx=self.ctx[l], group=self.group[sl])
            a_logits = model.run_with_hooks(toks, fwd_hooks=hook)
            a_lc, a_l1, _ = self.losses(a_logits, sl)
            acc["dL"][l, h] += (self.full_ce(a_logits, toks) - ce).sum()
            acc["dLc"][l, h] += (a_lc - lc).sum()
            acc["dL1"][l, h] += (a_l1 - l1).sum()
            acc["dLc_sw"][l, h] += (self.losses(model.run_with_hooks(sw, fwd_hooks=hook), sl)[0] - lc_sw).sum()

    def patch_layer(self, l: int, sl: slice, toks: Tensor, sw_cache, ld: Tensor) -> None:
        """Patch layer l at each registered patch's hook (``blocks.{l}.hook_resid_pre``,
        ``hook_resid_post``) at the selector positions from the swapped run; add how far the
        logit difference moves from the clean ``ld``."""
        for p in resid_patches():
            hooks = p.fwd_hooks(l, src=sw_cache[p.hook_name(l)], positions=self.selpos)
            patched = self.model.run_with_hooks(toks, fwd_hooks=hooks)
            self.moved[p.name][l] += (self.losses(patched, sl)[2] - ld).sum()

    def result(self, ablation: bool) -> dict[str, Any]:
        """The means over the examples (per-head values as [layer][head] lists), and the paper
        family's ``L_seq``, accuracy and gaps."""
        acc, tot, N, cfg = self.acc, self.tot, self.N, self.ev.task.cfg
        sel_base = len(self.selpos) / (self.fp + 1)
        out = {
            "Lc": tot["Lc"] / N,
            "swap_gap": (tot["Lc_sw"] - tot["Lc"]) / N,
            "acc_mean": tot["correct"] / N,
            "sel_attn": (acc["sel_attn"] / N - sel_base).tolist(),
        }
        if cfg.targets_A:
            out["shuffle_gap"] = (tot["Lc_sh"] - tot["Lc"]) / N
        if ablation and self.ev.has_sequence_candidates:
            out.update(self.sequence_family())
        if ablation:
            denom = (tot["ld_swap"] - tot["ld_clean"]) / N
            out["dL"] = (acc["dL"] / N).tolist()
            out["dLc"] = (acc["dLc"] / N).tolist()
            out["dL1"] = (acc["dL1"] / N).tolist()
            out["swap_contrib"] = ((acc["dLc"] - acc["dLc_sw"]) / N).tolist()
            out["patch_frac"] = {h: (m / N / denom).tolist() for h, m in self.moved.items()}
        return out

    def sequence_family(self) -> dict[str, float]:
        """The paper family: ``L_seq`` and candidate accuracy, every candidate string scored by its
        own forward; with a selector, the swap and shuffle gaps of ``L_seq``."""
        model, ev = self.model, self.ev
        own = torch.from_numpy(ev.s)
        L_seq, ok = sequence_losses(sequence_scores_reference(model, ev), own)
        out = {"L_seq": L_seq.mean().item(), "cand_acc": ok.float().mean().item()}
        if ev.task.cfg.has_selector:
            sw_seq = sequence_losses(
                sequence_scores_reference(model, ev, prompt_sel=(ev.s + self.shift) % self.K), own
            )[0]
            sh_seq = sequence_losses(sequence_scores_reference(model, ev, prompt_sel=self.shuffled_sel), own)[0]
            out.update(
                {"swap_gap_seq": (sw_seq - L_seq).mean().item(), "shuffle_gap_seq": (sh_seq - L_seq).mean().item()}
            )
        return out


def max_diff(tool: dict, ref: dict) -> float:
    """Largest absolute difference between the toolkit's rows and the loop reference."""
    ck, heads = tool["checkpoint"][0], tool["heads"]
    d = [
        abs(ck[k] - ref[k])
        for k in ("Lc", "swap_gap", "acc_mean", "shuffle_gap", "L_seq", "cand_acc", "swap_gap_seq", "shuffle_gap_seq")
        if k in ref
    ]
    for k in ("sel_attn", "dL", "dLc", "dL1", "swap_contrib"):
        if k in ref:
            d += [abs(r[k] - ref[k][r["layer"]][r["head_index"]]) for r in heads]
    d += [
        abs(r["patch_frac"] - ref["patch_frac"][r["hook"]][r["layer"]]) for r in tool["patching"] if "patch_frac" in ref
    ]
    return max(d)
