"""The analysis-side commands of the CLI: parse results into text, nothing else."""

from __future__ import annotations

import json
import math


def _f(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _lead(ro: dict, key: str) -> str:
    """A routing number with its bootstrap interval, e.g. ``0.83 [0.78, 0.85]``."""
    lo, hi = ro.get(f"{key}_lo"), ro.get(f"{key}_hi")
    return _f(ro.get(key), 2) + (f" [{lo:.2f}, {hi:.2f}]" if _finite(lo) and _finite(hi) else "")


def cmd_analyze(args) -> int:
    from .api import analyze
    from .passes.analyze import PassConfig

    try:
        shifts = tuple(int(x) for x in args.shifts.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--shifts {args.shifts!r}: expected comma-separated integers, e.g. 1,3,5") from None
    if not shifts:
        raise ValueError("--shifts: give at least one shift")
    pc = PassConfig(shifts=shifts, mean_ablation=args.mean)
    res = analyze(
        args.runs,
        args.out,
        progress=not args.quiet,
        pass_config=pc,
        max_head_checkpoints=args.max_checkpoints,
        device=args.device,
    )
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for name, r in res["runs"].items():
        s, ro = r["summary"], r["routing"]
        print(f"{name}: tau={s['tau']} plateau/logK={_f(s['plateau_ratio'])} -> {r['folder']}/")
        print(
            f"  routing head {ro.get('routing_head')} (top attention {ro.get('top_attention_head')}); "
            f"lead (tau-t_r)/tau: attention {_lead(ro, 'routing_lead_sel_attn')}, causal {_lead(ro, 'routing_lead_swap_contrib')}; "
            f"swap gap > 0.1 at {_lead(ro, 'swap_gap_0.1_frac_tau')} tau (95% intervals over groups)"
        )
    if "comparison" in res:
        print(f"comparison -> {res['comparison']}/")
    return 0


HEAD_LEGEND = {
    "sel_attn": "sel_attn = attention from the A1 query to the selector z minus the uniform baseline",
    "dL": "dL = ablation Delta L, full-vocabulary cross-entropy over A1..A4 and EOS, ablated - clean (the paper's; nats)",
    "dLc": "dLc = ablation Delta Lc (first-token candidate loss; nats)",
    "dL1": "dL1 = ablation Delta L1 (first token, full vocabulary; nats)",
    "swap_contrib": "swap_contrib = swap gap removed by ablating the head (nats)",
    "causal_share": "causal_share = swap_contrib / swap gap (blank while the gap is below 0.05 nats)",
    "dL_95%": "dL_95% = 95% bootstrap interval of dL over the evaluation groups (nats)",
    "top_share": "top_share = share of the bootstrap resamples in which the head has the largest dL",
}


def _ci(lo, hi) -> str:
    return "—" if not (_finite(lo) and _finite(hi)) else f"{lo:.3f}..{hi:.3f}"


def _head_table(heads, cols) -> str:
    """One table for inspect and ablate: heads in (layer, head) order, the top head by the
    paper's Delta L marked with *, then the legend of the columns shown."""
    top = max((r for r in heads if _finite(r.get("dL"))), key=lambda r: r["dL"], default=None)
    cells = [[_ci(r.get("dL_lo"), r.get("dL_hi")) if c == "dL_95%" else _f(r.get(c)) for c in cols] for r in heads]
    width = [max([13, len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["head    " + " ".join(f"{c:>{w}}" for c, w in zip(cols, width))]
    for r, row in zip(heads, cells):
        mark = "*" if top is not None and r["head"] == top["head"] else " "
        lines.append(f"{r['head']:<6}{mark} " + " ".join(f"{v:>{w}}" for v, w in zip(row, width)))
    lines.append("* = the head with the largest dL")
    lines += [f"  {HEAD_LEGEND[c]}" for c in cols]
    return "\n".join(lines)


def _checkpoint_lines(res: dict, what: str = "") -> None:
    ck = res["checkpoint"]
    print(f"{res['run']} at step {res['step']}{what}")
    print(
        f"  paper:       L_seq {_f(ck['L_seq'])} nats, candidate accuracy {_f(ck['cand_acc'])}, swap gap {_f(ck['swap_gap_seq'])} "
        f"nats (95% over groups {_ci(ck.get('swap_gap_seq_lo'), ck.get('swap_gap_seq_hi'))})"
    )
    print(
        f"  first token: Lc {_f(ck['Lc'])} nats, L1 {_f(ck['L1'])} nats, exact match {_f(ck['acc_mean'])}, swap gap "
        f"{_f(ck['swap_gap'])} nats (95% over groups {_ci(ck.get('swap_gap_lo'), ck.get('swap_gap_hi'))}); "
        f"full target loss {_f(ck['full_loss'])} nats"
    )


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def cmd_inspect(args) -> int:
    from .api import inspect

    res = inspect(args.run, args.step, args.head, device=args.device)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    _checkpoint_lines(res)
    print(_head_table(res["heads"], ["sel_attn", "dL", "dL_95%", "dLc", "swap_contrib", "causal_share"]))
    for hook in ("resid_pre", "resid_post"):
        rows = [r for r in res["patching"] if r.get("hook") == hook]
        if rows:
            print(
                f"patching the z positions of {hook}, fraction of the logit difference moved: "
                + ", ".join(f"L{r['layer']}={_f(r['patch_frac'], 2)}" for r in rows)
            )
    if "pattern" in res:
        for ex in res["pattern"]["examples"]:
            toks = ex["tokens"]
            print(f"\n{res['pattern']['head']} attention pattern (rows: query, cols: key; attention weights, 0 to 1)")
            print("      " + " ".join(f"{t:>4}" for t in toks))
            for q, row in enumerate(ex["pattern"]):
                print(f"{toks[q]:>5} " + " ".join(f"{v:4.2f}" if k <= q else "    " for k, v in enumerate(row)))
    return 0


def cmd_ablate(args) -> int:
    from .api import ablation_report

    res = ablation_report(args.run, args.step, mean=args.mean, device=args.device)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    _checkpoint_lines(res, f" ({res['mode']} ablation of hook_z)")
    print(_head_table(res["heads"], ["dL", "dL_95%", "top_share", "dLc", "dL1", "swap_contrib", "causal_share"]))
    return 0


def cmd_report(args) -> int:
    from .report import report

    print(report(args.runs, args.out, progress=not args.quiet, plotly=args.plotly, device=args.device))
    return 0


def cmd_bench(args) -> int:
    from pathlib import Path

    from .bench import run_benchmarks, to_markdown
    from .checkpoints import atomic_write_text
    from .devices import resolve
    from .summaries import nan_to_none

    res = run_benchmarks(quick=args.quick, only=args.only, device=str(resolve(args.device)))
    md = to_markdown(res)
    if args.out:
        atomic_write_text(Path(args.out), md)
    print(json.dumps(nan_to_none(res), indent=2) if args.json else md)
    return 0


def cmd_reproduce(args) -> int:
    from .reproduce import SWEEP_RECIPES, dry_run, plan, recipe_sweep, run_recipe, run_sweep_recipe
    from .sweeps import status
    from .tabular import to_markdown

    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only is not None else None
    if args.recipe not in SWEEP_RECIPES and (only is not None or args.skip_recorded or args.max_steps):
        raise ValueError(
            f"reproduce {args.recipe}: --only, --skip-recorded and --max-steps apply to the sweep recipes only"
        )
    if args.recipe in SWEEP_RECIPES:
        if args.dry_run:
            target = recipe_sweep(args.recipe, args.max_steps) if args.max_steps else args.recipe
            rows = dry_run(target, args.root, docs=args.docs, skip_recorded=args.skip_recorded, only=only)
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
            max_steps=args.max_steps,
            device=args.device,
        )
        for title, rows in log["tables"].items():
            print(f"## {title}\n{to_markdown(rows)}")
        print(f"wrote {', '.join(log['written'])}")
        return 0
    if args.dry_run:
        for p, c in plan(args.recipe, args.root):
            print(f"{p}  preset={c.preset} K={c.task.K} seed={c.task.data_seed}  {status(p)}")
        return 0
    log = run_recipe(
        args.recipe, jobs=args.jobs, progress=not args.quiet, train=not args.no_train, root=args.root, docs=args.docs
    )
    for name, s in log["summaries"].items():
        ro, fam = log["routing"][name], s["definitions"]
        print(
            f"{name}: tau paper (L_seq) {fam['paper']['tau']} steps, first token (Lc) {fam['first_token']['tau']} steps; "
            f"plateau/log K paper {_f(fam['paper']['plateau_ratio'])}, first token {_f(fam['first_token']['plateau_ratio'])}; "
            f"routing head {ro.get('routing_head')}, lead (tau - t_r)/tau attention {_lead(ro, 'routing_lead_sel_attn')}, "
            f"causal {_lead(ro, 'routing_lead_swap_contrib')}"
        )
    print(f"wrote {', '.join(log['written'])}")
    return 0


def cmd_sweep(args) -> int:
    from pathlib import Path

    from .sweeps import load_sweep, plan, run_sweep, status, sweep_table
    from .tabular import to_markdown

    if args.target == "status":
        if not args.folder:
            raise ValueError("sweep status: give the sweep folder, e.g. checkpoints/<sweep name>")
        print(to_markdown(sweep_table(Path(args.folder))), end="")
        return 0
    if args.folder:
        raise ValueError(f"sweep {args.target}: unexpected second argument {args.folder!r}")
    sweep = load_sweep(args.target)
    runs = plan(sweep, args.root)
    if args.batch_runs == "auto":
        from .sweeps.runner import auto_batch_runs

        args.batch_runs = auto_batch_runs(args.device)
    if args.dry_run:
        for (path, _), p in zip(runs, sweep.points):
            print(f"{path}  {', '.join(f'{k}={v}' for k, v in p.settings.items()) or '(base)'}  {status(path)}")
        print(f"{len(runs)} runs; {sum(status(p) == 'finished' for p, _ in runs)} finished")
        if args.batch_runs > 1:
            from .batched import group_batches

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
        import sys

        print(
            f"mi-plateau sweep: {len(failed)} of {len(table)} runs failed (rerun the sweep to resume them): "
            + "; ".join(f"{name}: {err}" for name, err in failed.items()),
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_train_batch(args) -> int:
    import sys
    from pathlib import Path

    from .config import RunConfig

    text = sys.stdin.read() if args.runs == "-" else Path(args.runs).read_text()
    try:
        items = json.loads(text)
        if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("out"), str) for i in items):
            raise ValueError('expected a list of objects with an "out" folder')
        pairs = [(RunConfig.from_dict(i["config"]) if i.get("config") is not None else None, i["out"]) for i in items]
    except (json.JSONDecodeError, ValueError, TypeError) as e:
        raise ValueError(f"{args.runs}: not a list of runs ({' '.join(str(e).split())})") from None
    from .batched import train_batched

    runs = train_batched(
        pairs,
        resume=args.resume,
        progress=not args.quiet,
        argv=["mi-plateau", "train-batch", args.runs],
        device=args.device,
    )
    for run in runs:
        print(f"run: {run.path}")
    return 0


COMMANDS = {
    "train-batch": cmd_train_batch,
    "analyze": cmd_analyze,
    "inspect": cmd_inspect,
    "ablate": cmd_ablate,
    "report": cmd_report,
    "bench": cmd_bench,
    "reproduce": cmd_reproduce,
    "sweep": cmd_sweep,
}


def dispatch(args) -> int:
    return COMMANDS[args.command](args)
