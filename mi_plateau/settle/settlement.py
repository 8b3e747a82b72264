"""Evaluation in two parts: a live estimate while training, an exact settlement afterwards.

**Live.** At every checkpoint the first-token family (Lc, L1, the candidate mass, the swap gap)
is computed on every evaluation group: it reads one position per row and is cheap. The paper
family's L_seq scores K (K - 1) continuation strings per group, so it is computed on a seeded
subset of ``eval.live_groups`` groups (the same groups at every checkpoint of a run) and recorded
as an estimate of the full-set mean with its standard error (``L_seq_se``; 0 where every group
was scored). The only live decisions are the stopping rules and the checkpoint spacing; the floor
stop waits until the estimate is below its floor by ``Z`` standard errors.

**Settle.** A crossing a table reads (tau at any alpha, the transition width's ends, any
threshold asked later) is a question about which side of a threshold t the full-set L_seq lies
at some checkpoints. A checkpoint whose band [estimate - Z se, estimate + Z se] excludes t
answers by its estimate; one whose band contains t is scored on the full set (the only full
scorings a run pays for), and only where the answer depends on it: the walk that finds "the
first checkpoint below t" stops at the first checkpoint decided below, and the width's
"last checkpoint above t before t_end" walks back from t_end to the first decided above. The
exact values are cached in the run folder (``settled.json``, the storage stage's
``checkpoints.settled``), per step and weights checksum, so a second question is free and a
summary without torch reads them.

Diagram (one threshold t; ``|`` a band, ``x`` an exact value)::

    L_seq  |  |  |  |                          only the bands that contain t,
    t  ----|--|--x--x------------------        on the walk's path, are scored
                    \\  |  |  |                 exactly; the answer is the
                     \\ |  |  |                 first x or band wholly below t

With Z standard errors a band excludes the full-set value with probability at most 2 Phi(-Z) per
look under the normal approximation of a subset mean (Z = 4: 6e-5). Pure Python and numpy; the
scoring imports torch lazily (``scorer``). The live subset and its estimate are
``metrics.live_subset`` and ``metrics.estimate``; the answers read from settled records, and a
run's settled summary, are ``answers``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..checkpoints import read_json
from ..checkpoints.settled import KEY, SETTLED_FILE, overlay, resolve, valid_entries, write_cache
from ..crossings import Z_EXACT
from ..summaries import every_group_live, group_order, num, seq_band

Z = Z_EXACT  # a band decides a side at this many standard errors (6e-5 per look): the settled, exact answer
TABLE5_ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7)  # Table 5's thresholds, fractions of log K


# ---------------------------------------------------------------------------------------------
# the questions (pure: records in, steps to score out)


@dataclass(frozen=True)
class Crossing:
    """tau at ``alpha``: the first checkpoint with L_seq < alpha log K."""

    alpha: float


@dataclass(frozen=True)
class Width:
    """The transition width: t_end = the first checkpoint with L_seq < lo log K, t_start = the last
    one before it with L_seq > hi log K (0 if none)."""

    hi: float
    lo: float


def default_questions(cfg) -> tuple[Crossing | Width, ...]:
    """What a run's summary and tables read: tau at ``eval.alpha`` and Table 5's alphas, and the
    transition width at ``eval.width_hi`` / ``eval.width_lo``."""
    alphas = sorted({cfg.eval.alpha, *TABLE5_ALPHAS})
    return (*(Crossing(a) for a in alphas), Width(cfg.eval.width_hi, cfg.eval.width_lo))


def retire_live(cfg, records: Sequence[dict[str, Any]]) -> bool:
    """Can the live evaluation leave L_seq out from now on? Yes once a recorded estimate lies
    below every threshold a live decision or a default question reads by ``Z`` standard errors:
    the width's lower end, and the floor stop's floor where it waits for L_seq. Every crossing
    of those is then decided at or before that checkpoint; a question asked later about a lower
    threshold finds the later checkpoints unknown and settles them on the full set."""
    lowest = cfg.eval.width_lo
    if cfg.train.stop == "floor" and cfg.train.tau_on in ("paper", "both"):
        lowest = min(lowest, cfg.train.stop_floor)
    t = lowest * cfg.task.log_K
    for r in records:
        v, se = num(r["metrics"].get(KEY)), r["metrics"].get(f"{KEY}_se")
        if se is not None and math.isfinite(v) and v + Z * num(se) < t:
            return True
    return False


def _side(v: float, se: float, t: float, below: bool) -> bool | None:
    """Is the full-set value below t (``below``) or above t? None: the band contains t (or the
    value is unknown: se inf)."""
    if math.isinf(se):
        return None
    if not math.isfinite(v):
        return False  # no value (a task without the paper family): neither below nor above
    if se == 0.0:
        return v < t if below else v > t
    if not (v - Z * se > t or v + Z * se < t):
        return None
    return v < t if below else v > t


class Walk:
    """The sides of each record's L_seq, exact where ``exact`` holds its full-set value.
    ``undecided`` collects the indices a question needed and could not decide; ``fallback``
    (indices) answer by their estimate (checkpoints that cannot be scored)."""

    def __init__(self, bands: Sequence[tuple[float, float]], log_K: float, fallback: Iterable[int] = ()):
        self.bands, self.log_K = list(bands), log_K
        self.fallback = set(fallback)
        self.undecided: list[int] = []

    def side(self, i: int, frac: float, below: bool) -> bool | None:
        v, se = self.bands[i]
        s = _side(v, 0.0 if i in self.fallback else se, frac * self.log_K, below)
        if s is None:
            self.undecided.append(i)
        return s

    def first_below(self, frac: float) -> int | None:
        """The first index below ``frac`` log K (None: none, or an undecided one on the way)."""
        for i in range(len(self.bands)):
            s = self.side(i, frac, True)
            if s is None:
                return None
            if s:
                return i
        return None

    def last_above(self, frac: float, before: int) -> int | None:
        """The last index before ``before`` above ``frac`` log K (None: none, or undecided)."""
        for i in range(before - 1, -1, -1):
            s = self.side(i, frac, False)
            if s is None or s:
                return i if s else None
        return None

    def ask(self, q: Crossing | Width) -> None:
        if isinstance(q, Crossing):
            self.first_below(q.alpha)
        else:
            end = self.first_below(q.lo)
            if end is not None:
                self.last_above(q.hi, end)


def pending(
    records: Sequence[dict[str, Any]],
    log_K: float,
    exact_live: bool,
    questions: Iterable[Crossing | Width],
    fallback: Iterable[int] = (),
) -> list[int]:
    """The steps whose L_seq the ``questions`` need and the (resolved) records cannot decide: the
    first undecided checkpoint on each question's walk."""
    w = Walk([seq_band(r["metrics"], exact_live) for r in records], log_K, fallback)
    need = set()
    for q in questions:
        w.undecided = []
        w.ask(q)
        need.update(w.undecided)
    return sorted(int(records[i]["step"]) for i in need)


