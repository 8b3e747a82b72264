"""The routing-head summary and the data of Figure 3, from tidy pass rows: when the heads
assemble, when the swap gap and the loss move, as fractions of tau.

The summary measures against the paper family's tau (L_seq) and the first-token one (Lc);
Figure 3 is drawn under one definition family (``definitions``). Every number comes from the
run named in the row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..definitions import definition
from ..frames import Rows, frame, records
from ..summaries import nearest
from .bootstrap import routing_intervals
from .curves import finite, half_rise_step, plateau_level


def _routing_heads(head_rows: Rows) -> dict[str, Any]:
    """The top selector-attention head (largest ``sel_attn`` at the last checkpoint) and the
    routing head (largest ``swap_contrib`` at the last ablated checkpoint, None if none was
    ablated) with its causal share there."""
    ablated = sorted({r["step"] for r in head_rows if finite(r["swap_contrib"])})
    last_all = max(r["step"] for r in head_rows)
    final_attn = {r["head"]: r["sel_attn"] for r in head_rows if r["step"] == last_all}
    top_attn = max(final_attn, key=final_attn.get)
    if not ablated:
        return {"top_attention_head": top_attn, "routing_head": None}
    last = ablated[-1]
    final_share = {r["head"]: r["swap_contrib"] for r in head_rows if r["step"] == last}
    router = max(final_share, key=final_share.get)
    return {
        "top_attention_head": top_attn,
        "routing_head": router,
        "routing_head_final_causal_share": next(
            r["causal_share"] for r in head_rows if r["step"] == last and r["head"] == router
        ),
        "routing_is_top_attention": router == top_attn,
    }


def _assembly(head_rows: Rows, label: str, head: str, tau: int | None, tau_ft: int | None) -> dict[str, Any]:
    """One head's assembly time t_r under each score (``half_rise_step``) and its leads
    (tau - t_r) / tau against both taus (None where t_r or tau is missing)."""
    rows = sorted((r for r in head_rows if r["head"] == head), key=lambda r: r["step"])
    out: dict[str, Any] = {}
    for score in ("sel_attn", "swap_contrib"):
        t_r = half_rise_step([r["step"] for r in rows], [r[score] for r in rows])
        out[f"{label}_t_r_{score}"] = t_r
        out[f"{label}_lead_{score}"] = (tau - t_r) / tau if (tau and t_r is not None) else None
        out[f"{label}_lead_{score}_first_token"] = (tau_ft - t_r) / tau_ft if (tau_ft and t_r is not None) else None
    return out


def _onsets(ck: Rows, tau: int) -> dict[str, Any]:
    """The first checkpoint where each curve has covered 5% of its full range: the swap gap
    (of its maximum) and Lc (of its fall from the plateau level to its minimum)."""
    steps = [r["step"] for r in ck]
    g = [r["swap_gap"] for r in ck]
    lc = [r["Lc"] for r in ck]
    Lp, Lmin = plateau_level(steps, lc, tau), min(lc)
    gmax = max((v for v in g if finite(v)), default=float("nan"))
    z_on = next((s for s, v in zip(steps, g) if finite(v) and gmax > 0 and v >= 0.05 * gmax), None)
    l_on = next((s for s, v in zip(steps, lc) if Lp > Lmin and (Lp - v) >= 0.05 * (Lp - Lmin) and s > 0), None)
    return {
        "z_onset_step": z_on,
        "loss_onset_step": l_on,
        "z_onset_frac_tau": z_on / tau if z_on is not None else None,
        "loss_onset_frac_tau": l_on / tau if l_on is not None else None,
    }


def routing(
    name: str,
    K: int,
    taus: dict[str, int | None],
    head_rows: Rows,
    checkpoint_rows: Rows,
    head_group_rows: Rows | None = None,
    group_rows: Rows | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The routing head (largest causal share of the swap gap at the last ablated checkpoint),
    the top selector-attention head, their assembly times t_r (half of the final rise of each
    score) and the leads (tau - t_r) / tau; plus when the swap gap first exceeded 0.1 nats and
    the candidate mass at 0.5 tau. Onsets: the first checkpoint where the swap gap reaches 5% of
    its maximum, and where Lc has fallen 5% of the way from its plateau to its minimum.

    tau is the paper family's (L_seq); every lead is also given against the first-token tau,
    in keys ending ``_first_token``. With the per-group rows (``head_group_rows``,
    ``group_rows``), the leads and the swap-gap crossing get bootstrap intervals over groups
    (``routing_intervals``)."""
    head_rows, checkpoint_rows = records(head_rows), records(checkpoint_rows)
    tau, tau_ft = taus.get("paper"), taus.get("first_token")
    if tau is None:  # a task without candidate strings: the first-token tau serves both
        tau = tau_ft
    out: dict[str, Any] = {"run": name, "K": K, "tau": tau, "tau_first_token": tau_ft}
    out.update(_routing_heads(head_rows))
    for label in ("routing", "top_attention"):
        head = out[f"{label}_head"]
        if head is not None:
            out.update(_assembly(head_rows, label, head, tau, tau_ft))
    ck = sorted(checkpoint_rows, key=lambda r: r["step"])
    gap_step = next((r["step"] for r in ck if finite(r["swap_gap"]) and r["swap_gap"] > 0.1), None)
    out["swap_gap_0.1_step"] = gap_step
    out["swap_gap_0.1_frac_tau"] = gap_step / tau if (gap_step is not None and tau) else None
    out["swap_gap_0.1_frac_tau_first_token"] = gap_step / tau_ft if (gap_step is not None and tau_ft) else None
    if tau and ck:
        out.update(_onsets(ck, tau))
    if tau:
        half = nearest([r["step"] for r in ck], 0.5 * tau)
        r = next(r for r in ck if r["step"] == half)
        out["cand_mass_at_0.5tau"] = r["cand_mass"]
        out["L1_at_0.5tau"] = r["L1"]
        out["step_0.5tau"] = half
    if head_group_rows is not None and group_rows is not None:
        out.update(routing_intervals(out, head_group_rows, group_rows, n_boot, seed))
    return out


