"""What a recipe has left to train and what it should cost here (``mi-plateau reproduce NAME
--dry-run``): per point, its status (here or recorded in the recipe's log), the steps it is expected
to take and the core-minutes they should cost on this machine, priced by a short timed probe of each
shape (``price_probe``). Reads run folders and logs; trains nothing and writes only the probe's
cache."""

from __future__ import annotations

import statistics
from typing import Any

from .. import paper
from ..fits import power_law
from ..sweeps import RunOptions, Sweep, run_row, select, sweep_in_precision
from .price_probe import prober, run_seconds
from .records import FAMILY_KEYS, collect
from .shipped import recipe_sweep


def dry_run(
    name: str | Sweep, options: RunOptions = RunOptions(), *, sec_per_step: float | None = None
) -> list[dict[str, Any]]:
    """The recipe's (or sweep's) runs, their status and an estimate of what is left of each: the
    expected steps x the seconds per step, less the steps a partial run here already made.
    Expected steps: 1.2 x (the tau-only margin) the tau measured for the point's condition (the
    same point with another seed, here or recorded in the recipe's log: their mean, a seed that
    failed counting as the whole budget, an unfinished seed without a tau as the margin x its
    steps, a lower bound), else the paper's tau for it, else the step cap (``tau_from`` says
    which); a condition whose only runs are unfinished takes the larger of the paper's guess and
    their bound. Price: a short timed probe of the point's own configuration on ``options.device``
    (``price_probe.prober``: its training step and its live evaluation, cached per shape under
    ``options.root``), or, with ``sec_per_step``, that many seconds per step at batch 128 and
    nothing for evaluation (``priced_from``). A recipe named is read as ``options`` ask
    (``max_steps``, ``precision``: as ``run_sweep_recipe`` trains it). A run the log (under
    ``options.docs``) records as finished costs nothing with ``options.skip_recorded`` (its status
    says "recorded"). ``options.only``: just these points (checked as training checks them)."""
    if isinstance(name, str):
        sweep = sweep_in_precision(recipe_sweep(name, options.max_steps), options.precision)
    else:
        sweep = name
    root, docs, skip_recorded = options.root, options.docs, options.skip_recorded
    # an unknown name is refused before any work (a probe writes its cache under root)
    keep = set(select(sweep, options.only)) if options.only is not None else {p.name for p in sweep.points}
    runs = collect(sweep, root, docs)[0]
    if sec_per_step:
        price, priced_from = (lambda c: {"s_step": sec_per_step * c.train.batch_size / 128, "s_eval": 0.0}), "given"
    else:
        from ..devices import resolve  # here, not at the top: torch, loaded when a probe runs

        price, priced_from = prober(root, str(resolve(options.device))), "probe"
    # per condition: the steps each seed's run takes (here or recorded), and how many of them are
    # lower bounds (a partial run with no tau yet takes at least the margin x the steps it made)
    seen: dict[tuple, list[tuple[float, bool]]] = {}
    for p, r in zip(sweep.points, runs):
        own = _run_steps(p.cfg, r)
        if own:
            seen.setdefault(_condition(p.cfg), []).append(own)
    rows = []
    for p, r in zip(sweep.points, runs):
        if p.name not in keep:  # only the points asked for are priced
            continue
        c = p.cfg
        path = sweep.folder(root) / p.name
        steps, tau_from = _expected_steps(c, seen.get(_condition(c), []))
        own = _run_steps(c, r) if r["status"] == "running" and c.train.stop != "budget" else None
        if own:  # this run's own evidence: its stop once it has its tau, else a bound
            steps = max(steps, own[0]) if own[1] else own[0]
        st = r["status"] if r["source"] != "recorded" else f"{r['status']} (recorded)"
        local = run_row(path)  # a partial folder here resumes, whichever row the tables show
        done = (local.get("steps") or 0) if local["status"] == "running" else 0
        steps = max(steps, done)
        finished = r["status"] == "finished" and (r["source"] == "here" or skip_recorded)
        left = 0 if finished else max(0.0, steps - done)
        rows.append(
            {
                "run": str(path),
                **p.settings,
                "status": st,
                "steps_done": done,
                "expected_steps": int(steps),
                "est_core_min": run_seconds(c, price(c), left) / 60 if left else 0.0,
                "tau_from": tau_from,
                "priced_from": priced_from,
            }
        )
    return rows


