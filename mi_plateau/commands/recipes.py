"""The commands that run many trainings: ``sweep`` (a sweep file), ``reproduce`` (the paper's
named recipes) and ``bench`` (the benchmarks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..config import RunOptions
from ..tabular import cell, to_markdown
from .applies import SWEEP_RECIPES_KIND, refuse_unused
from .text import lead

DOCS = "docs/reproduction"  # --docs' default: the committed tables


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


def reproduce_kind(recipe: str) -> str:
    """The entry of ``applies.USES`` that declares what ``reproduce RECIPE`` reads."""
    from ..reproduce import SWEEP_RECIPES

    return SWEEP_RECIPES_KIND if recipe in SWEEP_RECIPES else f"reproduce {recipe}"


def cmd_reproduce(args) -> int:
    options = RunOptions.from_args(args)
    refuse_unused(reproduce_kind(args.recipe), options, f"reproduce {args.recipe}")
    if options.static:  # before any training: the figures come last
        from ..tabular import STATIC_NEEDS, chromium

        if chromium() is None:
            raise ValueError(f"--static: no browser found: {STATIC_NEEDS}")
    command = {
        "core": reproduce_core,
        "hessian": reproduce_hessian,
        "figure3": reproduce_figure3,
        "noise_estimator": reproduce_noise_estimator,
        "controls": reproduce_controls,
        "scorecard": reproduce_scorecard,
    }.get(args.recipe, reproduce_sweep)
    return command(args.recipe, options)


def reproduce_core(recipe: str, options: RunOptions) -> int:
    """``reproduce core``: its dry run (the runs and whether they are done), or its runs trained
    and analysed and its tables and figures written."""
    from ..reproduce import plan, run_recipe
    from ..sweeps import status

    if options.dry_run:
        for p, c in plan(recipe, options.root):
            print(f"{p}  preset={c.preset} K={c.task.K} seed={c.task.data_seed}  {status(p)}")
        return 0
    log = run_recipe(recipe, options)
    for name, s in log["summaries"].items():
        ro, fam = log["routing"][name], s["definitions"]
        print(
            f"{name}: tau paper (L_seq) {fam['paper']['tau']} steps, first token (Lc) {fam['first_token']['tau']} "
            f"steps; plateau/log K paper {cell(fam['paper']['plateau_ratio'], '.3f')}, "
            f"first token {cell(fam['first_token']['plateau_ratio'], '.3f')}; "
            f"routing head {ro.get('routing_head')}, "
            f"lead (tau - t_r)/tau attention {lead(ro, 'routing_lead_sel_attn')}, "
            f"causal {lead(ro, 'routing_lead_swap_contrib')}"
        )
    print(f"wrote {', '.join(log['written'])}")
    static_note(log)
    return 0


def static_note(log: dict) -> None:
    """The one line that says a recipe's static figures were skipped (no browser), on stderr."""
    if log.get("static_note"):
        print(f"mi-plateau reproduce: {log['static_note']}", file=sys.stderr)


def print_tables(log: dict) -> int:
    """A recipe's tables as Markdown, then the files it wrote."""
    for title, rows in log["tables"].items():
        print(f"## {title}\n{to_markdown(rows)}")
    print(f"wrote {', '.join(log['written'])}")
    static_note(log)
    return 0


def reproduce_hessian(recipe: str, options: RunOptions) -> int:
    """``reproduce hessian``: its dry run (the runs, whether they are here and whether the log
    holds their rows), or the runs trained, the pass run and Table 10 written."""
    from ..reproduce.hessian import dry_run_rows, run_hessian_recipe

    if options.dry_run:
        print(to_markdown(dry_run_rows(options)))
        return 0
    return print_tables(run_hessian_recipe(options))


