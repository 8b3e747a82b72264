"""Attention patterns at chosen checkpoints, for the report's attention viewer."""

from __future__ import annotations

import sys
from typing import Any

from ..checkpoints import Run
from ..config import layout_for
from ..model.forward import run_cached
from ..task import decode, make_eval_set, make_task, token_labels
from .analyze import weights_for


def attention_patterns(run: Run, cfg, steps: list[int], n: int = 4, progress: bool = False) -> dict[str, Any]:
    """Attention patterns [step][layer*H + head][example] (query x key, upper triangle None,
    rounded to 3 decimals) of the first ``n`` evaluation rows at ``steps``, with position labels."""
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    toks = ev.tokens[:n]
    lay = layout_for(cfg.task)
    role = {p: name for name, start, length in lay.segments for p in range(start, start + length)}
    role.update(
        {p: "A" for p in range(lay.target_start, lay.target_start + lay.target_len)} if cfg.task.targets_A else {}
    )
    labels = []
    for i in range(len(toks)):
        tl = token_labels(toks[i])
        labels.append([f"{role[p]}:{t}" if p in role and role[p] in ("z", "A") else t for p, t in enumerate(tl)])
    examples = [f"group {int(ev.g[i])}, z = {int(ev.s[i])}: {decode(toks[i])}" for i in range(len(toks))]
    pats = []
    it = steps
    if progress:
        from tqdm import tqdm

        it = tqdm(steps, desc=f"attention {run.name}", unit="ckpt", file=sys.stderr, dynamic_ncols=True)
    for s in it:
        _, _, p, _ = run_cached(weights_for(run, s, cfg), toks)
        per_head = []
        for l in range(len(p)):
            for h in range(p[l].shape[1]):
                per_head.append(
                    [
                        [
                            [round(float(v), 3) if k <= q else None for k, v in enumerate(row)]
                            for q, row in enumerate(p[l][i, h].tolist())
                        ]
                        for i in range(len(toks))
                    ]
                )
        pats.append(per_head)
    m = cfg.model
    return {
        "steps": steps,
        "heads": [f"L{l}H{h}" for l in range(m.n_layers) for h in range(m.n_heads)],
        "examples": examples,
        "labels": labels,
        "patterns": pats,
        "first_pred": lay.first_pred,
    }