def _expected_steps(c, seen: list[tuple[float, bool]]) -> tuple[float, str]:
    """The steps a point is expected to take before its own run says more, and from what: the
    mean over its condition's runs (``seen``: steps, whether a lower bound), the paper's tau x
    the margin, or the budget."""
    if c.train.stop == "budget":  # no early stop: every step of the budget
        return c.train.max_steps, "the budget (stop 'budget')"
    guess = _paper_tau_guess(c)
    by_paper = min(c.train.max_steps, c.train.tau_margin * guess) if guess else c.train.max_steps
    source = "the paper" if guess else "the budget"
    if not seen:
        return by_paper, source
    many = "s" * (len(seen) > 1)
    if all(bound for _, bound in seen):  # only partial runs without a tau: the paper's guess, not below them
        return max(by_paper, max(v for v, _ in seen)), f"{source}, at least {len(seen)} unfinished run{many}"
    full = statistics.mean(v for v, bound in seen if not bound)  # a bound below them says nothing more
    steps = statistics.mean(max(v, full) if bound else v for v, bound in seen)
    n_bounds = sum(bound for _, bound in seen)
    return steps, f"{len(seen)} run{many} measured" + (
        f" ({n_bounds} unfinished without a tau: at least)" if n_bounds else ""
    )


def _run_steps(c, row: dict[str, Any]) -> tuple[float, bool] | None:
    """(the steps the run takes, whether that is only a lower bound) from its row: 1.2 x its
    stopping tau; the budget for a run that finished without one; 1.2 x the steps made by an
    unfinished run without one (a bound); None for a run not started."""
    tau = _stop_tau(c, row)
    if tau:
        return min(c.train.max_steps, c.train.tau_margin * tau), False
    if row["status"] == "finished":  # a finished run without one failed: it counts as the whole budget
        return c.train.max_steps, False
    if row["status"] == "running" and row.get("steps"):
        return min(c.train.max_steps, c.train.tau_margin * row["steps"]), True
    return None


def _stop_tau(c, row: dict[str, Any]) -> int | None:
    """The tau the run's stopping rule waits for (``train.tau_on``: one family's, or the later
    of both), None until it has it."""
    taus = [row[f"tau_{f}"] for f in (FAMILY_KEYS if c.train.tau_on == "both" else (c.train.tau_on,))]
    return max(taus) if all(taus) else None


def _condition(c) -> tuple:
    """What a point's tau depends on apart from its seeds (Table 4's condition and the recipe)."""
    return (
        c.task.K,
        c.task.n_b,
        c.task.len_z,
        c.train.lr,
        c.train.batch_size,
        c.train.grad_clip,
        c.train.max_steps,
        c.train.tau_on,
        c.train.warmup_steps,
        c.train.schedule,
    )


def _paper_tau_guess(c) -> float | None:
    """The paper's tau for this point where it prints one (Table 4 at its learning rates, Table 1
    at its batch sizes, Table 3 at lr 1e-3), None (the whole budget) at or past its Table 8
    boundary, else the power law of its Table 3 in D, scaled by the batch size."""
    D, lr = c.task.K * c.task.n_b, c.train.lr
    boundary = paper.TABLE8.get(c.task.K)
    if (D, c.task.K, lr) in paper.TABLE4:
        return paper.TABLE4[(D, c.task.K, lr)][0]
    if boundary and c.task.n_b == 1000 and lr >= boundary[1]:
        return None
    if c.task.n_b == 1000 and c.task.K == 20 and lr == 1e-3 and c.train.batch_size in paper.TABLE1:
        return paper.TABLE1[c.train.batch_size]
    if c.task.n_b == 1000 and c.task.K in paper.TABLE3 and lr == 1e-3 and c.train.batch_size == 128:
        return paper.TABLE3[c.task.K]
    fit = power_law([1000 * k for k in paper.TABLE3], list(paper.TABLE3.values()), n_boot=0)
    return fit["prefactor"]["0"] * D ** fit["slope"] * (128 / c.train.batch_size) ** 0.8
