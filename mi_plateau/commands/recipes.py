"""The commands that run many trainings: ``sweep`` (a sweep file), ``reproduce`` (the paper's
named recipes), ``bench`` (the benchmarks) and ``selfcheck`` (this machine's device against its
CPU, and its speed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..config import RunOptions
from ..frames import to_markdown
from ..reproduce.registry import recipe
from .applies import refuse_unused, reproduce_kind
from .options import add_device, positive_int


def cmd_bench(args) -> int:
    from ..bench import run_benchmarks
    from ..bench import to_markdown as bench_markdown
    from ..checkpoints import atomic_write_text
    from ..devices import resolve
    from ..summaries import nan_to_none

    if args.out and args.json and Path(args.out).suffix == ".json":
        raise ValueError(
            f"--out {args.out}: --out names the Markdown file; with --json the numbers go beside it (.json)"
        )
    res = run_benchmarks(quick=args.quick, only=args.only, device=str(resolve(args.device)))
    md = bench_markdown(res)
    text = json.dumps(nan_to_none(res), indent=2) + "\n"
    if args.out:  # the Markdown, and with --json the numbers beside it (X.md -> X.json)
        atomic_write_text(Path(args.out), md)
        if args.json:
            atomic_write_text(Path(args.out).with_suffix(".json"), text)
    print(text if args.json else md, end="" if args.json else "\n")
    return 0


def cmd_reproduce(args) -> int:
    """Every recipe the same way (``reproduce.registry``): its dry run (a table and, where there
    is one, a closing line), or its run (its tables, the files it wrote, the line that says static
    figures were skipped)."""
    options = RunOptions.from_args(args)
    refuse_unused(reproduce_kind(args.recipe), options, f"reproduce {args.recipe}")
    if options.static:  # before any training: the figures come last
        from ..outputs import STATIC_NEEDS, chromium

        if chromium() is None:
            raise ValueError(f"--static: no browser found: {STATIC_NEEDS}")
    r = recipe(args.recipe)
    if options.dry_run:
        rows, note = r.dry_run(options)
        print(to_markdown(rows), end="")
        if note:
            print(note)
        return 0
    log = r.run(options)
    for title, rows in log["tables"].items():
        print(f"## {title}\n{to_markdown(rows)}")
    print(f"wrote {', '.join(log['written'])}")
    if log.get("static_note"):
        print(f"mi-plateau reproduce: {log['static_note']}", file=sys.stderr)
    return 0


def cmd_sweep(args) -> int:
    from ..sweeps import load_sweep, plan, run_sweep, status, sweep_in_precision, sweep_table

    options = RunOptions.from_args(args)
    if args.target == "status":
        refuse_unused("sweep", options, "sweep", mode="status")
        if not args.folder:
            raise ValueError("sweep status: give the sweep folder, e.g. checkpoints/<sweep name>")
        print(to_markdown(sweep_table(Path(args.folder))), end="")
        return 0
    if args.folder:
        raise ValueError(f"sweep {args.target}: unexpected second argument {args.folder!r}")
    refuse_unused("sweep", options, "sweep")
    sweep = sweep_in_precision(load_sweep(args.target), options.precision)
    if Path(options.root).exists() and not Path(options.root).is_dir():
        raise ValueError(f"--root {options.root}: is a file, not a folder for the sweep's runs")
    if options.dry_run:
        from ..devices import resolve
        from ..sweeps.runner import auto_batch_runs
        from ..train.batched import group_batches

        runs = plan(sweep, options.root)
        for (path, _), p in zip(runs, sweep.points):
            print(f"{path}  {', '.join(f'{k}={v}' for k, v in p.settings.items()) or '(base)'}  {status(path)}")
        todo = [(p, c) for p, c in runs if status(p) != "finished"]
        m = auto_batch_runs(options.device) if options.batch_runs == "auto" else options.batch_runs
        print(f"{len(runs)} runs; {len(runs) - len(todo)} finished (training on {resolve(options.device)})")
        if m > 1:
            print(f"with --batch-runs {m}: {len(group_batches(todo, m))} processes")
        return 0
    table = run_sweep(sweep, options)
    print(to_markdown(table), end="")
    print(f"{len(table)} runs in {table.attrs['wall_s']:.0f} s -> {sweep.folder(options.root)}/table.csv")
    failed = table.attrs.get("failed") or {}
    if failed:  # a sweep with a failed run must not look like a finished one to a script
        print(
            f"mi-plateau sweep: {len(failed)} of {len(table)} runs failed (rerun the sweep to resume them): "
            + "; ".join(f"{name}: {err}" for name, err in failed.items()),
            file=sys.stderr,
        )
        return 1
    return 0


def add_selfcheck(sub) -> None:
    s = sub.add_parser(
        "selfcheck",
        help="train the demo on this machine's device and on the CPU, compare them, a batched stack and an analysis "
        "pass; print steps/s",
    )
    add_device(s)
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
