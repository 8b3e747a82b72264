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
    res = analyze(args.runs, args.out, progress=not args.quiet, pass_config=pc, max_head_checkpoints=args.max_checkpoints)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for name, r in res["runs"].items():
        s, ro = r["summary"], r["routing"]
        print(f"{name}: tau={s['tau']} plateau/logK={_f(s['plateau_ratio'])} -> {r['folder']}/")
        print(f"  routing head {ro.get('routing_head')} (top attention {ro.get('top_attention_head')}); "
              f"lead (tau-t_r)/tau: attention {_f(ro.get('routing_lead_sel_attn'), 2)}, causal {_f(ro.get('routing_lead_swap_contrib'), 2)}; "
              f"swap gap > 0.1 at {_f(ro.get('swap_gap_0.1_frac_tau'), 2)} tau")
    if "comparison" in res:
        print(f"comparison -> {res['comparison']}/")
    return 0


def _head_table(heads, cols):
    lines = ["head   " + " ".join(f"{c:>13}" for c in cols)]
    for r in heads:
        lines.append(f"{r['head']:<6} " + " ".join(f"{_f(r.get(c)):>13}" for c in cols))
    return "\n".join(lines)


def cmd_inspect(args) -> int:
    from .api import inspect

    res = inspect(args.run, args.step, args.head)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    ck = res["checkpoint"]
    print(f"{res['run']} at step {res['step']}: Lc={_f(ck['Lc'])} L1={_f(ck['L1'])} swap gap={_f(ck['swap_gap'])} mean acc={_f(ck['acc_mean'])}")
    print("sel_attn = attention from the A1 query to z minus uniform baseline; dLc = ablation Delta Lc (nats);")
    print("swap_contrib = swap gap removed by ablating the head (nats); causal_share = swap_contrib / swap gap")
    print(_head_table(res["heads"], ["sel_attn", "dLc", "swap_contrib", "causal_share"]))
    if res["patching"]:
        print("patching z positions of resid_pre, fraction of logit difference moved: "
              + ", ".join(f"L{r['layer']}={_f(r['patch_frac'], 2)}" for r in res["patching"]))
    if "pattern" in res:
        for ex in res["pattern"]["examples"]:
            toks = ex["tokens"]
            print(f"\n{res['pattern']['head']} attention pattern (rows: query, cols: key)")
            print("      " + " ".join(f"{t:>4}" for t in toks))
            for q, row in enumerate(ex["pattern"]):
                print(f"{toks[q]:>5} " + " ".join(f"{v:4.2f}" if k <= q else "    " for k, v in enumerate(row)))
    return 0


def cmd_ablate(args) -> int:
    from .api import ablation_report

    res = ablation_report(args.run, args.step, mean=args.mean)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['run']} at step {res['step']} ({res['mode']} ablation): clean Lc={_f(res['Lc'])} L1={_f(res['L1'])} swap gap={_f(res['swap_gap'])}")
    print(_head_table(res["heads"], ["dLc", "dL1", "swap_contrib", "causal_share"]))
    return 0


def dispatch(args) -> int:
    cmd = {"analyze": cmd_analyze, "inspect": cmd_inspect, "ablate": cmd_ablate}.get(args.command)
    if cmd is None:
        import importlib

        mod = {"report": "report", "bench": "bench", "reproduce": "reproduce"}[args.command]
        return importlib.import_module(f".{mod}", __package__).main(args)
    return cmd(args)