# ---------------------------------------------------------------------------------------------
# settling a run: stage by stage, up to the full set

STAGES = (50, 125)  # groups a needed checkpoint is scored on before all of them (each stage adds groups)


@dataclass
class Settlement:
    """What ``settle`` did: the records with every settled value in place; the scorings it made
    now (``scored``: one per step and stage), the steps whose full set it holds now and held
    before (``full``, ``cached``), and the steps it needed but did not score (``unsettled``),
    which answer by their estimate: ``missing`` those whose weights are gone, the rest because
    no scoring was asked (a summary reads the cache only)."""

    records: list[dict[str, Any]]
    scored: list[int]
    groups_scored: int
    full: list[int]
    cached: list[int]
    unsettled: list[int]
    missing: list[int]
    asked: bool = True

    def note(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "scorings_now": len(self.scored),
            "groups_scored_now": self.groups_scored,
            "full_sets_now": len([s for s in self.full if s not in self.cached]),
            "full_sets_cached": len(self.cached),
            "scored_steps": sorted(set(self.scored)),
            "unsettled_steps": self.unsettled,
            "missing_weights": self.missing,
            "exact": not self.unsettled,
        }


def settle(
    run,
    questions: Iterable[Crossing | Width] | None = None,
    *,
    score: Callable[[int, list[int]], dict[str, Any]] | None = None,
    allow_scoring: bool = True,
) -> Settlement:
    """Settle ``questions`` (default ``default_questions``) on ``run`` (a ``checkpoints.Run``):
    each checkpoint a question's walk needs and cannot decide gets its next stage of groups
    scored (``STAGES``, then all of them), and the walks run again, until nothing they read is
    undecided; the scored groups are cached in ``settled.json`` by step and weights checksum.
    ``score(step, groups)``: those groups' L_seq means and candidate accuracies at a step
    (``metrics.group_scores``; default on the run, on the CPU); ``allow_scoring=False`` reads
    the cache only (no torch), leaving the rest unsettled."""
    manifest = run.manifest()
    cfg = run.config()
    entries = {int(c["step"]): c for c in manifest["checkpoints"]}
    records = [c["record"] for c in manifest["checkpoints"]]
    questions = tuple(questions) if questions is not None else default_questions(cfg)
    path = run.own_file(SETTLED_FILE)
    doc = read_json(path) if path.exists() else {}
    cache = valid_entries(doc, entries)
    n_total = min(cfg.eval.n_groups, cfg.task.n_b)
    cached = sorted(s for s, e in cache.items() if len(e["L_seq"]) >= n_total)
    scored, unsettled, missing, seconds, n_groups = [], [], [], 0.0, 0
    order: list[int] | None = None
    exact_live = every_group_live(cfg)
    if score is None and allow_scoring:
        score = scorer(run)
    while True:
        resolved = resolve(records, {s: overlay(e, n_total) for s, e in cache.items()})
        fb = [i for i, r in enumerate(records) if int(r["step"]) in unsettled]
        need = pending(resolved, cfg.task.log_K, exact_live, questions, fb)
        if not need:
            break
        for step in need:
            if not allow_scoring or not run.weights_path(step).exists():
                unsettled.append(step)
                if allow_scoring:
                    missing.append(step)
                continue
            if order is None:
                order = group_order(run.eval_set().groups, cfg.eval.eval_seed)
            e = cache.setdefault(step, {"sha256": entries[step].get("sha256"), "groups": [], "L_seq": [], "acc": []})
            done = len(e["groups"])
            nxt = next((n for n in STAGES if n > done), n_total)
            t = time.perf_counter()
            got = score(step, order[done:nxt])
            seconds += time.perf_counter() - t
            e["groups"] += [int(g) for g in got["groups"]]
            e["L_seq"] += [float(x) for x in got["L_seq"]]
            e["acc"] += [float(x) for x in got["acc"]]
            scored.append(step)
            n_groups += len(got["groups"])
        if scored:  # after each round: a settlement killed midway keeps what it scored
            write_cache(path, cfg, cache, float(doc.get("settle_s") or 0.0) + seconds)
    full = sorted(s for s, e in cache.items() if len(e["L_seq"]) >= n_total)
    final = resolve(records, {s: overlay(e, n_total) for s, e in cache.items()})
    return Settlement(
        final, scored, n_groups, full, cached, sorted(set(unsettled)), sorted(set(missing)), allow_scoring
    )


def scorer(run, ev=None, device=None) -> Callable[[int, list[int]], dict[str, Any]]:
    """``score(step, groups)`` for ``settle``: ``metrics.group_scores`` at a checkpoint of
    ``run`` on ``ev`` (default the run's evaluation set, built at first use), the model on
    ``device`` (default the CPU)."""
    state: dict[str, Any] = {"ev": ev}

    def score(step: int, groups: list[int]) -> dict[str, Any]:
        import numpy as np

        from ..metrics import group_scores  # here, not at the top: torch (a summary reads the cache without it)

        if state["ev"] is None:
            state["ev"] = run.eval_set()
        model = run.load_model(step)
        if device is not None and str(device) != "cpu":
            model = model.to(device)
        return group_scores(model, state["ev"], np.asarray(groups))

    return score
