"""``mi-plateau settle RUN`` (and ``selfcheck``, this machine's own check, at the end): exact
full-set crossings, on request. Every crossing a summary
shows is the live estimate's, with its interval (``crossings``); ``settle`` scores the checkpoints
inside the intervals of the crossings asked (default: tau at eval.alpha and Table 5's alphas, the
transition width) on the full evaluation set until each is exact, caches what it scored in the
run folder (``settled.json``, per step and weights checksum) and says how many full scorings it
paid. A later summary shows the settled values, labelled exact."""

from __future__ import annotations

import argparse
import json

from .options import num_arg, positive_int


def alpha_arg(text: str) -> float:
    """--alpha: a fraction of log K in (0, 1.5]."""
    v = num_arg(float)(text)
    if not 0 < v <= 1.5:
        raise argparse.ArgumentTypeError(f"{text!r}: a threshold must lie in (0, 1.5] (a fraction of log K)")
    return v


def add_settle(sub) -> None:
    s = sub.add_parser(
        "settle",
        help="make crossings exact: score the checkpoints inside their intervals on the full evaluation set",
    )
    s.add_argument("run")
    s.add_argument(
        "--alpha",
        type=alpha_arg,
        action="append",
        default=None,
        metavar="A",
        help="settle tau at A log K (repeatable; A in (0, 1.5])",
    )
    s.add_argument(
        "--threshold",
        type=num_arg(float),
        action="append",
        default=None,
        metavar="T",
        help="settle the first checkpoint with L_seq below T nats (repeatable; T in (0, 1.5 log K])",
    )
    s.add_argument(
        "--width",
        type=alpha_arg,
        nargs=2,
        action="append",
        default=None,
        metavar=("HI", "LO"),
        help="settle the transition width between HI and LO log K (repeatable), e.g. --width 0.9 0.1",
    )
    s.add_argument("--json", action="store_true", help="print the answers and the scorings as JSON")


def questions(args, cfg) -> list:
    """The crossings asked (``checkpoints.settle`` questions); none asked: the default ones."""
    from ..checkpoints.settle import Crossing, Width, default_questions

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
    from ..checkpoints.answers import settled_summary

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


def add_selfcheck(sub) -> None:
    s = sub.add_parser(
        "selfcheck",
        help="train the demo on this machine's device and on the CPU, compare them, a batched stack and an analysis "
        "pass; print steps/s",
    )
    s.add_argument("--device", default="auto", metavar="DEVICE", help="auto (default: a CUDA GPU when there is one), "
                   "cpu, cuda or cuda:N")  # fmt: skip
    s.add_argument("--steps", type=positive_int, default=200, help="training steps of each demo run (default 200)")
    s.add_argument("--runs", type=positive_int, default=4, help="members of the batched stack (default 4)")
    s.add_argument("--keep", default=None, metavar="DIR", help="train in DIR and keep it (default: a temporary folder)")


def cmd_selfcheck(args) -> int:
    from ..selfcheck import selfcheck

    res = selfcheck(args.device, args.steps, args.runs, args.keep)
    print(f"device {res['device']}; train.precision {res['precision']}; runs in {res['folder']}")
    for c in res["checks"]:
        print(c.line())
    return 0 if all(c.ok for c in res["checks"]) else 1
