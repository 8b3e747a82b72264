"""The commands that run many trainings: ``sweep`` (a sweep file), ``reproduce`` (the paper's
named recipes) and ``bench`` (the benchmarks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..tabular import cell, to_markdown
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


def cmd_reproduce(args) -> int:
    from ..reproduce import SWEEP_RECIPES

    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only is not None else None
    if args.static and args.recipe == "controls":
        raise ValueError("reproduce controls: --static: Table 12 has no figure")
    if args.static and args.recipe == "scorecard":
        raise ValueError("reproduce scorecard: --static: the scorecard has no figure")
    if args.static and not args.dry_run:  # before any training: the figures come last
        from ..tabular import STATIC_NEEDS, chromium

        if chromium() is None:
            raise ValueError(f"--static: no browser found: {STATIC_NEEDS}")
    if args.recipe in SWEEP_RECIPES:
        return reproduce_sweep(args, only)
    if args.precision is not None:
        raise ValueError(f"reproduce {args.recipe}: --precision applies to the sweep recipes (what they train)")
    if args.recipe == "hessian":
        return reproduce_hessian(args, only)
    if args.recipe == "controls":
        return reproduce_controls(args, only)
    if args.recipe == "scorecard":
        return reproduce_scorecard(args, only)
    if args.recipe == "figure3":
        return reproduce_figure3(args, only)
    if only is not None or args.skip_recorded or args.max_steps:
        raise ValueError(
            f"reproduce {args.recipe}: --only, --skip-recorded and --max-steps apply to the sweep recipes only"
        )
    from ..reproduce import plan, run_recipe
    from ..sweeps import status

    if args.dry_run:
        for p, c in plan(args.recipe, args.root):
            print(f"{p}  preset={c.preset} K={c.task.K} seed={c.task.data_seed}  {status(p)}")
        return 0
    log = run_recipe(
        args.recipe,
        jobs=args.jobs,
        progress=not args.quiet,
        train=not args.no_train,
        root=args.root,
        docs=args.docs,
        static=args.static,
    )
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


def reproduce_hessian(args, only: list[str] | None) -> int:
    """``reproduce hessian``: its dry run (the runs, whether they are here and whether the log
    holds their rows), or the runs trained, the pass run and Table 10 written."""
    from ..reproduce.hessian import dry_run_rows, run_hessian_recipe

    if args.skip_recorded or args.max_steps or args.batch_runs not in (1, "1", None):
        raise ValueError("reproduce hessian: --skip-recorded, --max-steps and --batch-runs apply to the sweep recipes")
    if args.dry_run:
        print(to_markdown(dry_run_rows(only, args.root, args.docs)))
        return 0
    log = run_hessian_recipe(
        train=not args.no_train,
        only=only,
        jobs=args.jobs,
        progress=not args.quiet,
        root=args.root,
        docs=args.docs,
        device=args.device,
        static=args.static,
    )
    return print_tables(log)


def reproduce_figure3(args, only: list[str] | None) -> int:
    """``reproduce figure3``: Figure 3 and the lead over the K sweep's runs here and in its log
    (nothing is trained); its dry run lists the runs it would read."""
    from ..reproduce.figure3 import run_figure3_recipe, sweep_runs

    if only is not None or args.skip_recorded or args.max_steps or args.batch_runs not in (1, "1", None):
        raise ValueError("reproduce figure3: --only, --skip-recorded, --max-steps and --batch-runs apply to training")
    if args.jobs is not None:
        raise ValueError("reproduce figure3: --jobs: nothing is trained (the runs are the K sweep's)")
    if args.dry_run:
        print(to_markdown([{"run": str(p), "status": status_of(p)} for p in sweep_runs(Path(args.root))]), end="")
        return 0
    log = run_figure3_recipe(args.root, args.docs, progress=not args.quiet, device=args.device, static=args.static)
    return print_tables(log)


def status_of(path: Path) -> str:
    from ..sweeps import status

    return status(path)


def reproduce_controls(args, only: list[str] | None) -> int:
    """``reproduce controls``: Table 12 from the committed tables under ``--docs`` (nothing is
    trained); its dry run lists the artifacts it reads and whether each is there."""
    from ..reproduce.controls import SOURCES, write_controls

    if only is not None or args.skip_recorded or args.max_steps:
        raise ValueError("reproduce controls: --only, --skip-recorded and --max-steps apply to the sweep recipes")
    if args.dry_run:
        docs = Path(args.docs)
        print(to_markdown([{"artifact": s, "present": (docs / s).exists()} for s in SOURCES]))
        return 0
    rows, paths = write_controls(args.docs)
    print(to_markdown(rows))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def reproduce_scorecard(args, only: list[str] | None) -> int:
    """``reproduce scorecard``: docs/scorecard.md from the committed tables under ``--docs``
    (nothing is trained); its dry run lists the artifacts it reads and whether each is there."""
    from ..reproduce.scorecard import SOURCES, write_scorecard

    if only is not None or args.skip_recorded or args.max_steps:
        raise ValueError("reproduce scorecard: --only, --skip-recorded and --max-steps apply to the sweep recipes")
    if args.dry_run:
        docs = Path(args.docs)
        print(to_markdown([{"artifact": s, "present": (docs / s).exists()} for s in SOURCES]))
        return 0
    rows, paths = write_scorecard(args.docs)
    print(to_markdown([{k: r[k] for k in ("artifact", "verdict")} for r in rows]))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def reproduce_sweep(args, only: list[str] | None) -> int:
    """``reproduce`` of a sweep recipe: its dry run (runs, what is left, the cost here), or its
    runs trained and its tables written."""
    from ..reproduce import dry_run, recipe_sweep, run_sweep_recipe
    from ..sweeps import in_precision

    sweep = in_precision(recipe_sweep(args.recipe, args.max_steps), args.precision)
    if sweep.name != recipe_sweep(args.recipe).name and Path(args.docs) == Path(DOCS):
        raise ValueError(
            f"reproduce {args.recipe} --precision {args.precision}: its tables would replace the recipe's own in "
            f"{DOCS}; give --docs another folder"
        )
    if args.dry_run:
        from ..devices import resolve

        dev = str(resolve(args.device))
        rows = dry_run(sweep, args.root, docs=args.docs, skip_recorded=args.skip_recorded, only=only, device=dev)
        print(to_markdown(rows), end="")
        todo = [r for r in rows if r["est_core_min"] > 0]
        print(
            f"{len(rows)} runs, {len(rows) - len(todo)} with nothing left to train; the rest should take about "
            f"{sum(r['est_core_min'] for r in todo):.0f} core-minutes here (one thread per run)"
        )
        return 0
    log = run_sweep_recipe(
        args.recipe,
        jobs=args.jobs,
        progress=not args.quiet,
        train=not args.no_train,
        batch_runs=args.batch_runs,
        only=only,
        skip_recorded=args.skip_recorded,
        root=args.root,
        docs=args.docs,
        sweep=sweep,
        device=args.device,
        static=args.static,
    )
    return print_tables(log)


def cmd_sweep(args) -> int:
    from ..sweeps import in_precision, load_sweep, plan, run_sweep, status, sweep_table

    if args.target == "status":
        if not args.folder:
            raise ValueError("sweep status: give the sweep folder, e.g. checkpoints/<sweep name>")
        print(to_markdown(sweep_table(Path(args.folder))), end="")
        return 0
    if args.folder:
        raise ValueError(f"sweep {args.target}: unexpected second argument {args.folder!r}")
    sweep = in_precision(load_sweep(args.target), args.precision)
    runs = plan(sweep, args.root)
    if args.batch_runs == "auto":
        from ..sweeps.runner import auto_batch_runs

        args.batch_runs = auto_batch_runs(args.device)
    if args.dry_run:
        for (path, _), p in zip(runs, sweep.points):
            print(f"{path}  {', '.join(f'{k}={v}' for k, v in p.settings.items()) or '(base)'}  {status(path)}")
        print(f"{len(runs)} runs; {sum(status(p) == 'finished' for p, _ in runs)} finished")
        if args.batch_runs > 1:
            from ..batched import group_batches

            todo = [(p, c) for p, c in runs if status(p) != "finished"]
            print(f"with --batch-runs {args.batch_runs}: {len(group_batches(todo, args.batch_runs))} processes")
        return 0
    table = run_sweep(
        sweep,
        root=args.root,
        jobs=args.jobs,
        backend=args.backend,
        address=args.address,
        progress=not args.quiet,
        batch_runs=args.batch_runs,
        device=args.device,
    )
    print(to_markdown(table), end="")
    print(f"{len(table)} runs in {table.attrs['wall_s']:.0f} s -> {sweep.folder(args.root)}/table.csv")
    failed = table.attrs.get("failed") or {}
    if failed:  # a sweep with a failed run must not look like a finished one to a script
        print(
            f"mi-plateau sweep: {len(failed)} of {len(table)} runs failed (rerun the sweep to resume them): "
            + "; ".join(f"{name}: {err}" for name, err in failed.items()),
            file=sys.stderr,
        )
        return 1
    return 0
