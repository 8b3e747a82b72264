"""What several commands print: a run's summary with units, a checkpoint's headline numbers, the
per-head table of inspect and ablate (its columns and legend from the per-head scores'
registry), a number with its bootstrap interval. Numbers go through
``frames.cell``, the package's one formatter."""

from __future__ import annotations

from ..frames import cell, finite
from ..passes.head_scores import HEAD_SCORES

# the unit of every number the summary prints
UNITS = {
    "log_K": "nats",
    "plateau_loss": "nats",
    "tau": "steps",
    "tau_examples": "examples",
    "converged_step": "steps",
    "swap_gap_0.1_step": "steps",
    "last_step": "steps",
    "final_Lc": "nats",
    "final_L_seq": "nats",
    "D": "examples",
    "n_b": "groups",
    "eval_groups": "groups",
    "n_checkpoints": "checkpoints",
    "plateau_ratio": "x log K",
}

# the columns inspect and ablate add after dL: its bootstrap over groups (``api``), not a score
INTERVAL_LEGEND = {
    "dL_95%": "95% bootstrap interval of dL over the evaluation groups (nats)",
    "top_share": "share of the bootstrap resamples in which the head has the largest dL",
}


def with_unit(key: str, v) -> str:
    """A summary value with its unit (``UNITS``), e.g. ``1.386 nats``; 4 significant digits."""
    u = UNITS.get(key)
    text = cell(v, ".4g", missing=None)
    return f"{text} {u}" if u and v is not None and not isinstance(v, bool) else text


def crossing_text(d: dict, name: str) -> str:
    """A crossing's columns (``crossings.columns``) in one phrase: ``1,050 (exact)`` or
    ``1,050 [1,000, 1,100] (estimate)``; ``not reached`` where there is none."""
    v, lo, hi = d.get(name), d.get(f"{name}_lo"), d.get(f"{name}_hi")
    if d.get(f"{name}_exact", True):
        return "not reached" if v is None else f"{v:,} (exact)"
    show = lambda x: "-" if x is None else f"{x:,}"  # noqa: E731
    return f"{'none' if v is None else f'{v:,}'} [{show(lo)}, {show(hi)}] (estimate)"


def short_block(s: dict, costs: dict | None = None) -> list[str]:
    """The summary at a glance: plateau height and window, the transition's start and end, tau
    with its interval, the converged step and the evaluation's share of the run's wall time."""
    fams = s.get("definitions") or {}
    paper, first = fams.get("paper") or {}, fams.get("first_token") or {}
    lines = [
        f"K {s['K']}, n_b {s['n_b']}, log K {s['log_K']:.4g} nats; {s.get('status') or 'unknown'} at step "
        f"{cell(s.get('last_step'), ',')} ({s['n_checkpoints']} checkpoints)"
    ]
    ph = [
        f"{fam} {cell(d.get('plateau_loss'), '.4g')} nats ({cell(d.get('plateau_ratio'), '.3f')} log K)"
        for fam, d in (("L_seq", paper), ("Lc", first))
        if finite(d.get("plateau_loss"))
    ]
    if ph:
        lines.append("plateau: " + "; ".join(ph) + " (L_seq: mean over the paper's window; Lc: median before onset)")
    for label, d in (("L_seq", paper), ("Lc", first)):
        if not d or not finite(d.get("plateau_loss")) and d.get("tau") is None:
            continue  # a family this task does not have
        if d.get("t_end") is None and d.get("t_end_lo") is None:
            transition = "not ended by the last checkpoint"
        else:
            transition = f"{crossing_text(d, 't_start')} -> {crossing_text(d, 't_end')}"
        lines.append(f"{label}: tau {crossing_text(d, 'tau')}; transition {transition}")
    if s.get("diverged"):
        d = s["diverged"]
        lines.append(f"diverged: at step {d['step']:,} ({d['quantity']} not finite); the run ended there")
    lines.append(
        f"converged: step {s['converged_step']:,}" if s.get("converged") else "converged: not by the last checkpoint"
    )
    if costs and costs.get("wall_s") is not None and costs.get("eval_share") is not None:
        lines.append(
            f"evaluation: {100 * costs['eval_share']:.1f}% of the run's {costs['run_wall_s']:.0f} s "
            f"(live, every checkpoint); settlement {costs['settle_s']:.0f} s on request"
        )
    return lines


