"""The commands of ``mi-plateau``: each takes the parsed arguments (``cli.build_parser``), calls
the Python API and prints; ``dispatch`` picks one by name.

``train`` (train, train-batch, summary), ``analysis`` (analyze, inspect, ablate, report),
``recipes`` (sweep, reproduce, bench; which run options sweep and reproduce read, and the one
check that refuses the others, in ``applies``), ``tools`` (the study commands: linear-control,
sampled-pairs, llc, noise-split, estimator-spread; their parsers in ``tool_args``); ``text``
holds what several of them print. Only the
standard library and light modules of ours are imported here: torch, transformer_lens, ray and
plotly load inside the commands that use them, so ``mi-plateau --help`` answers at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from .analysis import cmd_ablate, cmd_analyze, cmd_inspect, cmd_report
from .recipes import cmd_bench, cmd_reproduce, cmd_selfcheck, cmd_sweep
from .settle import cmd_settle
from .tools import cmd_estimator_spread, cmd_linear_control, cmd_llc, cmd_noise_split, cmd_sampled_pairs
from .train import cmd_summary, cmd_train, cmd_train_batch

COMMANDS = {
    "train": cmd_train,
    "train-batch": cmd_train_batch,
    "summary": cmd_summary,
    "settle": cmd_settle,
    "selfcheck": cmd_selfcheck,
    "analyze": cmd_analyze,
    "inspect": cmd_inspect,
    "ablate": cmd_ablate,
    "report": cmd_report,
    "bench": cmd_bench,
    "reproduce": cmd_reproduce,
    "sweep": cmd_sweep,
    "linear-control": cmd_linear_control,
    "sampled-pairs": cmd_sampled_pairs,
    "llc": cmd_llc,
    "noise-split": cmd_noise_split,
    "estimator-spread": cmd_estimator_spread,
}
# the commands that record their own command line (in the run folder, in the JSON they write)
RECORD_ARGV = frozenset({"train", "linear-control", "sampled-pairs", "llc", "noise-split", "estimator-spread"})


def dispatch(args, argv: Sequence[str] = ()) -> int:
    """Run the command ``args.command`` names; returns its exit status. ``argv``, the command line
    without the program name, is what the commands of ``RECORD_ARGV`` record as their origin."""
    if args.command in RECORD_ARGV:
        return COMMANDS[args.command](args, argv)
    return COMMANDS[args.command](args)
