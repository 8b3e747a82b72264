"""The training commands: ``train`` (one run), ``train-batch`` (several runs as one stacked
model) and ``summary`` (a run's plateau, tau and convergence, and the checks of its tau)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from ..config import (
    ConfigError,
    RunConfig,
    RunOptions,
    parse_json,
    parse_override,
    preset,
    reductions,
    run_name,
    validate,
    with_overrides,
)
from ..frames import cell
from .text import print_costs, print_summary


def train_config(args) -> Any:
    """The config ``train`` runs with: a preset (default demo) or ``--config``'s JSON file, then
    the setting flags (``args.setting_flags`` names them) and ``--set`` items; None to resume a
    run with its stored config."""
    overrides: dict[str, Any] = {}
    for dest in args.setting_flags:
        v = getattr(args, dest)
        if v is not None:
            overrides[dest] = v
    for item in args.set:
        k, v = parse_override(item)
        overrides[k] = v
    if args.config is not None:
        if args.preset is not None:
            raise ConfigError("--config and --preset both give the starting configuration: choose one")
        try:
            text = sys.stdin.read() if args.config == "-" else Path(args.config).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{args.config}: not a readable config JSON ({' '.join(str(e).split())})") from None
        base = RunConfig.from_dict(parse_json(text, args.config))
        return with_overrides(base, overrides)
    if args.preset is None and args.resume:
        if args.out is not None and not (Path(args.out) / "config.json").exists():
            raise ConfigError(
                f"--resume: nothing to resume in {args.out} (no config.json there); "
                "give --preset or --config to start a new run"
            )
        if not overrides:
            return None  # resume with the stored config
        if args.out is not None and (Path(args.out) / "config.json").exists():
            from ..checkpoints import Run

            return with_overrides(Run(args.out).config(), overrides)  # e.g. a larger --max-steps
    return with_overrides(preset(args.preset or "demo"), overrides)


def cmd_train(args, argv: Sequence[str] = ()) -> int:
    cfg = train_config(args)
    if cfg is not None:
        validate(cfg)  # fail before importing torch
        for line in reductions(cfg):
            print(f"mi-plateau train: note: {line}", file=sys.stderr)
    if args.out is not None and not args.out.strip():
        raise ConfigError("--out '': give a run folder (or leave --out out for checkpoints/<name>)")
    if args.out is None:
        if cfg is None:
            raise ConfigError("--resume without a preset or settings needs --out RUN_FOLDER")
        out = Path("checkpoints") / run_name(cfg)
    else:
        out = Path(args.out)
    if args.resume and cfg is not None and not (out / "manifest.json").exists():
        print(f"mi-plateau train: nothing to resume in {out}: starting a new run there", file=sys.stderr)
    from ..api import summary
    from ..train import train

    run = train(cfg, out, resume=args.resume, progress=not args.quiet, argv=["mi-plateau", *argv], options=where(args))
    from ..sweeps.table import run_costs

    s = summary(run.path)
    print(f"run: {run.path}")
    print_summary(s, run_costs(run))
    return 0


def cmd_train_batch(args) -> int:
    text = sys.stdin.read() if args.runs == "-" else Path(args.runs).read_text()
    items = parse_json(text, args.runs)
    try:
        if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("out"), str) for i in items):
            raise ValueError('expected a list of objects with an "out" folder')
        if not items:
            raise ValueError("an empty list: no run to train")
        pairs = [(RunConfig.from_dict(i["config"]) if i.get("config") is not None else None, i["out"]) for i in items]
    except (json.JSONDecodeError, ValueError, TypeError) as e:
        raise ValueError(f"{args.runs}: not a list of runs ({' '.join(str(e).split())})") from None
    if args.precision is not None:
        if any(c is None for c, _ in pairs):
            raise ValueError("--precision: applies to new runs (a config given); a resumed run keeps its own")
        pairs = [(replace(c, train=replace(c.train, precision=args.precision)), out) for c, out in pairs]
    from ..train.batched import train_batched

    runs = train_batched(
        pairs,
        resume=args.resume,
        progress=not args.quiet,
        argv=["mi-plateau", "train-batch", args.runs],
        options=where(args),
    )
    for run in runs:
        print(f"run: {run.path}")
    return 0


def where(args) -> RunOptions:
    """Where ``train`` and ``train-batch`` train: ``--device`` and ``--threads``."""
    return RunOptions(device=args.device, threads=args.threads)


# what the summary itself answers beyond its defaults (flag -> argument): not with a check
SUMMARY_ASKS = {
    "--sampled-tau": "sampled_tau",
    "--sampled-width": "sampled_width",
    "--tau-at": "tau_at",
    "--width-at": "width_at",
}


def cmd_summary(args) -> int:

    given = {
        k: v for k, v in (("n_sample", args.n_sample), ("draws", args.draws), ("every", args.every)) if v is not None
    }
    if given and not (args.sampled_tau or args.sampled_width):
        raise ValueError(f"--{next(iter(given)).replace('_', '-')} applies to --sampled-tau and --sampled-width only")
    if args.exact_check and args.spacing_check:
        raise ValueError("--exact-check and --spacing-check are two checks: run one at a time")
    if args.exact_check or args.spacing_check:  # a check prints its own comparison, not the summary
        asked = [f for f, v in SUMMARY_ASKS.items() if getattr(args, v)]
        if asked:
            check = "--exact-check" if args.exact_check else "--spacing-check"
            raise ValueError(f"{asked[0]}: does not apply with {check} (it prints its own comparison)")
    if args.exact_check:
        return print_exact_check(args)
    if args.spacing_check:
        return print_spacing_check(args)
    from ..checkpoints import Run
    from ..settle import Crossing, Width, default_questions, run_summary

    run = Run(args.run)
    run.manifest()  # a missing or broken folder says so before anything else
    asked = [Crossing(a) for a in args.tau_at or ()] + [Width(h, lo) for h, lo in args.width_at or ()]
    s = run_summary(run, [*default_questions(run.config()), *asked])  # estimates where not settled: no scoring
    t = w = None
    progress = not args.json and sys.stderr.isatty()
    if args.sampled_tau or args.sampled_width:
        from ..replays.sampled import ExampleLosses

        given["shared"] = ExampleLosses(run, progress)  # one scoring per checkpoint for both
    if args.sampled_tau:
        from ..api import sampled_tau

        t = sampled_tau(args.run, **given, progress=progress)
    if args.sampled_width:
        from ..api import sampled_width

        w = sampled_width(args.run, **given, progress=progress)
    from ..sweeps.table import run_costs

    costs = run_costs(run)
    if args.json:
        extra = ({"sampled_tau": t} if t else {}) | ({"sampled_width": w} if w else {})
        print(json.dumps(s | {"costs": costs} | extra, indent=2))
        return 0
    print(f"run: {args.run}")
    print_summary(s, costs, full=args.all)
    if t:
        print_sampled_tau(t)
    if w:
        print_sampled_width(w)
    return 0


def print_exact_check(args) -> int:
    """``summary --exact-check``: every settled crossing against the all-exact one."""
    from ..checkpoints import Run
    from ..replays.exact_check import exact_check
    from ..sweeps.table import run_costs

    run = Run(args.run)
    g = exact_check(run, progress=not args.json and sys.stderr.isatty())
    g["costs"] = run_costs(run)  # after the check: the settlement's scorings are in settled.json
    if args.json:
        print(json.dumps(g, indent=2))
        return 0
    print(
        f"run: {args.run}: {g['checkpoints_scored']} of {g['checkpoints']} checkpoints scored on the full set "
        f"(up to step {g['last_step_scored']}); the settlement holds the full set at {g['settled_full_sets']}; "
        f"every crossing and "
        f"width equal: {g['all_equal']}"
    )
    print_side_by_side(g, ("exact", "settled"))
    print_costs(g["costs"])
    return 0


def print_side_by_side(g: dict, sides: tuple[str, str]) -> None:
    """A check's crossings and widths, each from both of its ``sides`` (the keys' suffixes)."""
    a, b = sides
    for c in g["crossings"]:
        print(f"  {c['definition']} {c['fraction']:g} log K: {a} {c[f'tau_{a}']}, {b} {c[f'tau_{b}']}")
    for fam, w in g["widths"].items():
        print(f"  {fam} width (t_start, t_end, tau_width): {a} {w[a]}, {b} {w[b]}")


def print_spacing_check(args) -> int:
    """``summary --spacing-check MAX``: the taus and widths from the checkpoints a widening spacing
    keeps against those from every checkpoint of the dense run."""
    from ..api import spacing_check

    g = spacing_check(args.run, ckpt_every_max=args.spacing_check)
    if args.json:
        print(json.dumps(g, indent=2))
        return 0
    share = "unknown" if g["eval_share_kept"] is None else f"{100 * g['eval_share_kept']:.0f}%"
    print(
        f"run: {args.run}: ckpt_every_max {g['ckpt_every_max']} keeps {g['kept']} of {g['checkpoints']} checkpoints "
        f"to step {g['last_step']} ({share} of the evaluation seconds; {g['shifted']} steps read at the next dense "
        f"record); every crossing and the width equal: {g['all_equal']}"
    )
    if g["lead_share"] is not None:
        print(
            f"  the swap gap passed its quiet level at {g['swap_gap_rise']}, L_seq left 0.95 log K at "
            f"{g['L_seq_below_hi']}: a lead of {100 * g['lead_share']:.0f}% of that step (the spacing is at most 12.5%)"
        )
    print_side_by_side(g, ("all", "kept"))
    return 0


def print_sampled_width(w: dict) -> None:
    """``summary --sampled-width``: the width (and its ends) by the original's estimator, beside
    the exact width."""
    f = partial(cell, spec=".0f", missing="none")
    print(
        f"transition width by the original's estimator (L_seq on {w['n_sample']} random groups, one example "
        f"each, every {w['every']} steps; {w['draws']} replays; {w['hi']:g} and {w['lo']:g} log K):"
    )
    for key in ("t_start", "t_end", "tau_width"):
        q = w[key]
        print(
            f"  {key}: median {f(q['q50'])}, 5-95% [{f(q['q05'])}, {f(q['q95'])}]; mean {f(q['mean'])}, "
            f"std {f(q['std'])}"
        )
    ws, wr = w["width_exact_grid"], w["width_recorded"]
    print(
        f"exact (t_start, t_end, width): {tuple(ws)} on that grid ({w['eval_groups']} groups), {tuple(wr)} in the "
        f"run's records; {w['checkpoints_scored']} checkpoints scored"
    )
    if w["tau_width"]["p_none"]:
        print(
            f"  {100 * w['tau_width']['p_none']:.1f}% of the replays never fell below {w['lo']:g} log K by the run's "
            "last checkpoint: the means and std cover the others only (a run stopped at that line reads short)"
        )
    if w["t_start_before_dense"]:
        print(
            f"  {100 * w['t_start_before_dense']:.1f}% of the replays' t_start lie before step {w['dense_from']}, "
            "where the checkpoints are sparser than the estimator's spacing"
        )


def print_sampled_tau(t: dict) -> None:
    """``summary --sampled-tau``: the spread of the original's tau estimator, beside the exact tau."""
    f = partial(cell, spec=".0f", missing="none")  # steps; "none" where no replay crossed
    among = " of those that crossed" if t["p_none"] else ""
    print(
        f"tau by the original's estimator (L_seq on {t['n_sample']} random groups, one example each, every "
        f"{t['every']} steps; {t['draws']} replays): median {f(t['q50'])}, 5-95% [{f(t['q05'])}, {f(t['q95'])}], "
        f"min {f(t['min'])}, max {f(t['max'])}; mean {f(t['mean'])}, std {f(t['std'])}{among}; "
        f"no crossing in {100 * t['p_none']:.1f}% of replays"
    )
    print(
        f"exact L_seq tau: {f(t['tau_exact_grid'])} on that grid ({t['eval_groups']} groups), "
        f"{f(t['tau_recorded'])} in the run's records ({t['recorded_groups']} groups, every checkpoint); "
        f"{t['checkpoints_scored']} checkpoints scored"
    )
