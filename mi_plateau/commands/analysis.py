"""The analysis commands: ``analyze`` (the passes and their tables), ``inspect`` and ``ablate``
(one checkpoint's heads) and ``report`` (the interactive HTML page)."""

from __future__ import annotations

import json

from ..config import RunOptions
from ..frames import cell, lead
from ..interventions import resid_patches
from .options import settings_given
from .text import head_columns, head_table, print_checkpoint


def cmd_analyze(args) -> int:
    from ..api import analyze
    from ..passes.analyze import PassConfig

    options = RunOptions.from_args(args)
    pc = PassConfig(**settings_given(PassConfig, args))
    res = analyze(args.runs, args.out, progress=options.progress, pass_config=pc, options=options)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for name, r in res["runs"].items():
        s, ro = r["summary"], r["routing"]
        print(f"{name}: tau={s['tau']} plateau/logK={cell(s['plateau_ratio'], '.3f')} -> {r['folder']}/")
        print(
            f"  routing head {ro.get('routing_head')} (top attention {ro.get('top_attention_head')}); "
            f"lead (tau-t_r)/tau: attention {lead(ro, 'routing_lead_sel_attn')}, "
            f"causal {lead(ro, 'routing_lead_swap_contrib')}; "
            f"swap gap > 0.1 at {lead(ro, 'swap_gap_0.1_frac_tau')} tau (95% intervals over groups)"
        )
        og, on, w = r["figure3_onsets_original"] or {}, r["figure3_onsets"], r["figure3_windows"]
        print(
            f"  Figure 3 (the paper's): loss onset {og.get('loss_onset')}, z onset {og.get('z_onset_0.1')}, "
            f"lead fraction {cell(og.get('lead_frac_0.1'), '.2f')} (ours on Lc: {on['loss_onset']}, "
            f"{on['z_onset_0.1']}, {cell(on['lead_frac_0.1'], '.2f')}); displacement cosine plateau "
            f"{cell(w.get('cos_plateau'), '.2f')}, pre {cell(w.get('cos_pre'), '.2f')}, "
            f"post {cell(w.get('cos_post'), '.2f')}"
        )
    if "comparison" in res:
        print(f"comparison -> {res['comparison']}/")
    return 0


def cmd_inspect(args) -> int:
    from ..api import inspect

    res = inspect(args.run, args.step, args.head, options=RunOptions.from_args(args))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print_checkpoint(res)
    print(head_table(res["heads"], head_columns()))
    for iv in resid_patches():
        rows = [r for r in res["patching"] if r.get("hook") == iv.name]
        if rows:
            print(
                f"patching the z positions of {iv.name}, fraction of the logit difference moved: "
                + ", ".join(f"L{r['layer']}={cell(r['patch_frac'], '.2f')}" for r in rows)
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
    from ..api import ablation_report

    res = ablation_report(args.run, args.step, head_ablation=args.head_ablation, options=RunOptions.from_args(args))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print_checkpoint(res, f" ({res['mode']} ablation of hook_z)")
    print(head_table(res["heads"], head_columns(ablation_only=True, top_share=True)))
    return 0


def cmd_report(args) -> int:
    from ..report import report

    options = RunOptions.from_args(args)
    out = report(
        args.runs,
        args.out,
        progress=options.progress,
        plotly=args.plotly,
        options=options,
        llc=args.llc,
        static=bool(options.static),
    )
    print(out)
    return 0
