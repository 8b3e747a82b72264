"""Tables 6 and 9 and the accuracy histogram, from tidy pass rows.

Each table is computed under one or both definition families (``definitions``): the paper's
(L_seq and its tau, candidate accuracy, Delta L) and the first-token one (Lc and its tau, exact
match, Delta Lc); a ``definition`` column names which. ``taus`` maps a family to its tau.
The paper's values (``paper.TABLE6``, ``paper.TABLE9``) appear only in columns whose names start
with ``paper_``; every other number comes from the run named in the row.

The routing-head summary and the data of Figure 3 live in ``routing``, the bootstrap intervals
over groups in ``bootstrap``, the curve rules they share (half rise, plateau level) in
``curves``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import paper
from ..definitions import FAMILIES, definition
from ..frames import Rows, frame, records
from ..summaries import nearest
from .bootstrap import group_bootstrap, head_bootstrap
from .curves import finite


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
        by_step = {r["step"]: r for r in checkpoint_rows if finite(r.get(d.acc_mean))}
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
            accs = [g[d.acc] for g in per_group.get(s, []) if finite(g.get(d.acc))]
            row.update(group_bootstrap(accs, n_boot, seed))
            near = [t for t in paper.TABLE6.get(K) or [] if abs(t[1] - s / tau) <= 0.15]
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
        ablated = sorted({r["step"] for r in head_rows if finite(r.get(d.ablation))})
        if not ablated:
            continue
        for phase, s in phase_steps(ablated, tau, fracs).items():
            rows = sorted((r for r in head_rows if r["step"] == s), key=lambda r: -r[d.ablation])[:top]
            groups = by_step.get(s, {})
            ci = head_bootstrap({h: v[d.ablation] for h, v in groups.items()}, n_boot, seed) if groups else {}
            ref = paper.TABLE9.get(K, {}).get(phase, [])
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
                if K in paper.TABLE9:
                    row["paper_head"] = ref[rank - 1][0] if rank <= len(ref) else None
                    row["paper_dL"] = ref[rank - 1][1] if rank <= len(ref) else None
                out.append(row)
    return frame(out)


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
