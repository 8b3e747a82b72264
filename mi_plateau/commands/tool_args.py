"""The parsers of the study commands (``commands.tools``): each runs one study beside the
pipeline's passes and writes one JSON artifact. Counts and settings are checked here, at parse
time, so that bad input answers before anything is imported or read."""

from __future__ import annotations

from ..config import SGLDSettings
from .options import add_settings, draws_int, nonnegative_int, positive_float, positive_int

# Defaults are None: the study's own function supplies them, so each lives in one place; the help
# quotes them (tests/integration/test_tool_commands.py checks the quotes against the functions).


def add_out(p, required: bool = False) -> None:
    if required:
        p.add_argument("--out", required=True, metavar="FILE", help="the JSON artifact to write")
    else:
        p.add_argument("--out", default=None, metavar="FILE", help="write the JSON here (default: standard output)")


def add_linear_control(sub) -> None:
    p = sub.add_parser(
        "linear-control",
        help="Table 12's linear-network control at each K",
        description="Train a two-layer linear network on the task at each K and write Table 12's row for it: "
        "does it leave the log K plateau? (docs/controls.md)",
    )
    add_out(p, required=True)
    p.add_argument(
        "--K",
        dest="Ks",
        metavar="K",
        type=positive_int,
        nargs="+",
        default=None,
        help="targets per base string, 2 to 36 (default: 10 20 36, the paper's)",
    )
    p.add_argument("--steps", type=positive_int, default=None, help="SGD steps (default 30000)")
    p.add_argument(
        "--eval-every",
        type=positive_int,
        default=None,
        help="steps between evaluations (default 500; the last step is always evaluated)",
    )


def add_sampled_pairs(sub) -> None:
    p = sub.add_parser(
        "sampled-pairs",
        help="a condition's seeds paired under the original's 32-example width estimator",
        description="A condition's seeds paired under the original's 32-example width estimator: the mean, std "
        "and CV of their widths as it would have read them (docs/analyses.md)",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_OR_JSON",
        help="two or more seeds: run folders (replayed here), or JSON files from "
        "`mi-plateau summary RUN --sampled-width --json`",
    )
    p.add_argument("--draws", type=draws_int, default=None, help="replays per run folder (default 1000)")
    p.add_argument(
        "--n-sample",
        type=positive_int,
        default=None,
        help="groups per estimate, one example each (default 32)",
    )
    p.add_argument(
        "--every",
        type=positive_int,
        default=None,
        help="steps between estimates (default 50)",
    )
    p.add_argument("--seed", type=nonnegative_int, default=None, help="the draws' seed (default 0)")
    add_out(p)


def add_llc(sub) -> None:
    p = sub.add_parser(
        "llc",
        help="the local learning coefficient over a run's checkpoints (devinterp; the llc extra)",
        description="The local learning coefficient at about N checkpoints over [0, UPTO tau], estimated with "
        'devinterp\'s SGLD (needs the llc extra: pip install -e ".[llc]"; docs/mechanisms.md)',
    )
    p.add_argument("run")
    add_out(p, required=True)
    p.add_argument("--n", type=positive_int, default=None, help="checkpoints, spread over [0, UPTO tau] (default 10)")
    p.add_argument(
        "--upto", type=positive_float, default=None, help="the last checkpoint, in units of tau (default 1.2)"
    )
    add_settings(p, SGLDSettings)  # the sampler's flags (--lr, --localization), from its fields
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="instead: sweep eps at a fixed eps * gamma at a plateau and a converged checkpoint",
    )


def add_noise_split(sub) -> None:
    p = sub.add_parser(
        "noise-split",
        help="label-noise runs' L_seq on the examples the noise left alone and on the flipped ones",
        description="Fixed-label-noise runs' clean L_seq split into the examples the noise left alone and the "
        "flipped ones, with the kept examples' tau and width (docs/analyses.md)",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_OR_JSON",
        help="run folders (scored here), or JSON files this command wrote (their runs kept as scored)",
    )
    p.add_argument("--every", type=positive_int, default=None, help="score every N-th checkpoint (default 1: all)")
    add_out(p)


def add_estimator_spread(sub) -> None:
    p = sub.add_parser(
        "estimator-spread",
        help="L_seq's spread over the evaluation set per checkpoint: what sizes the live subset",
        description="How L_seq spreads over the evaluation set, checkpoint by checkpoint: what decides how many "
        "groups the live evaluation needs (docs/performance.md)",
    )
    p.add_argument("run")
    p.add_argument("--every", type=positive_int, default=None, help="every N-th checkpoint (default 1: all)")
    p.add_argument("--subset", type=positive_int, default=None, help="groups in the live subset (default 20)")
    p.add_argument(
        "--rows", type=positive_int, default=None, help="rows of each group in the two-stage variant (default 10)"
    )
    add_out(p)


# in the order --help lists them, after the pipeline's commands
TOOL_SUBCOMMANDS = (add_linear_control, add_sampled_pairs, add_llc, add_noise_split, add_estimator_spread)
