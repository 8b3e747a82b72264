"""Tables 6 and 9, the routing-head summary and the data of Figure 3, from tidy pass rows.

Each table is computed under one or both definition families (``definitions``): the paper's
(L_seq and its tau, candidate accuracy, Delta L) and the first-token one (Lc and its tau, exact
match, Delta Lc); a ``definition`` column names which. ``taus`` maps a family to its tau.
The paper's values appear only in columns whose names start with ``paper_``; every other
number comes from the run named in the row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import paper
from ..definitions import FAMILIES, definition
from ..frames import frame, records
from ..summaries import nearest

Rows = list[dict[str, Any]]

PAPER_TABLE6, PAPER_TABLE9 = paper.TABLE6, paper.TABLE9  # mi_plateau.paper


def _finite(v) -> bool:  # neither missing (None) nor NaN
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def group_bootstrap(accs: Sequence[float], n_boot: int, seed: int, level: float = 0.95) -> dict[str, float]:
    """Percentile bootstrap over groups of Table 6's three numbers (``metrics.accuracy_shares``):
    the % of groups with accuracy >= ``metrics.ACC_THRESHOLD``, the % at 1, and the mean
    accuracy; ``{<name>_lo, <name>_hi}``."""
    # metrics imports torch: only when a table draws intervals, so that the tables import without it
    from ..metrics import accuracy_shares

    a = np.asarray(accs, dtype=float)
    if not len(a) or n_boot <= 0:
        return {}
    idx = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    mean, ge80, eq100 = accuracy_shares(a[idx])
    stats = {"ge80_pct": 100 * ge80, "eq100_pct": 100 * eq100, "mean_acc": mean}
    q = (0.5 - level / 2, 0.5 + level / 2)
    out = {}
    for k, v in stats.items():
        lo, hi = np.quantile(v, q)
        out[f"{k}_lo"], out[f"{k}_hi"] = float(lo), float(hi)
    return out


def table6(
    name: str,
    K: int,
    taus: dict[str, int | None],
    checkpoint_rows: Rows,
    fracs: Sequence[float] = (0.25, 0.5, 1.0, 1.5),
    families: Sequence[str] = FAMILIES,
    group_rows: Rows | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Rows:
    """Collective transition: per-group accuracy at the checkpoints nearest fractions of tau,
    for each family (the paper's: candidate accuracy at fractions of the L_seq tau; first
    token: exact match at fractions of the Lc tau). Only checkpoints where the family's
    accuracy was computed are candidates.

    A fraction with no checkpoint within 0.1 tau (a run stopped early) gets an empty row; a
    paper reference is attached only from a paper row within 0.15 tau of the checkpoint.
    With ``group_rows`` (the groups pass: one row per group and checkpoint), every number gets
    a 95% percentile bootstrap interval over the groups (``n_boot`` resamples, ``seed``):
    columns ``<number>_lo`` and ``<number>_hi``.
    Returns a DataFrame, one row per family and fraction."""
    checkpoint_rows = records(checkpoint_rows)
    per_group: dict[int, list[dict]] = {}
    for r in records(group_rows) if group_rows is not None else []:
        per_group.setdefault(r["step"], []).append(r)
    out = []
    for fam in families:
        d, tau = definition(fam), taus.get(fam)
        if tau is None:
            continue
        by_step = {r["step"]: r for r in checkpoint_rows if _finite(r.get(d.acc_mean))}
        steps = sorted(by_step)
        for f in fracs:
            s = nearest(steps, f * tau) if steps else None
            base = {"run": name, "K": K, "definition": fam, "tau": tau, "target": f"{f:g} tau"}
            if s is None or abs(s - f * tau) > 0.1 * tau:  # no checkpoint near this fraction (yet)
                out.append(
                    {**base, "step": None, "frac_tau": None, "ge80_pct": None, "eq100_pct": None, "mean_acc": None}
                )
                continue
            r = by_step[s]
            row = {
                **base,
                "step": s,
                "frac_tau": s / tau,
                "ge80_pct": 100 * r[d.ge80],
                "eq100_pct": 100 * r[d.eq100],
                "mean_acc": r[d.acc_mean],
            }
            accs = [g[d.acc] for g in per_group.get(s, []) if _finite(g.get(d.acc))]
            row.update(group_bootstrap(accs, n_boot, seed))
            near = [t for t in PAPER_TABLE6.get(K) or [] if abs(t[1] - s / tau) <= 0.15]
            if near:
                p = min(near, key=lambda t: abs(t[1] - s / tau))
                row.update(
                    {
                        "paper_step": p[0],
                        "paper_frac_tau": p[1],
                        "paper_ge80_pct": p[2],
                        "paper_eq100_pct": p[3],
                        "paper_mean_acc": p[4],
                    }
                )
            out.append(row)
    return frame(out)


PHASES = ("Pre", "Mid", "Post")


def phase_steps(steps: Sequence[int], tau: int | None, fracs=(0.25, 1.0, 2.0)) -> dict[str, int]:
    """Pre ~ fracs[0] tau (plateau), Mid ~ fracs[1] tau, Post ~ fracs[2] tau (the paper's tau/4,
    tau, 2 tau); without tau only Post, the last checkpoint."""
    if tau is None:
        return {"Post": steps[-1]}
    return {ph: nearest(steps, f * tau) for ph, f in zip(PHASES, fracs)}


def head_bootstrap(
    per_group: dict[str, list[float]], n_boot: int, seed: int, level: float = 0.95
) -> dict[str, dict[str, float]]:
    """Percentile bootstrap over groups of each head's mean ablation delta, and the share of
    resamples in which each head has the largest mean. ``per_group[head]`` holds the head's
    per-group deltas, in one group order for every head. Returns {head: {lo, hi, top_share}}."""
    heads = list(per_group)
    if not heads or n_boot <= 0:
        return {}
    M = np.asarray([per_group[h] for h in heads], dtype=float)  # [head, group]
    idx = np.random.default_rng(seed).integers(0, M.shape[1], size=(n_boot, M.shape[1]))
    means = M[:, idx].mean(-1)  # [head, resample]
    lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=1)
    top = np.bincount(means.argmax(0), minlength=len(heads)) / n_boot
    return {h: {"lo": float(lo[i]), "hi": float(hi[i]), "top_share": float(top[i])} for i, h in enumerate(heads)}


def table9(
    name: str,
    K: int,
    taus: dict[str, int | None],
    head_rows: Rows,
    top: int = 4,
    fracs=(0.25, 1.0, 2.0),
    families: Sequence[str] = FAMILIES,
    head_group_rows: Rows | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Rows:
    """Head ablation: the top heads at the Pre, Mid and Post checkpoints of each family (paper:
    ranked by Delta L at fractions of the L_seq tau; first token: by Delta Lc at fractions of
    the Lc tau). Both Delta L and Delta Lc are shown in every row. With ``head_group_rows``
    (per-group deltas) the ranked quantity gets a 95% bootstrap interval over groups
    (``<dL|dLc>_lo``, ``_hi``) and ``top_share``, the share of resamples in which the head
    ranks first. Returns a DataFrame."""
    head_rows = records(head_rows)
    by_step: dict[int, dict[str, dict[str, list[float]]]] = {}
    hg = (
        None
        if head_group_rows is None
        else head_group_rows
        if hasattr(head_group_rows, "groupby")
        else frame(records(head_group_rows))
    )
    if hg is not None and len(hg) and {"dL", "dLc"} <= set(hg.columns):
        hg = hg[hg["dL"].notna() | hg["dLc"].notna()]  # the checkpoints where the ablations ran
        for (step, head), g in hg.groupby(["step", "head"], sort=False):  # groups in row order
            by_step.setdefault(int(step), {})[head] = {"dL": g["dL"].tolist(), "dLc": g["dLc"].tolist()}
    out = []
    for fam in families:
        d, tau = definition(fam), taus.get(fam)
        ablated = sorted({r["step"] for r in head_rows if _finite(r.get(d.ablation))})
        if not ablated:
            continue
        for phase, s in phase_steps(ablated, tau, fracs).items():
            rows = sorted((r for r in head_rows if r["step"] == s), key=lambda r: -r[d.ablation])[:top]
            groups = by_step.get(s, {})
            ci = head_bootstrap({h: v[d.ablation] for h, v in groups.items()}, n_boot, seed) if groups else {}
            ref = PAPER_TABLE9.get(K, {}).get(phase, [])
            for rank, r in enumerate(rows, 1):
                row = {
                    "run": name,
                    "K": K,
                    "definition": fam,
                    "phase": phase,
                    "step": s,
                    "frac_tau": s / tau if tau else float("nan"),
                    "rank": rank,
                    "head": r["head"],
                    "dL": r.get("dL"),
                    "dLc": r["dLc"],
                    "dL1": r["dL1"],
                }
                if r["head"] in ci:
                    c = ci[r["head"]]
                    row.update({f"{d.ablation}_lo": c["lo"], f"{d.ablation}_hi": c["hi"], "top_share": c["top_share"]})
                if K in PAPER_TABLE9:
                    row["paper_head"] = ref[rank - 1][0] if rank <= len(ref) else None
                    row["paper_dL"] = ref[rank - 1][1] if rank <= len(ref) else None
                out.append(row)
    return frame(out)


def _plateau_level(steps: Sequence[float], Lc: Sequence[float], tau: int) -> float:
    """Median Lc over the checkpoints strictly between step 0 and 0.5 tau (Lc at step 0 if none)."""
    pre = [v for s, v in zip(steps, Lc) if 0 < s < 0.5 * tau]
    return float(np.median(pre)) if pre else float(Lc[0])


def half_rise_step(steps: Sequence[int], values: Sequence[float]) -> int | None:
    """First step at which a score reaches half of its rise from its first to its last value."""
    pairs = [(s, v) for s, v in zip(steps, values) if _finite(v)]
    if len(pairs) < 2:
        return None
    v0, vf = pairs[0][1], pairs[-1][1]
    if vf <= v0:
        return None
    half = v0 + 0.5 * (vf - v0)
    return next(s for s, v in pairs if v >= half)


def resample_counts(n_groups: int, n_boot: int, seed: int) -> np.ndarray:
    """[n_boot, n_groups]: how often each group is drawn in each bootstrap resample (the same
    draws as ``group_bootstrap`` and ``head_bootstrap`` with the same seed)."""
    idx = np.random.default_rng(seed).integers(0, n_groups, size=(n_boot, n_groups))
    flat = (idx + n_groups * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_groups).reshape(n_boot, n_groups)


def _per_group(rows, value: str, head: str | None = None):
    """(steps, [group, step] matrix) of one per-group quantity, over the steps where every
    group has it; None if there are none."""
    df = rows if hasattr(rows, "pivot_table") else frame(records(rows))
    if not len(df) or value not in df.columns:
        return None
    if head is not None:
        df = df[df["head"] == head]
    m = df.pivot_table(index="group", columns="step", values=value, aggfunc="first").dropna(axis=1, how="any")
    return (list(m.columns), m.to_numpy(dtype=float)) if m.shape[1] else None


def _half_rise_many(steps: Sequence[int], curves: np.ndarray) -> np.ndarray:
    """``half_rise_step`` of each row of ``curves`` [n, step] (NaN where the score does not rise)."""
    v0, vf = curves[:, 0], curves[:, -1]
    first = (curves >= (v0 + 0.5 * (vf - v0))[:, None]).argmax(1)
    t = np.asarray(steps, dtype=float)[first]
    t[~(vf > v0)] = np.nan
    return t


def _interval(values: np.ndarray, level: float) -> tuple[float, float] | tuple[None, None]:
    """Percentile interval of the resamples where the statistic is defined (None if it is
    defined in fewer than half of them)."""
    ok = values[np.isfinite(values)]
    if len(ok) < len(values) / 2:
        return None, None
    lo, hi = np.quantile(ok, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


def swap_gap_intervals(group_rows: Rows, n_boot: int, seed: int, level: float = 0.95) -> Rows:
    """Per checkpoint, the 95% bootstrap interval over groups of both swap gaps (the mean of
    the groups' gaps): rows (step, swap_gap_lo, swap_gap_hi, swap_gap_seq_lo, swap_gap_seq_hi)."""
    by: dict[int, dict[str, Any]] = {}
    for col in ("swap_gap", "swap_gap_seq"):
        got = _per_group(group_rows, col) if n_boot > 0 else None
        if got is None:
            continue
        steps, X = got
        means = resample_counts(X.shape[0], n_boot, seed) @ X / X.shape[0]  # [resample, step]
        lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2], axis=0)
        for s, a, b in zip(steps, lo, hi):
            by.setdefault(int(s), {"step": int(s)}).update({f"{col}_lo": float(a), f"{col}_hi": float(b)})
    return frame(sorted(by.values(), key=lambda r: r["step"]))