def reproduce_figure3(recipe: str, options: RunOptions) -> int:
    """``reproduce figure3``: Figure 3 and the lead over the K sweep's runs here and in its log
    (nothing is trained); its dry run lists the runs it would read."""
    from ..reproduce.figure3 import run_figure3_recipe, sweep_runs
    from ..sweeps import status

    if options.dry_run:
        print(to_markdown([{"run": str(p), "status": status(p)} for p in sweep_runs(Path(options.root))]), end="")
        return 0
    o = options
    return print_tables(run_figure3_recipe(o.root, o.docs, progress=o.progress, device=o.device, static=o.static))


def reproduce_noise_estimator(recipe: str, options: RunOptions) -> int:
    """``reproduce noise_estimator``: Figure 2b's p = 0.2 crossing under the original's estimator,
    over the noise sweep's runs here and in its log (nothing is trained); its dry run lists the runs."""
    from ..reproduce.noise_estimator import run_noise_estimator_recipe, sweep_runs
    from ..sweeps import status

    if options.dry_run:
        print(to_markdown([{"run": str(p), "status": status(p)} for p in sweep_runs(Path(options.root))]), end="")
        return 0
    o = options
    return print_tables(run_noise_estimator_recipe(o.root, o.docs, progress=o.progress, static=o.static))


def reproduce_controls(recipe: str, options: RunOptions) -> int:
    """``reproduce controls``: Table 12 from the committed tables under ``--docs`` (nothing is
    trained); its dry run lists the artifacts it reads and whether each is there."""
    from ..reproduce.controls import SOURCES, write_controls

    if options.dry_run:
        return print_sources(SOURCES, Path(options.docs))
    rows, paths = write_controls(options.docs)
    print(to_markdown(rows))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def reproduce_scorecard(recipe: str, options: RunOptions) -> int:
    """``reproduce scorecard``: docs/scorecard.md from the committed tables under ``--docs``
    (nothing is trained); its dry run lists the artifacts it reads and whether each is there."""
    from ..reproduce.scorecard import SOURCES, write_scorecard

    if options.dry_run:
        return print_sources(SOURCES, Path(options.docs))
    rows, paths = write_scorecard(options.docs)
    print(to_markdown([{k: r[k] for k in ("artifact", "verdict")} for r in rows]))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def print_sources(sources, docs: Path) -> int:
    """The dry run of a recipe that reads committed tables: each artifact and whether it is there."""
    print(to_markdown([{"artifact": s, "present": (docs / s).exists()} for s in sources]))
    return 0


def reproduce_sweep(recipe: str, options: RunOptions) -> int:
    """``reproduce`` of a sweep recipe: its dry run (runs, what is left, the cost here), or its
    runs trained and its tables written."""
    from ..reproduce import dry_run, recipe_sweep, run_sweep_recipe
    from ..sweeps import in_precision

    own = recipe_sweep(recipe)
    if in_precision(own, options.precision).name != own.name and Path(options.docs) == Path(DOCS):
        raise ValueError(
            f"reproduce {recipe} --precision {options.precision}: its tables would replace the recipe's own in "
            f"{DOCS}; give --docs another folder"
        )
    if options.dry_run:
        from ..devices import resolve

        rows = dry_run(recipe, options)
        print(to_markdown(rows), end="")
        todo = [r for r in rows if r["est_core_min"] > 0]
        print(
            f"{len(rows)} runs, {len(rows) - len(todo)} with nothing left to train; the rest should take about "
            f"{sum(r['est_core_min'] for r in todo):.0f} core-minutes on {resolve(options.device)} here "
            "(one thread per run)"
        )
        return 0
    return print_tables(run_sweep_recipe(recipe, options))


def cmd_sweep(args) -> int:
    from ..sweeps import in_precision, load_sweep, plan, run_sweep, status, sweep_table

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
    sweep = in_precision(load_sweep(args.target), options.precision)
    if options.dry_run:
        from ..batched import group_batches
        from ..devices import resolve
        from ..sweeps.runner import auto_batch_runs

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
