"""``mi-plateau settle RUN``: exact full-set crossings, on request. Every crossing a summary
shows is the live estimate's, with its interval (``crossings``); ``settle`` scores the checkpoints
inside the intervals of the crossings asked (default: tau at eval.alpha and Table 5's alphas, the
transition width) on the full evaluation set until each is exact, caches what it scored in the
run folder (``settled.json``, per step and weights checksum) and says how many full scorings it
paid. A later summary shows the settled values, labelled exact. Its parser: ``run_args``."""

from __future__ import annotations

import json


def questions(args, cfg) -> list:
    """The crossings asked (``settle`` questions); none asked: the default ones."""
    from ..settle import Crossing, Width, default_questions

    log_K = cfg.task.log_K
    for t in args.threshold or ():
        if not 0 < t <= 1.5 * log_K:
            raise ValueError(
                f"--threshold {t:g}: must lie in (0, 1.5 log K] = (0, {1.5 * log_K:.4g}] nats at K = {cfg.task.K}"
            )
    for hi, lo in args.width or ():
        if not lo < hi:
            raise ValueError(f"--width {hi:g} {lo:g}: LO must be below HI")
    asked = [Crossing(a) for a in args.alpha or ()]
    asked += [Crossing(t / log_K) for t in args.threshold or ()]
    asked += [Width(hi, lo) for hi, lo in args.width or ()]
    return asked or list(default_questions(cfg))


def cmd_settle(args) -> int:
    from ..checkpoints import Run
    from ..settle import settled_summary

    run = Run(args.run)
    run.manifest()  # a missing or broken folder says so before anything else
    asked = questions(args, run.config())
    s = settled_summary(run, asked, allow_scoring=True)
    note = s["settlement"]
    if args.json:
        print(json.dumps({"run": str(run.path), "answers": s["paper_crossings"], "settlement": note}, indent=2))
        return 0
    print(f"run: {args.run}")
    for a in s["paper_crossings"]:
        print(f"  {a['question']:>24}: {a['text']}")
    print(
        f"  {'paid':>24}: {note['full_sets_now']} full scorings now ({note['scorings_now']} scorings, "
        f"{note['groups_scored_now']} groups); {note['full_sets_cached']} full sets were cached"
    )
    if note["missing_weights"]:
        print(
            f"  {'cannot score':>24}: steps {note['missing_weights']} (weights gone): "
            "the crossings that need them stay estimates"
        )
    return 0
