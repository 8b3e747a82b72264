"""The command line's building blocks: argument types that answer bad input in one line, and
the options several commands share (``--device``, ``--step``, ``--static``, ``--ablation``)."""

from __future__ import annotations

import argparse
import math
from dataclasses import Field, fields
from typing import Any

from ..config import NON_NEGATIVE, POSITIVE, PRECISIONS, SETTING, Bounds, RunOptions, kind
from ..interventions import head_ablations


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line on standard error (``PROG: error: ...``, exit 2), as every
    other error of the command line is; ``--help`` still prints the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def num_arg(typ):
    """argparse type that reports non-numeric input in our own words."""

    def parse(text: str):
        try:
            return typ(text)
        except ValueError:
            kind = "an integer" if typ is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None

    parse.__name__ = typ.__name__
    return parse


def positive_int(text: str) -> int:
    v = num_arg(int)(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


MAX_DRAWS = 1_000_000  # replays of an estimator: far past where its quantiles settle, and within memory


def draws_int(text: str) -> int:
    """--draws: a positive integer up to ``MAX_DRAWS`` (each replay holds its own crossing)."""
    v = positive_int(text)
    if v > MAX_DRAWS:
        raise argparse.ArgumentTypeError(f"{text!r}: at most {MAX_DRAWS:,} replays")
    return v


def nonnegative_int(text: str) -> int:
    v = num_arg(int)(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 0")
    return v


def positive_float(text: str) -> float:
    v = num_arg(float)(text)
    if not 0 < v < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return v


def fraction(text: str) -> float:
    v = num_arg(float)(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must lie strictly between 0 and 1 (a fraction of log K)")
    return v


def alpha_arg(text: str) -> float:
    """--alpha: a fraction of log K in (0, 1.5]."""
    v = num_arg(float)(text)
    if not 0 < v <= 1.5:
        raise argparse.ArgumentTypeError(f"{text!r}: a threshold must lie in (0, 1.5] (a fraction of log K)")
    return v


def width_pair(text: str) -> tuple[float, float]:
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give HI,LO, two fractions of log K (e.g. 0.95,0.05)")
    hi, lo = (fraction(x) for x in parts)
    if not lo < hi:
        raise argparse.ArgumentTypeError(f"{text!r}: LO must be below HI")
    return hi, lo


def batch_runs(text: str) -> int | str:
    """--batch-runs: a positive integer, or auto (batched processes on a GPU, one run per process on a CPU)."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)


def add_option(parser: argparse.ArgumentParser, name: str, **kw) -> None:
    """The flag of the ``RunOptions`` field ``name``, with the field's default and help (``kw``:
    argparse's other arguments, e.g. ``choices``)."""
    f = next(f for f in fields(RunOptions) if f.name == name)
    parser.add_argument(f.metadata["flag"], default=f.default, help=f.metadata["help"], **kw)


def add_device(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "device", metavar="DEVICE")


def add_threads(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "threads", type=positive_int, metavar="N")


def add_precision(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "precision", choices=PRECISIONS)


def setting_arg(f: Field):
    """The argparse type of a config field's flag: a number within the field's bounds, or, for a
    tuple field, its values comma-separated (at least one), each within them."""
    typ, bounds = kind(f), f.metadata[SETTING].bounds
    num = int if typ.startswith(("int", "tuple[int")) else float
    plain = {int: {POSITIVE: positive_int, NON_NEGATIVE: nonnegative_int}, float: {Bounds(gt=0): positive_float}}
    one = plain[num].get(bounds)
    if one is None:

        def one(text: str):
            v = num_arg(num)(text)
            if bounds is not None and not bounds.holds(v):
                raise argparse.ArgumentTypeError(f"{text!r}: {bounds.words(num is int)}")
            return v

    if not typ.startswith("tuple["):
        return one

    def values(text: str) -> tuple:
        parts = [x for x in text.split(",") if x.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"{text!r}: give at least one value, comma-separated (e.g. 1,3,5)")
        return tuple(one(x.strip()) for x in parts)

    return values


def add_settings(parser: argparse.ArgumentParser, section: type) -> None:
    """The flags of the config ``section``'s fields that declare one (``setting(flag=...)``): each
    with its field's help and default, typed and bounded as the field (``setting_arg``); dest the
    field's name, None when not given (``settings_given``)."""
    for f in fields(section):
        s = f.metadata[SETTING]
        if s.flag:
            shown = ",".join(map(str, f.default)) if isinstance(f.default, tuple) else f.default
            parser.add_argument(
                s.flag, dest=f.name, type=setting_arg(f), default=None, help=f"{s.help} (default {shown})"
            )


def settings_given(section: type, args) -> dict[str, Any]:
    """The fields of ``section`` the command line set: every field with an argument of its name
    that is not None (``add_settings``' flags, ``--ablation``'s head_ablation)."""
    given = vars(args)
    return {f.name: given[f.name] for f in fields(section) if given.get(f.name) is not None}


def add_step(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--step", type=num_arg(int), default=None, help="checkpoint nearest this step (default: the last)"
    )


def add_head_ablation(parser: argparse.ArgumentParser) -> None:
    """``--ablation NAME``, one of the registered head ablations (``interventions``; its help
    says what each does), and ``--mean``, short for ``--ablation mean``: both set
    ``head_ablation``."""
    found = head_ablations()
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--ablation",
        dest="head_ablation",
        choices=list(found),
        default="zero",
        help="how each head is ablated: "
        + "; ".join(f"{name}, the head's {iv.legend}" for name, iv in found.items())
        + " (default zero)",
    )
    g.add_argument("--mean", dest="head_ablation", action="store_const", const="mean", help="short for --ablation mean")


def add_static(p, help: str) -> None:
    # store_const: None (not given) keeps "where a browser is found" apart from an explicit ask
    p.add_argument("--static", action="store_const", const=True, default=None, help=help)