def routing_intervals(
    out: dict[str, Any], head_group_rows: Rows, group_rows: Rows, n_boot: int, seed: int, level: float = 0.95
) -> dict[str, Any]:
    """95% bootstrap intervals over groups (``<key>_lo``, ``<key>_hi``) of the leads in a
    ``routing`` result and of the step where the swap gap first exceeds 0.1 nats (as a fraction
    of tau): each resample of the groups recomputes the heads' mean score curves and the swap
    gap's, and from them t_r and the crossing. The heads (routing, top attention) and tau stay
    those of the full set of groups: the interval is the uncertainty of the timing alone."""
    res: dict[str, Any] = {}
    if n_boot <= 0:
        return res
    taus = {"": out.get("tau"), "_first_token": out.get("tau_first_token")}
    drawn: dict[int, np.ndarray] = {}

    def mean_curves(X: np.ndarray) -> np.ndarray:  # [resample, step]: the resampled groups' mean
        if X.shape[0] not in drawn:
            drawn[X.shape[0]] = resample_counts(X.shape[0], n_boot, seed)
        return drawn[X.shape[0]] @ X / X.shape[0]

    for label in ("routing", "top_attention"):
        head = out.get(f"{label}_head")
        if head is None:
            continue
        for score in ("sel_attn", "swap_contrib"):
            got = _per_group(head_group_rows, score, head)
            if got is None or len(got[0]) < 2:
                continue
            steps, X = got
            t_r = _half_rise_many(steps, mean_curves(X))
            for suffix, tau in taus.items():
                if tau:
                    key = f"{label}_lead_{score}{suffix}"
                    res[f"{key}_lo"], res[f"{key}_hi"] = _interval((tau - t_r) / tau, level)
    got = _per_group(group_rows, "swap_gap")
    if got is not None:
        steps, X = got
        above = mean_curves(X) > 0.1
        first = np.where(above.any(1), np.asarray(steps, dtype=float)[above.argmax(1)], np.nan)
        for suffix, tau in taus.items():
            if tau:
                key = f"swap_gap_0.1_frac_tau{suffix}"
                res[f"{key}_lo"], res[f"{key}_hi"] = _interval(first / tau, level)
    return res


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
    ablated = sorted({r["step"] for r in head_rows if _finite(r["swap_contrib"])})
    last_all = max(r["step"] for r in head_rows)
    out: dict[str, Any] = {"run": name, "K": K, "tau": tau, "tau_first_token": tau_ft}
    final_attn = {r["head"]: r["sel_attn"] for r in head_rows if r["step"] == last_all}
    top_attn = max(final_attn, key=final_attn.get)
    out["top_attention_head"] = top_attn
    if ablated:
        last = ablated[-1]
        final_share = {r["head"]: r["swap_contrib"] for r in head_rows if r["step"] == last}
        router = max(final_share, key=final_share.get)
        out["routing_head"] = router
        out["routing_head_final_causal_share"] = next(
            r["causal_share"] for r in head_rows if r["step"] == last and r["head"] == router
        )
        out["routing_is_top_attention"] = router == top_attn
    else:
        router = None
        out["routing_head"] = None
    for label, head in (("routing", router), ("top_attention", top_attn)):
        if head is None:
            continue
        rows = sorted((r for r in head_rows if r["head"] == head), key=lambda r: r["step"])
        for score in ("sel_attn", "swap_contrib"):
            t_r = half_rise_step([r["step"] for r in rows], [r[score] for r in rows])
            out[f"{label}_t_r_{score}"] = t_r
            out[f"{label}_lead_{score}"] = (tau - t_r) / tau if (tau and t_r is not None) else None
            out[f"{label}_lead_{score}_first_token"] = (tau_ft - t_r) / tau_ft if (tau_ft and t_r is not None) else None
    ck = sorted(checkpoint_rows, key=lambda r: r["step"])
    gap_step = next((r["step"] for r in ck if _finite(r["swap_gap"]) and r["swap_gap"] > 0.1), None)
    out["swap_gap_0.1_step"] = gap_step
    out["swap_gap_0.1_frac_tau"] = gap_step / tau if (gap_step is not None and tau) else None
    out["swap_gap_0.1_frac_tau_first_token"] = gap_step / tau_ft if (gap_step is not None and tau_ft) else None
    # onsets: first checkpoint where each curve has covered 5% of its full range
    if tau and ck:
        steps = [r["step"] for r in ck]
        g = [r["swap_gap"] for r in ck]
        lc = [r["Lc"] for r in ck]
        Lp, Lmin = _plateau_level(steps, lc, tau), min(lc)
        gmax = max((v for v in g if _finite(v)), default=float("nan"))
        z_on = next((s for s, v in zip(steps, g) if _finite(v) and gmax > 0 and v >= 0.05 * gmax), None)
        l_on = next((s for s, v in zip(steps, lc) if Lp > Lmin and (Lp - v) >= 0.05 * (Lp - Lmin) and s > 0), None)
        out["z_onset_step"], out["loss_onset_step"] = z_on, l_on
        out["z_onset_frac_tau"] = z_on / tau if z_on is not None else None
        out["loss_onset_frac_tau"] = l_on / tau if l_on is not None else None
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
    ck = sorted((r for r in checkpoint_rows if _finite(r.get(d.loss))), key=lambda r: r["step"])
    if not tau or not ck:
        return {"a": frame([]), "b": frame([])}
    steps = np.array([r["step"] for r in ck], dtype=float)
    gap = np.array([r[d.swap_gap] if _finite(r.get(d.swap_gap)) else np.nan for r in ck], dtype=float)
    Lc = np.array([r[d.loss] for r in ck], dtype=float)
    Lp = _plateau_level(steps, Lc, tau)
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
        if _finite(r.get(d.group_loss)):
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


def accuracy_histogram(group_rows: list[dict], K: int) -> list[dict]:
    """Tidy rows (step, acc, pct_groups): % of groups whose accuracy is k / K, for k = 0..K."""
    counts: dict[int, list[int]] = {}
    for r in records(group_rows):
        counts.setdefault(r["step"], [0] * (K + 1))[round(r["acc"] * K)] += 1
    return frame(
        [
            {"step": s, "acc": k / K, "pct_groups": 100 * c[k] / sum(c)}
            for s, c in sorted(counts.items())
            for k in range(K + 1)
        ]
    )
