"""Do the live intervals cover the exact crossings? (How ``crossings.Z_INTERVAL`` is chosen.)

For one run: every default question (tau at eval.alpha and Table 5's alphas; the width's t_start
and t_end) settled exactly (``settle``: the checkpoints whose bands at ``Z_EXACT``
contain the threshold scored on the full evaluation set), and the interval the live records alone
give at each Z of ``ZS`` (``crossings``) checked against it. ``coverage_table`` pools the rows of
many runs: per Z, the crossings and the share covered. The exact side leans on the bands at
``Z_EXACT`` that settle leaves unscored (6e-5 per look under the normal approximation), far
wider than any Z tested here."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable, Sequence
from typing import Any

from .. import crossings
from ..settle import Crossing, answer, default_questions, settle
from ..summaries import every_group_live, seq_bands

ZS = (1.5, 2.0, 2.5, 3.0)  # the Z the coverage table compares (SPEC section 9)


def run_coverage(run, zs: Sequence[float] = ZS, score=None) -> list[dict[str, Any]]:
    """One row per crossing of ``run``'s default questions: the exact step (settled now where
    the cache does not hold it), the live estimate's step and, per Z, the interval and whether it
    covers the exact step. A crossing whose settlement needs weights that are gone is left out
    (the row says ``unsettled``)."""
    cfg = run.config()
    log_K, live_all = cfg.task.log_K, every_group_live(cfg)
    questions = default_questions(cfg)
    st = settle(run, questions, score=score)
    live = run.records(settled=False)
    steps = [int(r["step"]) for r in live]
    vals, ses = seq_bands(live, live_all)
    rows = []
    for q in questions:
        exact = answer(q, st.records, log_K, live_all)
        base = {"run": run.path.name, "K": cfg.task.K, "n_b": cfg.task.n_b, "seed": cfg.task.data_seed}
        if isinstance(q, Crossing):
            items = [(f"tau at {q.alpha:g} log K", "tau", lambda z, q=q: crossings.first_below(
                steps, vals, ses, q.alpha * log_K, z))]  # fmt: skip
        else:
            items = [
                (
                    f"{name} ({q.hi:g} -> {q.lo:g} log K)",
                    name,
                    lambda z, q=q, name=name: crossings.width(steps, vals, ses, q.hi * log_K, q.lo * log_K, z)[name],
                )  # fmt: skip
                for name in ("t_start", "t_end")
            ]
        for label, key, interval in items:
            row = {**base, "crossing": label, "exact": exact[key], "settled": bool(exact[f"{key}_exact"])}
            est = interval(ZS[0])
            row["estimate"] = est.estimate
            for z in zs:
                c = interval(z)
                row[f"lo_{z:g}"], row[f"hi_{z:g}"] = c.lo, c.hi
                row[f"covers_{z:g}"] = covers(c, exact[key]) if row["settled"] else None
            rows.append(row)
    return rows


def covers(c: crossings.Crossing, exact: int | None) -> bool:
    """Does the interval hold the exact step? (No crossing: the interval must leave one open.)"""
    if exact is None:
        return c.hi is None
    lo_ok = c.lo is not None and c.lo <= exact
    return lo_ok and (c.hi is None or exact <= c.hi)


def training_identity(run) -> dict[str, Any]:
    """What tells two run folders' crossings apart: the SHA-256 of the weights at the first
    checkpoint past step 0 (16 hex digits; two folders with equal weights there are one training,
    evaluated twice or stopped at different steps: runs that differ in data, order or init differ
    from the first update), and the precision it trained and evaluated live in
    (``eval_precision``; records before it existed evaluated in fp32)."""
    records = run.records(settled=False)
    first = next((r for r in records if int(r["step"]) > 0), records[0])
    last = records[-1]
    digest = hashlib.sha256(run.weights_path(int(first["step"])).read_bytes()).hexdigest()[:16]
    return {"weights": digest, "precision": last.get("precision"), "eval_precision": last.get("eval_precision", "fp32")}


def distinct_trainings(rows: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``rows`` with one run per training (equal ``weights``): the run whose live evaluation is in
    its training precision (today's default) where one is, else the first by name; rows without
    ``weights`` all stay. Returns (the rows kept, the runs left out)."""
    rows = list(rows)
    runs: dict[str, dict[str, Any]] = {}
    for r in rows:
        runs.setdefault(r["run"], r)
    by_weights: dict[str, list[str]] = {}
    for name, r in sorted(runs.items()):
        if r.get("weights"):
            by_weights.setdefault(r["weights"], []).append(name)
    dropped = []
    for names in by_weights.values():
        keep = next((n for n in names if runs[n].get("eval_precision") == runs[n].get("precision")), names[0])
        dropped += [n for n in names if n != keep]
    return [r for r in rows if r["run"] not in dropped], sorted(dropped)


def coverage_table(
    rows: Iterable[dict[str, Any]], zs: Sequence[float] = ZS, n_boot: int = 2000, seed: int = 0
) -> list[dict[str, Any]]:
    """Per Z: the settled crossings and the runs they come from, how many intervals cover their
    exact step, the share, its 95% interval by resampling whole runs (``n_boot`` percentile
    bootstrap draws: a run's crossings share its live subset, so they are not independent), and
    the mean interval width in checkpoints' steps; ``chosen`` marks the smallest Z whose share
    is at least 95%."""
    rows = [r for r in rows if r.get("settled")]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_run.setdefault(r["run"], []).append(r)
    runs = list(by_run.values())
    rng = random.Random(seed)
    draws = [[rng.randrange(len(runs)) for _ in runs] for _ in range(n_boot if runs else 0)]
    out = []
    for z in zs:
        hit = [r[f"covers_{z:g}"] for r in rows]
        spans = [
            r[f"hi_{z:g}"] - r[f"lo_{z:g}"] for r in rows if r[f"hi_{z:g}"] is not None and r[f"lo_{z:g}"] is not None
        ]
        per_run = [(sum(bool(r[f"covers_{z:g}"]) for r in rr), len(rr)) for rr in runs]
        shares = sorted(
            sum(per_run[i][0] for i in d) / sum(per_run[i][1] for i in d) for d in draws
        )  # fmt: skip
        out.append({
            "Z": z,
            "runs": len(runs),
            "crossings": len(hit),
            "covered": sum(bool(h) for h in hit),
            "coverage": sum(bool(h) for h in hit) / len(hit) if hit else None,
            "coverage_lo": shares[math.floor(0.025 * len(shares))] if shares else None,
            "coverage_hi": shares[math.ceil(0.975 * len(shares)) - 1] if shares else None,
            "mean_width_steps": sum(spans) / len(spans) if spans else None,
        })  # fmt: skip
    ok = [r for r in out if r["coverage"] is not None and r["coverage"] >= 0.95]
    for r in out:
        r["chosen"] = bool(ok) and r is ok[0]
    return out