def figure3_data(
    name: str, K: int, tau: int | None, checkpoint_rows: Rows, group_rows: Rows, family: str = "first_token"
) -> dict[str, Rows]:
    """(a) normalised z-dependence and loss progress against t / tau; (b) per-group coherence,
    under one definition family (its loss, swap gap and tau; the paper family's are computed at
    the per-head checkpoints only, so its curves have those points).

    (a) ``z_norm = swap_gap / max(swap_gap)``; ``loss_progress = (L_plateau - L) /
    (L_plateau - min L)``, L_plateau the median loss over checkpoints before 0.5 tau.
    (b) between consecutive checkpoints, the fraction of groups whose loss fell and the mean rate
    of fall in nats per 100 steps, placed at the interval's midpoint.
    """
    d = definition(family)
    checkpoint_rows, group_rows = records(checkpoint_rows), records(group_rows)
    ck = sorted((r for r in checkpoint_rows if finite(r.get(d.loss))), key=lambda r: r["step"])
    if not tau or not ck:
        return {"a": frame([]), "b": frame([])}
    steps = np.array([r["step"] for r in ck], dtype=float)
    gap = np.array([r[d.swap_gap] if finite(r.get(d.swap_gap)) else np.nan for r in ck], dtype=float)
    Lc = np.array([r[d.loss] for r in ck], dtype=float)
    Lp = plateau_level(steps, Lc, tau)
    denom = Lp - Lc.min()
    gmax = np.nanmax(gap) if np.isfinite(gap).any() else float("nan")
    a = [
        {
            "run": name,
            "K": K,
            "definition": family,
            "step": int(s),
            "t_over_tau": s / tau,
            "z_norm": float(g / gmax) if gmax > 0 else float("nan"),
            "loss_progress": float((Lp - l) / denom) if denom > 0 else float("nan"),
            "swap_gap": float(g),
            "loss": float(l),
        }
        for s, g, l in zip(steps, gap, Lc)
    ]
    by_step: dict[int, dict[int, float]] = {}
    for r in group_rows:
        if finite(r.get(d.group_loss)):
            by_step.setdefault(r["step"], {})[r["group"]] = r[d.group_loss]
    gsteps = sorted(by_step)
    b = []
    for s0, s1 in zip(gsteps, gsteps[1:]):
        g = sorted(by_step[s0])
        x0 = np.array([by_step[s0][k] for k in g])
        x1 = np.array([by_step[s1][k] for k in g])
        d = x1 - x0
        b.append(
            {
                "run": name,
                "K": K,
                "definition": family,
                "step": (s0 + s1) / 2,
                "t_over_tau": (s0 + s1) / 2 / tau,
                "frac_falling": float((d < 0).mean()),
                "mean_rate": float(-d.mean() / (s1 - s0) * 100),
            }
        )
    return {"a": frame(a), "b": frame(b)}
