"""Command line: ``mi-plateau <command>``. Builds the parser and hands the parsed arguments to
``commands``, which calls the Python API and prints.

Only the standard library, our config module and the commands' own (light) modules are imported
at start-up, so ``--help`` and argument errors answer at once; torch, transformer_lens, ray and
plotly load inside the commands that use them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from . import commands
from .commands.options import (
    OneLineParser,
    add_device,
    add_head_ablation,
    add_precision,
    add_settings,
    add_static,
    add_step,
    add_threads,
    batch_runs,
    num_arg,
    positive_int,
)
from .commands.recipes import add_selfcheck
from .commands.run_args import add_settle, add_summary
from .commands.tool_args import TOOL_SUBCOMMANDS
from .config import PRESETS, SECTIONS, AnalysisConfig, ConfigError, settings
from .config import kind as field_kind
from .reproduce.registry import RECIPES, help_text

SEED_FLAG = ("--seed", "seed", int, "sets data, init and batch-order seeds together")  # several fields at once


def train_flags(sections: Mapping[str, type] = SECTIONS) -> list[tuple[str, str, type, str]]:
    """The flags of ``train`` that set config values, as (flag, override key, type, help): every
    field whose metadata names a ``flag``, with the field's help, in the config's order; --seed
    (several fields) after the task's."""
    out = []
    for section, kls in sections.items():
        for key, f, s in settings({section: kls}):
            if s.flag:
                out.append((s.flag, s.alias or key, {"int": int, "float": float}.get(field_kind(f), str), s.help))
        if section == "task":
            out.append(SEED_FLAG)
    return out


# flags of `train` that map onto config settings (flag, override key, type, help)
TRAIN_FLAGS = train_flags()

# the recipes of mi_plateau.reproduce and what each rebuilds, from its registry (light: the
# recipes' modules load when one runs)
RECIPE_NAMES = tuple(RECIPES)
RECIPE_HELP = help_text().replace("%", "%%")  # argparse formats help with %


def add_train(sub) -> None:
    t = sub.add_parser("train", help="train a run with dense checkpoints")
    t.add_argument("--preset", choices=PRESETS, default=None, help="starting configuration (default: demo)")
    t.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="start from a config JSON file ('-': read it from standard input) instead of a preset",
    )
    for flag, dest, typ, helptext in TRAIN_FLAGS:
        t.add_argument(flag, dest=dest, type=num_arg(typ) if typ is not str else str, default=None, help=helptext)
    # the command reads these destinations as config overrides
    t.set_defaults(setting_flags=tuple(dest for _, dest, _, _ in TRAIN_FLAGS))
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any setting, e.g. train.warmup_steps=200 (repeatable)",
    )
    t.add_argument("--out", default=None, help="run folder (default: checkpoints/<name>)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    add_device(t)
    add_threads(t)


def add_train_batch(sub) -> None:
    tb = sub.add_parser(
        "train-batch",
        help="train several runs in one process as one stacked model (same model shape, batch size, len_z)",
    )
    tb.add_argument(
        "runs",
        metavar="RUNS_JSON",
        help='a JSON list of {"out": RUN_FOLDER, "config": CONFIG or null} (\'-\': standard input)',
    )
    tb.add_argument("--resume", action="store_true", help="continue runs that exist from their last checkpoints")
    tb.add_argument("--quiet", action="store_true", help="no progress bar")
    add_precision(tb)
    add_device(tb)
    add_threads(tb)


def add_analyze(sub) -> None:
    a = sub.add_parser("analyze", help="run the analysis passes; write Tables 6, 9 and Figure 3")
    a.add_argument("runs", nargs="+")
    a.add_argument("--out", default="analyses", help="output root (default: analyses/)")
    add_settings(a, AnalysisConfig)  # the analysis section's flags (--shifts, --max-checkpoints)
    add_head_ablation(a)
    a.add_argument("--json", action="store_true", help="print the written paths and headline numbers as JSON")
    a.add_argument("--quiet", action="store_true")
    add_device(a)
    add_threads(a)


def add_inspect(sub) -> None:
    i = sub.add_parser("inspect", help="per-head scores at one checkpoint")
    i.add_argument("run")
    add_step(i)
    i.add_argument("--head", default=None, help="one head, e.g. L0H3: also show its attention pattern")
    i.add_argument("--json", action="store_true")
    add_device(i)
    add_threads(i)


def add_ablate(sub) -> None:
    b = sub.add_parser("ablate", help="head-ablation report at one checkpoint")
    b.add_argument("run")
    add_step(b)
    add_head_ablation(b)
    b.add_argument("--json", action="store_true")
    add_device(b)
    add_threads(b)


def add_report(sub) -> None:
    r = sub.add_parser("report", help="one self-contained interactive HTML report")
    r.add_argument("runs", nargs="+")
    r.add_argument("--out", default=None, help="HTML file (default: analyses/<name>/report.html)")
    r.add_argument(
        "--plotly",
        choices=["inline", "cdn", "directory"],
        default="inline",
        help="inline (default: one file that opens offline), cdn (small, needs the network) or directory "
        "(links plotly.min.js written beside the page)",
    )
    r.add_argument(
        "--llc",
        action="append",
        default=[],
        metavar="FILE",
        help="an LLC curve recorded by mi-plateau llc (JSON), drawn beside its run's loss; repeatable",
    )
    add_static(
        r,
        "also export every figure of the page as a static SVG (a Chromium is needed: without one, "
        "a one-line error before any work) into <report>_figures/ beside the page",
    )
    r.add_argument("--quiet", action="store_true")
    add_device(r)
    add_threads(r)


def add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="benchmarks against plain PyTorch / loop references")
    bench.add_argument("--quick", action="store_true")
    bench.add_argument("--json", action="store_true")
    bench.add_argument(
        "--only",
        choices=["train", "precision", "passes", "overhead", "sweep", "eval", "price"],
        default=None,
        help="run one section alone (precision: the default step, in train.precision auto, against fp32 and "
        "plain fp32 eager; sweep: the batched trainer against single runs; eval: the "
        "evaluation's share of training at K = 10, 20, 36; price: the dry run's prices against runs it trains)",
    )
    bench.add_argument(
        "--out", default=None, help="also write the Markdown table here (with --json, the numbers beside it: X.json)"
    )
    add_device(bench)


