"""What a run, a sweep or a recipe is asked, as one frozen object: ``RunOptions``.

``RunConfig`` says what a run trains; this says how a run, a sweep or a recipe is run. The
command line builds it once (``RunOptions.from_args``) and the functions that train and build
pass it down whole (``sweeps.run_sweep``, ``train_local``, ``train_ray``, the recipes of
``mi_plateau.reproduce``); each reads the fields it needs. Which fields each command reads is
declared once, in ``commands.applies``, which refuses the others. Standard library only: the
command line imports it at start-up."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


def option(flag: str, default: Any = None, help: str = "") -> Any:
    """A field of ``RunOptions``, the command-line flag that sets it and, where every command
    that has the flag means the same by it, the flag's help (``commands.options.add_option``)."""
    return field(default=default, metadata={"flag": flag, "help": help})


@dataclass(frozen=True)
class RunOptions:
    """How to run (not what: that is the runs' configs and the sweep file).

    ``device``: where runs train and analyses run (``devices.resolve``); ``threads``: torch's
    intra-op threads in each process that trains or analyses (``devices.use_threads``; None:
    torch's default in this process, 1 in each parallel one); ``precision``: every new
    run in this ``train.precision`` (None: as configured; a sweep in another precision gets its own
    folder, ``sweeps.sweep_in_precision``); ``jobs``: processes at once (None: one per core);
    ``batch_runs``: runs per process, trained as one stacked model ("auto": ``auto_batch_runs``);
    ``max_steps``: a recipe's step budget replaced; ``only``: the points (run names) to train, None
    for all; ``skip_recorded``: leave out the points a recipe's log records as finished elsewhere;
    ``train``: False to build from what exists, training nothing; ``progress``: progress on
    standard error; ``static``: the static figures (None: where a browser is found); ``root``:
    where run and sweep folders live; ``docs``: where a recipe's tables and log go; ``backend``,
    ``address``: the sweep backend ("local" or "ray") and a Ray cluster's address; ``dry_run``:
    list what would run, run nothing; ``settle``: make every crossing of the recipe's runs exact
    (``settle``) before the tables are built (they show estimates with intervals
    otherwise)."""

    device: str = option(
        "--device",
        "auto",
        help="auto (default: a CUDA GPU when there is one, else the CPU), cpu, cuda or cuda:N; run folders are the "
        "same whichever it is",
    )
    precision: str | None = option(
        "--precision",
        help="train every new run in this precision (train.precision: auto = bf16 where the device has bf16 units, "
        "else fp32; default: as configured); a sweep in another precision than its file's gets its own folder, "
        "<name>_<precision>",
    )
    threads: int | None = option(
        "--threads",
        help="intra-op threads per process (default: torch's, one per core, for a command that runs in this "
        "process; 1 for each of a sweep's or a recipe's parallel processes)",
    )
    jobs: int | None = option("--jobs")
    batch_runs: int | str = option("--batch-runs", 1)
    max_steps: int | None = option("--max-steps")
    only: tuple[str, ...] | None = option("--only")
    skip_recorded: bool = option("--skip-recorded", False)
    train: bool = option("--no-train", True)
    progress: bool = option("--quiet", True)
    static: bool | None = option("--static")
    root: str | Path = option("--root", "checkpoints")
    docs: str | Path = option("--docs", "docs/reproduction")
    backend: str = option("--backend", "local")
    address: str | None = option("--address")
    dry_run: bool = option("--dry-run", False)
    settle: bool = option("--settle", False)

    @classmethod
    def from_args(cls, args) -> RunOptions:
        """The options a parsed command line asks for: each field from the argument of the same
        name where the command has one (``--quiet`` and ``--no-train`` read inverted; ``--only``'s
        comma-separated names as a tuple), else its default."""
        given = vars(args)
        kw = {f.name: given[f.name] for f in fields(cls) if f.name in given}
        if "quiet" in given:
            kw["progress"] = not given["quiet"]
        if "no_train" in given:
            kw["train"] = not given["no_train"]
        if given.get("only") is not None:
            kw["only"] = tuple(n.strip() for n in given["only"].split(",") if n.strip())
        return cls(**kw)

    def processes(self) -> int:
        """Processes (or Ray tasks) at once: ``jobs``, or as many as the cores hold at ``threads``
        threads each (default 1)."""
        if self.jobs is not None:
            return self.jobs
        return max(1, (os.cpu_count() or 1) // (self.threads or 1))

    def given(self) -> list[str]:
        """The fields set to something other than their default, in declaration order."""
        return [f.name for f in fields(self) if getattr(self, f.name) != f.default]


FLAGS = {f.name: f.metadata["flag"] for f in fields(RunOptions)}  # field -> its command-line flag
OLD_KEYWORDS = ("device",)  # the API's keywords that ``options`` replaces, accepted for one release


def with_old_keywords(options: RunOptions | None, old: dict[str, Any], where: str) -> RunOptions:
    """``options`` (None: the defaults) with the older API's keywords in ``old`` folded in, each
    with a DeprecationWarning naming the field to set instead (``device=...`` ->
    ``options=RunOptions(device=...)``); any other keyword is the TypeError Python raises."""
    options = RunOptions() if options is None else options
    for name, value in old.items():
        if name not in OLD_KEYWORDS:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")
        if name in options.given() and getattr(options, name) != value:
            raise TypeError(f"{where}(): {name}={value!r} contradicts options.{name}={getattr(options, name)!r}")
        warnings.warn(
            f"{where}({name}=...) is deprecated: pass options=RunOptions({name}=...)", DeprecationWarning, stacklevel=3
        )
        options = replace(options, **{name: value})
    return options
