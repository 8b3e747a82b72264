"""The parsers of the commands that read one finished or running run: ``summary`` (what it says at a
glance, and the checks and replays it runs) and ``settle`` (exact crossings on request)."""

from __future__ import annotations

from .options import alpha_arg, draws_int, fraction, num_arg, positive_int, width_pair


def add_summary(sub) -> None:
    s = sub.add_parser("summary", help="plateau height, tau and convergence of a run")
    s.add_argument("run")
    s.add_argument("--json", action="store_true")
    s.add_argument("--all", action="store_true", help="every key after the short block (--json always has them)")
    s.add_argument(
        "--sampled-tau",
        action="store_true",
        help="also replay the original's tau estimator (L_seq on 32 random "
        "groups, one example each, every 50 steps) on the run's checkpoints: the spread it adds to tau",
    )
    s.add_argument(
        "--sampled-width",
        action="store_true",
        help="also replay that estimator by the transition width's rule "
        "(t_end: its first estimate below 0.05 log K; t_start: its last above 0.95 log K before): the width the "
        "original would have read on this run",
    )
    s.add_argument(
        "--draws",
        type=draws_int,
        default=None,
        help="with --sampled-tau or --sampled-width: replays of the estimator (default 1000)",
    )
    s.add_argument(
        "--n-sample",
        type=positive_int,
        default=None,
        help="with --sampled-tau or --sampled-width: groups per estimate (default 32)",
    )
    s.add_argument(
        "--every",
        type=positive_int,
        default=None,
        help="with --sampled-tau or --sampled-width: steps between estimates (default 50)",
    )
    s.add_argument(
        "--tau-at",
        type=fraction,
        action="append",
        default=None,
        metavar="ALPHA",
        help="also answer tau at this fraction of log K (repeatable): the estimate with its interval, exact where "
        "settled (mi-plateau settle --alpha makes it exact)",
    )
    s.add_argument(
        "--width-at",
        type=width_pair,
        action="append",
        default=None,
        metavar="HI,LO",
        help="also answer the transition width at these fractions of log K (repeatable), e.g. 0.9,0.05: estimates "
        "with intervals until settled (mi-plateau settle --width)",
    )
    s.add_argument(
        "--exact-check",
        action="store_true",
        help="score every checkpoint up to the last crossing on the full evaluation set and compare each settled "
        "tau, t_start, t_end and Table 5 alpha with the all-exact ones (--json writes the whole comparison)",
    )
    s.add_argument(
        "--spacing-check",
        type=positive_int,
        default=None,
        metavar="MAX",
        help="replay the widening checkpoint spacing (train.ckpt_every_max = MAX) on this densely checkpointed "
        "run's records: are the taus and widths from the checkpoints it keeps the ones from all of them?",
    )


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