def add_sweep(sub) -> None:
    sw = sub.add_parser("sweep", help="train a sweep file's runs (resumable); `sweep status FOLDER` prints its table")
    sw.add_argument("target", help="a sweep file (TOML), or the word status")
    sw.add_argument("folder", nargs="?", help="with status: the sweep folder (checkpoints/<name>)")
    sw.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help="processes at once (default: the cores / --threads; --threads each, default 1)",
    )
    sw.add_argument(
        "--batch-runs",
        type=batch_runs,
        default=1,
        metavar="M",
        help="train up to M runs of the same shapes per process as one stacked model (default 1: one run per "
        "process; auto: as many as fit on a GPU, one on a CPU)",
    )
    sw.add_argument("--backend", choices=["local", "ray"], default="local", help="local process pool (default) or Ray")
    sw.add_argument(
        "--address", default=None, help="with --backend ray: the cluster's address (default: a local Ray instance)"
    )
    sw.add_argument("--root", default="checkpoints", help="where sweep folders live (default: checkpoints/)")
    sw.add_argument("--dry-run", action="store_true", help="validate the file and list the runs, train nothing")
    sw.add_argument("--quiet", action="store_true")
    add_precision(sw)
    add_device(sw)
    add_threads(sw)


def add_reproduce(sub) -> None:
    rep = sub.add_parser("reproduce", help="named recipes that rebuild the paper's artifacts")
    rep.add_argument("recipe", choices=RECIPE_NAMES, help=RECIPE_HELP)
    rep.add_argument(
        "--dry-run", action="store_true", help="list the runs, whether they are done and what they should cost here"
    )
    rep.add_argument(
        "--no-train",
        action="store_true",
        help="only analyse the runs that exist (unfinished ones up to their last checkpoint; hessian: finished)",
    )
    rep.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help="train this many runs at once, --threads each, default 1 (default: the cores / --threads)",
    )
    rep.add_argument(
        "--batch-runs",
        type=batch_runs,
        default=1,
        metavar="M",
        help="sweep recipes: up to M runs per process, batched (auto: batched on a GPU, one per process on a CPU)",
    )
    rep.add_argument(
        "--only",
        default=None,
        metavar="RUN[,RUN...]",
        help="sweep recipes: train only these points (run names); hessian: train and pass over only these runs",
    )
    rep.add_argument(
        "--settle",
        action="store_true",
        help="sweep recipes: settle every run's crossings exactly (mi-plateau settle) before building the tables; "
        "without it they show the live estimates with their intervals",
    )
    rep.add_argument(
        "--skip-recorded",
        action="store_true",
        help="sweep recipes: do not train the runs the recipe's log in "
        "docs/reproduction/ records as finished on another machine (their rows still go into the tables)",
    )
    rep.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="sweep recipes: a step budget of N instead of the recipe's (runs that do not escape read as "
        "'no escape by N steps'; a larger N later continues them)",
    )
    rep.add_argument(
        "--root", default="checkpoints", help="where the recipe's run folders live (default: checkpoints/)"
    )
    rep.add_argument(
        "--docs",
        default="docs/reproduction",
        help="where tables, figures and the recipe's log go (default: docs/reproduction/)",
    )
    add_static(
        rep,
        "export the static figures (.svg) or fail; default: export them where a Chromium is found, "
        "else write every table and say in one line that the figures need one",
    )
    rep.add_argument("--quiet", action="store_true")
    add_precision(rep)
    add_device(rep)
    add_threads(rep)


# one function per subcommand, in the order --help lists them
SUBCOMMANDS = (
    add_train,
    add_train_batch,
    add_summary,
    add_settle,
    add_analyze,
    add_inspect,
    add_ablate,
    add_report,
    add_bench,
    add_selfcheck,
    add_sweep,
    add_reproduce,
    *TOOL_SUBCOMMANDS,
)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="mi-plateau",
        description="Train and dissect transformers on the K-fold ambiguous lookup task "
        "of 'Marginals Before Conditionals' (arXiv 2603.10074).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from .checkpoints import RunError  # after parsing: checkpoints loads numpy, --help and bad flags need none

    try:
        return commands.dispatch(args, argv)
    except (ConfigError, RunError, ValueError) as e:
        print(f"mi-plateau {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): nothing left to say to it
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 0
    except OSError as e:  # unwritable --out, full disk, ...
        print(f"mi-plateau {args.command}: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; resume with --resume", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
