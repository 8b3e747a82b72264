"""The commands of ``mi-plateau``: each takes the parsed arguments (``cli.build_parser``), calls
the Python API and prints; ``dispatch`` picks one by name.

``train`` (train, train-batch, summary), ``analysis`` (analyze, inspect, ablate, report),
``recipes`` (sweep, reproduce, bench); ``text`` holds what several of them print. Only the
standard library and light modules of ours are imported here: torch, transformer_lens, ray and
plotly load inside the commands that use them, so ``mi-plateau --help`` answers at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from .analysis import cmd_ablate, cmd_analyze, cmd_inspect, cmd_report
from .recipes import cmd_bench, cmd_reproduce, cmd_sweep
from .train import cmd_summary, cmd_train, cmd_train_batch

COMMANDS = {
    "train": cmd_train,
    "train-batch": cmd_train_batch,
    "summary": cmd_summary,
    "analyze": cmd_analyze,
    "inspect": cmd_inspect,
    "ablate": cmd_ablate,
    "report": cmd_report,
    "bench": cmd_bench,
    "reproduce": cmd_reproduce,
    "sweep": cmd_sweep,
}


def dispatch(args, argv: Sequence[str] = ()) -> int:
    """Run the command ``args.command`` names; returns its exit status. ``argv``, the command line
    without the program name, is what ``train`` records in the run folder."""
    if args.command == "train":
        return cmd_train(args, argv)
    return COMMANDS[args.command](args)
