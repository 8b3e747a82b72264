"""The settlement cache, ``settled.json`` in a run folder: per step, the evaluation groups the
settlement (``mi_plateau.settle``) scored with their L_seq means and candidate accuracies, keyed by
the weights' checksum, and the seconds all scorings took. Storage only: reading it needs no torch
and scores nothing; ``cached_exact`` gives its values per step as record metrics and ``resolve``
puts them in place of the live estimates (``Run.records`` does, by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..summaries import estimate, group_shares, nan_to_none
from .files import RunError, atomic_write_json, read_json

SETTLED_FILE = "settled.json"
KEY = "L_seq"  # the one loss recorded as an estimate; the first-token family is exact live
# what a full scoring replaces in a record (the paper family's numbers over the scored rows)
EXACT_KEYS = ("L_seq", "cand_acc", "cand_groups_ge80", "cand_groups_100")


def resolve(records: Sequence[dict[str, Any]], known: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with each settled step's paper-family numbers in place (``known``: per step,
    the overlay ``overlay`` makes from the settlement cache: the full-set values with
    ``settled`` true, or a larger subset's estimate with its standard error); the rest as
    recorded."""
    out = []
    for r in records:
        e = known.get(int(r["step"]))
        if e is not None:
            r = {**r, "metrics": {**r["metrics"], **e}}
        out.append(r)
    return out


def overlay(entry: dict[str, Any], n_total: int) -> dict[str, Any]:
    """A cache entry (whole groups scored at a step: their L_seq means and candidate accuracies)
    as record metrics: the full-set values (``settled``) once every group is in, else the
    subset's estimate of L_seq with its finite-population standard error."""
    import numpy as np

    L, acc = np.asarray(entry["L_seq"], dtype=float), np.asarray(entry["acc"], dtype=float)
    if len(L) >= n_total:
        mean, ge80, eq100 = group_shares(acc)
        return {KEY: float(L.mean()), f"{KEY}_se": 0.0, "cand_acc": mean, "cand_groups_ge80": ge80,
                "cand_groups_100": eq100, "settled": True}  # fmt: skip
    v, se = estimate(L, n_total)
    return {KEY: v, f"{KEY}_se": se, "settled_groups": len(L)}


def write_cache(path, cfg, cache: dict[int, dict[str, Any]], settle_s: float) -> None:
    """The settlement cache: the scored groups per step, and the seconds all scorings took
    (``sweeps.table.run_costs`` counts them as evaluation)."""
    doc = {
        "eval": {"n_groups": cfg.eval.n_groups, "eval_seed": cfg.eval.eval_seed},
        "steps": {str(s): cache[s] for s in sorted(cache)},
        "settle_s": settle_s,
    }
    atomic_write_json(path, nan_to_none(doc))


def valid_entries(doc: dict[str, Any], entries: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The cache's entries that still serve: a step of the run with the same weights."""
    out = {}
    for k, v in (doc.get("steps") or {}).items():
        c = entries.get(int(k))
        if c is not None and isinstance(v, dict) and v.get("sha256") == c.get("sha256") and "L_seq" in v:
            out[int(k)] = v
    return out


def cached_exact(run) -> dict[int, dict[str, Any]]:
    """{step: record metrics overlay} from the run's settlement cache (no scoring, no torch):
    the full-set values where every group is scored, else the scored groups' estimate; empty
    where there is no cache or it cannot be read."""
    try:
        path = run.own_file(SETTLED_FILE)
        if not path.is_file():
            return {}
        cfg = run.config()
        n_total = min(cfg.eval.n_groups, cfg.task.n_b)
        cache = valid_entries(read_json(path), {int(c["step"]): c for c in run.manifest()["checkpoints"]})
        return {s: overlay(e, n_total) for s, e in cache.items()}
    except (RunError, ValueError, TypeError, AttributeError, KeyError):
        return {}