def print_summary(s: dict, costs: dict | None = None, full: bool = False) -> None:
    """The run summary (``api.summary``): the short block (``short_block``); with ``full`` every
    key after it, one value a line (the definition families and each crossing asked one line
    each), no line for a value that does not apply."""
    for line in short_block(s, costs):
        print(f"  {line}")
    if not full:
        print("  (every key: --all or --json; exact crossings: mi-plateau settle RUN)")
        return
    for k, v in s.items():
        if k == "run" or v is None:
            continue  # printed above, or does not apply
        if k == "definitions":  # one line per family
            for fam, d in v.items():
                shown = {kk: vv for kk, vv in d.items() if vv is not None}
                print(f"  {k + ' ' + fam:>18}: " + ", ".join(f"{kk} {with_unit(kk, vv)}" for kk, vv in shown.items()))
        elif k == "paper_crossings":
            for c in v:
                print(f"  {c['question']:>18}: {c['text']}")
        elif k == "settlement":
            state = "every crossing exact" if v["exact"] else "estimates where not exact (mi-plateau settle RUN)"
            print(f"  {k:>18}: {state}; {v['full_sets_cached']} full sets cached")
        else:
            print(f"  {k:>18}: {with_unit(k, v)}")


def print_costs(c: dict) -> None:
    """Where the run's wall time went (``sweeps.table.run_costs``), one line."""
    if c["wall_s"] is None:
        return
    line = f"  {'wall time':>18}: {c['wall_s']:.0f} s over {c['checkpoints']} checkpoints"
    if c["eval_s"] is not None:
        share = f"{100 * c['eval_share']:.1f}%" if c["eval_share"] is not None else "—"
        line += (
            f", of which evaluation {c['eval_s']:.0f} s ({share}: live {c['live_eval_s']:.0f} s, "
            f"settlement {c['settle_s']:.0f} s)"
        )
    print(line)


def interval(lo, hi) -> str:
    """A 95% interval as ``lo..hi`` (3 decimals); a dash where either end is missing."""
    return "—" if not (finite(lo) and finite(hi)) else f"{lo:.3f}..{hi:.3f}"


def head_columns(ablation_only: bool = False, top_share: bool = False) -> list[str]:
    """The head table's columns, from the per-head scores' registry (``passes.head_scores``):
    every score (inspect) or those that read the ablation (``ablation_only``: ablate), in their
    order, dL followed by its 95% interval (and, with ``top_share``, the share of resamples in
    which the head has the largest dL)."""
    cols = []
    for s in HEAD_SCORES.values():
        if s.ablation or not ablation_only:
            cols += [s.name] + (["dL_95%"] + ["top_share"] * top_share if s.name == "dL" else [])
    return cols


def legend_line(col: str) -> str:
    """A head table column's line under the table: its score's ``legend``, or the interval's."""
    return f"{col} = {HEAD_SCORES[col].legend if col in HEAD_SCORES else INTERVAL_LEGEND[col]}"


def head_table(heads, cols) -> str:
    """One table for inspect and ablate: heads in (layer, head) order, the top head by the
    paper's Delta L marked with *, then the legend of the columns shown."""
    top = max((r for r in heads if finite(r.get("dL"))), key=lambda r: r["dL"], default=None)
    cells = [
        [interval(r.get("dL_lo"), r.get("dL_hi")) if c == "dL_95%" else cell(r.get(c), ".3f") for c in cols]
        for r in heads
    ]
    width = [max([13, len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["head    " + " ".join(f"{c:>{w}}" for c, w in zip(cols, width))]
    for r, row in zip(heads, cells):
        mark = "*" if top is not None and r["head"] == top["head"] else " "
        lines.append(f"{r['head']:<6}{mark} " + " ".join(f"{v:>{w}}" for v, w in zip(row, width)))
    lines.append("* = the head with the largest dL")
    lines += [f"  {legend_line(c)}" for c in cols]
    return "\n".join(lines)


def print_checkpoint(res: dict, what: str = "") -> None:
    """The headline numbers of one checkpoint (inspect, ablate): the paper's definitions, then
    the first-token ones, in nats, with the swap gap's 95% interval over groups."""
    ck = res["checkpoint"]
    print(f"{res['run']} at step {res['step']}{what}")
    print(
        f"  paper:       L_seq {cell(ck['L_seq'], '.3f')} nats, candidate accuracy {cell(ck['cand_acc'], '.3f')}, "
        f"swap gap {cell(ck['swap_gap_seq'], '.3f')} nats "
        f"(95% over groups {interval(ck.get('swap_gap_seq_lo'), ck.get('swap_gap_seq_hi'))})"
    )
    print(
        f"  first token: Lc {cell(ck['Lc'], '.3f')} nats, L1 {cell(ck['L1'], '.3f')} nats, "
        f"exact match {cell(ck['acc_mean'], '.3f')}, swap gap {cell(ck['swap_gap'], '.3f')} nats "
        f"(95% over groups {interval(ck.get('swap_gap_lo'), ck.get('swap_gap_hi'))}); "
        f"full target loss {cell(ck['full_loss'], '.3f')} nats"
    )
