"""The scorecard: one row per artifact of the paper (Tables 1-12, Figures 1-5) and per headline
claim, the paper's value beside ours, whether ours is the paper's quantity, and a verdict by rule.

``mi-plateau reproduce scorecard`` writes ``scorecard.md`` one folder above the docs folder
(``docs/scorecard.md`` for ``--docs docs/reproduction``) and its rows as ``scorecard.csv`` and
``.json`` in it. Every number of ours is read from a committed table's JSON (Tables 6 and 9 from
``reproduce core``'s ``tables.json``); the paper's come from ``mi_plateau.paper``.
A missing artifact or field gives a dash and "not run", never an error. The reading, the number
format and the verdict rule are ``scoring``'s; the rows' readers are here.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from .. import paper
from ..tabular import to_csv, to_markdown
from . import verdicts as vd
from .records import NO_CURVES
from .scoring import cells, core_rows, fmt, k_list, num, pairs, paper_text, table_index, table_rows
from .verdicts import Pooled, point, pooled

PAGE, STEM = "scorecard.md", "scorecard"
TABLE6_TARGETS = ("0.25 tau", "0.5 tau", "1 tau", "1.5 tau")  # Table 6's rows, in paper.TABLE6's order

INTRO = (
    "Start here: each table, figure and headline claim of the paper beside ours, every number of ours read from the "
    "committed tables under [reproduction/](reproduction/). Discussion: [reproduction.md](reproduction.md), "
    "[reproduction_sweeps.md](reproduction_sweeps.md), [mechanisms.md](mechanisms.md), [controls.md](controls.md)."
)
RULES = (
    "**Verdict**, one rule for every point (mi_plateau/reproduce/verdicts.py): our 95% interval for one run is the "
    "prediction interval m +- t(0.975, n - 1) s sqrt(1 + 1/n) over our n >= 3 runs (on the log scale for times and "
    "ratios); with n < 3, s is the quantity's pooled spread over the conditions with >= 3 runs (named in the "
    "point's `how` in scorecard_points.json); each run's crossing interval widens it in quadrature; a fit reads its "
    "95% bootstrap interval, a mean over Ks the 95% interval of that mean. *consistent*: the paper's value (to its "
    "printed decimals) lies inside ours; *differs*: outside, with ours / paper and the distance in half-widths; "
    "*differs, explained*: outside, and the linked measurement says why; *inconclusive*: our interval spans more "
    "than a factor 2, or no interval exists (one run and no pooled spread of that quantity), or our runs stopped "
    "before the quantity could reach the paper's value (censored); *same verdict* / *other verdict*: the paper's "
    "value is a verdict or a sign; *not run*: no committed artifact holds our number. Where no interval exists but "
    "ours equals the paper's value to its printed decimals, *consistent* (the point's note says so). A row takes "
    "its points' most "
    "severe verdict (differs, differs explained, inconclusive, consistent) and counts them in *why*; *n*: the runs "
    "behind our numbers. **Same quantity**: *yes*, *our variant* (the difference named), *reduced budget* (shorter "
    "runs). The forest plot above draws every point. Regenerate: `mi-plateau reproduce scorecard`; "
    "`tests/integration/test_scorecard.py` checks this page."
)

CI = ("ci_lo", "ci_hi")
table1 = pairs(
    "table1.json", paper.TABLE1, "tau_steps", "B = {}", ("B",), kind="tau", definition="paper", compares=True
)
figure2a = pairs(
    "table1.json",
    paper.TABLE1_TOKENS,
    "tau_examples_k",
    "B = {}",
    ("B",),
    kind="tau",
    definition="paper",
    compares=True,
)
table2 = pairs(
    "table2.json",
    paper.TABLE2,
    ("tau_fwd", "tau_bwd", "ratio", "transfer"),
    kind="tau",
    ratio_of=(False, False, True, True),
    names=("tau_fwd", "tau_bwd", "ratio", "transfer"),
)
table5 = pairs(
    "table5.json",
    {a: d for a, (d, _) in paper.TABLE5.items()},
    "delta",
    "alpha {}",
    ("alpha",),
    CI,
    kind="slope",
    how="95% bootstrap over runs",
    n="n",
    definition="paper",
)
table7 = pairs(
    "table7.json",
    paper.TABLE7,
    ("plateau_paper", "plateau_ratio_paper", "tau_paper"),
    "len_z {}",
    ("len_z",),
    kind=("plateau", "plateau_ratio", "tau"),
    names=("plateau", "plateau / log K", "tau"),
)
table10 = pairs(
    "table10.json",
    paper.TABLE10,
    ("anisotropy_original", "lambda_max_original"),
    kind=("anisotropy", "lambda"),
    names=("anisotropy", "lambda_max"),
    note=lambda rows: "; ".join(
        x
        for x in (
            k_list(rows, "anisotropy_original_filter", "with the original's checkpoint filter: "),
            k_list(rows, "anisotropy_lanczos", "converged (Lanczos) anisotropy: "),
        )
        if x
    ),
)
table11 = pairs(
    "table11.json",
    paper.TABLE11,
    "Q_original",
    "K = {}, lr {:g}",
    ("K", "lr"),
    kind="Q",
    note=lambda rows: (
        "ours, windowed by the evaluation set's swap gap (Q): "
        + "; ".join(f"K = {k[0]}, lr {k[1]:g}: {fmt(r['Q'])}" for k, r in rows.items() if num(r.get("Q")) is not None)
    ),
)


def fitted(name: str, fit: str, ref: float, ci: Any = None):
    """A reader of a fit's slope (the row ``fit``, paper definition) and its 95% bootstrap interval
    against ``ref``; the paper's interval and R^2 (``ci``: paper.FIT) and ours beside."""
    read = pairs(
        name,
        {f"{fit}, paper definition": ref},
        "slope",
        "delta",
        ("fit",),
        CI,
        kind="slope",
        how="95% bootstrap over runs",
        n="n",
    )

    def both(docs: Path) -> dict[str, Any]:
        got, row = read(docs), table_index(docs, name, "fit").get(f"{fit}, paper definition", {})
        said = f"R^2 {fmt(row['r2'], 2)}, n = {row.get('n')}" if num(row.get("r2")) is not None else ""
        return got | {"note": said} | ({"paper_note": f"95% CI {ci['ci']}, R^2 {ci['r2']}"} if ci else {})

    return both


figure4 = fitted("table3_fit.json", "tau ~ D^delta", paper.FIT["slope"], paper.FIT)
figure5 = fitted("fixed_d_fit.json", "tau ~ K^delta at fixed D", paper.FIXED_D_SLOPE)
lr_ratio = pairs(
    "lr_sweep_ratio.json",
    {"paper": paper.LR_RATIO},
    "ratio",
    "largest over smallest lr",
    ("definition",),
    kind="width",
    ratio_of=True,
)


def _runs(docs: Path) -> dict[int, list[dict[str, Any]]]:
    """The core recipe's ``paper``-preset run summaries (``recipe_log.json``) by K, seeds together."""
    by_k: dict[int, list[dict[str, Any]]] = {}
    for log in table_rows(docs, "recipe_log.json"):
        for name, s in log.get("summaries", {}).items():
            if name.startswith("paper_"):
                by_k.setdefault(s.get("K"), []).append(s.get("definitions", {}))
    return by_k


def _k_sweep(docs: Path) -> dict[int, list[dict[str, Any]]]:
    """The K sweep's runs (``table3.json``, every seed) by K."""
    by_k: dict[int, list[dict[str, Any]]] = {}
    for r in table_rows(docs, "table3.json"):
        by_k.setdefault(r.get("K"), []).append(r)
    return by_k


def spreads(docs: Path) -> dict[str, Pooled]:
    """Each quantity's pooled spread over our conditions with >= 3 runs (``verdicts.pooled``): tau,
    plateau and plateau / log K from the K sweep's seeds (the core recipe's seeds at a K the sweep
    has fewer of), the transition width from Table 4's conditions with every seed decided."""
    sweep, core = _k_sweep(docs), _runs(docs)
    conds: dict[str, dict[str, list]] = {"tau": {}, "plateau": {}, "plateau_ratio": {}}
    for k, rows in sweep.items():
        for kind, f in (("tau", "tau_paper"), ("plateau", "plateau_paper"), ("plateau_ratio", "plateau_ratio_paper")):
            conds[kind][f"the K sweep at K = {k}"] = [num(r.get(f)) for r in rows]
    for k, fams in core.items():
        if len(sweep.get(k, [])) < 3 and isinstance(k, int) and k > 1:
            paper_fam = [d.get("paper", {}) for d in fams]
            ratio = [num(d.get("plateau_ratio")) for d in paper_fam]
            conds["tau"][f"reproduce core at K = {k}"] = [num(d.get("tau")) for d in paper_fam]
            conds["plateau_ratio"][f"reproduce core at K = {k}"] = ratio
            conds["plateau"][f"reproduce core at K = {k}"] = [r * math.log(k) if r else None for r in ratio]
    widths = {
        f"Table 4 at K = {r.get('K')}, lr {r.get('lr'):g}": [num(w) for w in r.get("widths") or []]
        for r in table_rows(docs, "phase_boundary_table4.json")
        if r.get("definition") == "paper" and not r.get("undecided") and num(r.get("lr")) is not None
    }
    out = {k: pooled(v, log=k in vd.LOG_KINDS) for k, v in conds.items()} | {"width": pooled(widths, log=True)}
    out["tokens"] = out["tau"]  # tokens to tau are tau times a fixed batch size
    return {k: v for k, v in out.items() if v is not None}


def table3(docs: Path) -> dict[str, Any]:
    """tau per K over every run of the K sweep at that K (seeds where it has them), each run's
    crossing interval widening ours; a run recorded without its curves or short of its crossing
    named, with what cannot be recomputed."""
    by_k, pts, said = _k_sweep(docs), [], []
    for k, ref in paper.TABLE3.items():
        rows = by_k.get(k, [])
        live = [r for r in rows if num(r.get("tau_paper")) is not None]
        cross = [(r.get("tau_paper_lo"), r.get("tau_paper_hi")) for r in live if not r.get("tau_paper_exact")]
        short = [num(r.get("steps")) for r in rows if r.get("status") in ("finished", "running") and r not in live]
        bound = max((x for x in short if x), default=None) if not live else None
        pts.append(point(f"K = {k}", ref, [r["tau_paper"] for r in live], kind="tau", crossings=cross, censored=bound))
        said += [
            f"{r.get('run')}: recorded without its curves: tau cannot be recomputed "
            f"(retrain: `mi-plateau reproduce k_sweep --only {r.get('run')}`)"
            for r in rows
            if r.get("status") == NO_CURVES
        ]
        said += [f"{r.get('run')}: carried on in {r['carried_on']}" for r in live if r.get("carried_on")]
    return {"points": pts, "note": "; ".join(said)}


def table4(docs: Path) -> dict[str, Any]:
    """The mean width over three seeds of each condition whose seeds are all decided: our interval
    is for the mean of three new runs (sqrt(1/3 + 1/n) in place of sqrt(1 + 1/n)); the paper's std
    and CV and ours beside; the others' widths as a note."""
    rows, pts, part, sd = table_index(docs, "phase_boundary_table4.json", "K", "lr", definition="paper"), [], [], []
    for (_, k, lr), (mean, _) in paper.TABLE4.items():
        r, name = rows.get((k, lr), {}), f"K = {k}, lr {lr:g}"
        pts.append(point(name, mean, [] if r.get("undecided") else r.get("widths") or [], kind="width", of_mean=3))
        if r.get("widths") and r.get("undecided"):
            part.append(f"{name}: {' / '.join(map(fmt, r['widths']))}, {r['undecided']} seeds undecided")
        if num(r.get("std_width")) is not None and not r.get("undecided"):
            sd.append(f"{name}: std {fmt(r['std_width'])}, CV {fmt(100 * num(r.get('cv_width')))}%")
    cv = "; ".join(
        f"K = {k}, lr {lr:g}: std {fmt(s)}, CV {round(100 * s / m)}%" for (_, k, lr), (m, s) in paper.TABLE4.items()
    )
    note = "; ".join(
        x for x in ("ours: " + "; ".join(sd) if sd else "", "partial: " + "; ".join(part) if part else "") if x
    )
    return {"points": pts, "note": note, "paper_note": cv, "missing": "no condition decided yet"}


def table6(docs: Path) -> dict[str, Any]:
    """K = 10 at the paper's four checkpoints; K = 20 at the paper's two (48% and 73% of tau) against
    ours at 0.5 tau (the 73% checkpoint is not among ours)."""
    rows = [r for r in core_rows(docs, "table6") if r.get("definition") == "paper"]
    of = lambda K, t, f: [r.get(f) for r in rows if r.get("K") == K and r.get("target") == t]
    fields = zip(
        range(2, 5), ("ge80_pct", "eq100_pct", "mean_acc"), ("pct", "pct", "acc"), ("% >= 80", "% at 100", "mean acc")
    )
    fields = list(fields)
    pts = [
        point(f"K = {K}, {t} {name}", ref[i], of(K, t, f), kind=kind)
        for K, targets in ((10, TABLE6_TARGETS), (20, ("0.5 tau", "0.75 tau")))
        for t, ref in zip(targets, paper.TABLE6[K])
        for i, f, kind, name in fields
    ]
    return {"points": pts}


def table8(docs: Path) -> dict[str, Any]:
    rows, variant = (
        table_index(docs, "phase_boundary_table8.json", "K"),
        table_index(docs, "seeds_warmup_boundary.json", "K"),
    )
    undecided = ", ".join(str(k) for k, r in rows.items() if any(r.get("undecided") or []))
    fields = (("max all-succeed", "max_all_succeed"), ("min any-fail", "min_any_fail"), ("eta*", "eta_star"))
    return {
        "points": [
            point(f"K = {k} {name}", ref[i], [rows.get(k, {}).get(f)], kind="eta")
            for k, ref in paper.TABLE8.items()
            for i, (name, f) in enumerate(fields)
        ],
        "note": k_list(variant, "eta_star", "our variant (500 warm-up steps, crossing tau, 20,000-step budget): eta* "),
        "missing": f"no eta* yet: undecided runs at K = {undecided}" if undecided else "",
    }


def table9(docs: Path) -> dict[str, Any]:
    rows = [r for r in core_rows(docs, "table9") if r.get("definition") == "paper"]
    dl = lambda k, ph, h: [r.get("dL") for r in rows if (r.get("K"), r.get("phase"), r.get("head")) == (k, ph, h)]
    heads = [(k, ph, h, v) for k, phs in paper.TABLE9.items() for ph, hs in phs.items() for h, v in hs]
    pts = [point(f"K = {k} {ph} {h}", v, dl(k, ph, h), kind="dL") for k, ph, h, v in heads]
    firsts = [r for r in rows if r.get("rank") == 1 and r.get("phase") != "Post"]
    top = ", ".join(f"K = {r.get('K')} {r.get('phase')} {r.get('head')}" for r in firsts)
    return {"points": pts, "note": f"our top head: {top}" if top else ""}


def table12(docs: Path) -> dict[str, Any]:
    """Our verdict per hypothesis against the paper's (the first word: falsified, supported, ...)."""
    rows = [r for r in table_rows(docs, "table12.json") if r.get("verdict") not in (None, "not measured")]
    word = lambda v: str(v).split()[0].lower()  # "Falsified (confounded)" -> "falsified"
    count = lambda vs: "; ".join(f"{n} of {len(vs)} {v}" for v, n in Counter(map(word, vs)).items())
    agree = [word(r["verdict"]) == word(r.get("paper_verdict")) for r in rows]
    return {
        "paper": count([r["verdict"] for r in paper.TABLE12.values()]),
        "ours": count([r["verdict"] for r in rows]),
        "agree": agree,
        "n": f"{len(rows)} hypotheses",
    }


def figure1(docs: Path) -> dict[str, Any]:
    """Plateau / log K at Figure 1's Ks: the core recipe's seeds where it has runs, else the K sweep's."""
    runs, sweep = _runs(docs), _k_sweep(docs)

    def ratios(k: int) -> list:
        core = [d.get("paper", {}).get("plateau_ratio") for d in runs.get(k, [])]
        return core if len(core) >= len(sweep.get(k, [])) else [r.get("plateau_ratio_paper") for r in sweep[k]]

    pt = lambda k: point(f"K = {k}", paper.PLATEAU_RATIO, ratios(k), digits=paper.PLATEAU_DIGITS, kind="plateau_ratio")
    return {"points": [pt(k) for k in (5, 10, 20, 36)]}


def figure2b(docs: Path) -> dict[str, Any]:
    """The delay at p = 0.2 per K: by the original's 32-sample estimator where its replays are
    committed (``label_noise_estimator.json``: the median of the replays in their 5-95% range, or
    the share that never crossed), else by the exact crossing; where p = 0.2 has not crossed, the
    bound its last step gives (censored). The paper prints the other noise levels only in its
    figure, not as numbers."""
    rows = table_index(docs, "label_noise.json", "K", "label_noise")
    base = {k: num(r.get("tau_paper")) for (k, p), r in rows.items() if p == 0 and num(r.get("tau_paper"))}
    late = {k: num(r.get("steps")) for (k, p), r in rows.items() if p == 0.2 and k in base and not num(r.get("delay"))}
    est = {r.get("K"): r for r in table_rows(docs, "label_noise_estimator.json") if r.get("p") == 0.2}
    delay = [r.get("delay") for (k, p), r in rows.items() if p == 0.2 and k not in est and num(r.get("delay"))]
    pts = [point("p = 0.2", paper.LABEL_NOISE_DELAY, delay, kind="tau", ratio_of=True)] if delay else []
    pts += [
        point(f"K = {k}, p = 0.2 (no crossing by step {fmt(s)})", paper.LABEL_NOISE_DELAY, censored=s / base[k])
        for k, s in late.items()
        if s and k not in est
    ]
    by_estimator, said = [], []
    for k, r in sorted(est.items()):  # the estimator's delay: replay by replay where paired, else over tau(0)
        how = "paired" if r.get("p_le_16x_paired") is not None else "exact"
        q = [r.get(f"delay_{how}_q{x}") for x in ("50", "05", "95")]
        s, t0 = num(r.get("steps")), num(r.get("clean_tau_grid"))
        past = q[2] is None and s and t0 and q[0] is not None  # the 95th percentile lies past the run's end
        label = f"K = {k}, estimator median [5-95%" + ("; 95% past the run's end, shown at the end]" if past else "]")
        what = f"5-95% of {fmt(r.get('replays'))} estimator replays on one run" + (
            ", censored at the run's end" if past else ""
        )
        by_estimator.append(
            point(label, paper.LABEL_NOISE_DELAY, [q[0]], [q[1], s / t0] if past else q[1:], kind="tau", how=what)
        )
        pct = lambda key: fmt(100 * v) if (v := num(r.get(key))) is not None else "—"
        end = f"step {fmt(s)}" + (f" ({fmt(s / t0)}x tau(0))" if s and t0 else "")
        ends = [f"{x}% {'by ' + fmt(v) + 'x' if v is not None else 'past the run'}" for x, v in zip((5, 95), q[1:])]
        said.append(
            f"K = {k}: {pct('p_no_crossing')}% of {fmt(r.get('replays'))} estimator replays never crossed by {end}; "
            f"{', '.join(ends)}; {pct(f'p_le_16x_{how}')}% at most 16x"
        )
    same = (
        f"yes at K = {', '.join(map(str, sorted(est)))}: the original's 32-sample estimator, replayed on one run "
        "(our budget: see its share that never crossed); elsewhere our variant, the exact crossing"
        if est
        else None
    )
    note = "; ".join(said + ["the paper's other noise levels are drawn, not printed"])
    return {
        "points": pts + by_estimator,
        "estimator": by_estimator,
        "note": note,
        "said": "; ".join(said),
        "same": same,
    }


LEAD_KEY, LEAD_OURS = "lead_frac_original_0.1", "lead_frac_0.1"  # figure3_lead: the original's quantity, and Lc's


def figure3a(docs: Path) -> dict[str, Any]:
    """The sign of the lead (loss onset - z onset, the original's quantity: the training batch's
    first-token loss and its z-deranged gap) at each K with both onsets; the Ks without them named."""
    rows = table_rows(docs, "figure3_lead.json")
    led = [r for r in rows if num(r.get(LEAD_KEY)) is not None]
    pos = ", ".join(str(r.get("K")) for r in led if r[LEAD_KEY] > 0) or "none"
    rest = "; ".join(r.get("note") or f"K = {r.get('K')}: {r.get('status')}" for r in rows if r not in led)
    return {
        "paper": "the z-dependence onset leads the loss onset at every K (3 to 36)",
        "ours": f"leads at K = {pos} of {len(led)} K with both onsets" + (f"; {rest}" if rest else ""),
        "agree": [r[LEAD_KEY] > 0 for r in led],
        "n": f"{len(led)} K, one run each",
    }


def plateau(docs: Path) -> dict[str, Any]:
    """Plateau / log K per K of the K sweep, every seed."""
    pts = [
        point(
            f"K = {k}",
            paper.PLATEAU_RATIO,
            [r.get("plateau_ratio_paper") for r in rows],
            digits=paper.PLATEAU_DIGITS,
            kind="plateau_ratio",
        )
        for k, rows in sorted(_k_sweep(docs).items())
        if any(num(r.get("plateau_ratio_paper")) for r in rows)
    ]
    return {"paper": "1.000 (exactly log K) at every K", "points": pts}


def _mean_point(label: str, ref: float, xs: list[float], what: str) -> dict[str, Any]:
    """A mean over Ks against the paper's: the 95% interval of that mean (t over n - 1)."""
    if len(xs) < 2:
        return point(label, ref, xs[:1], kind="fraction", how=what)
    m, s = statistics.fmean(xs), statistics.stdev(xs)
    half = vd.t975(len(xs) - 1) * s / math.sqrt(len(xs))
    return point(
        label, ref, [m], (m - half, m + half), kind="fraction", n=len(xs), how=f"95% interval of the mean over {what}"
    )


def lead(docs: Path) -> dict[str, Any]:
    """The mean lead fraction over the Ks with a positive lead by the original's quantity (the
    paper's), its std (ddof 0) and n; ours by Lc on the evaluation set beside it."""
    rows = table_rows(docs, "figure3_lead.json")
    fr = lambda key: [x for x in (num(r.get(key)) for r in rows) if x is not None and x > 0]
    orig, ours = fr(LEAD_KEY), fr(LEAD_OURS)
    std = lambda xs: (
        f"{statistics.fmean(xs):.3f} +- {statistics.pstdev(xs):.3f} (std, ddof 0) over {len(xs)} K" if xs else "—"
    )
    return {
        "points": [_mean_point("mean over K", paper.LEAD_FRACTION, orig, f"{len(orig)} K with a positive lead")],
        "note": f"by the original's quantity: {std(orig)}; ours (Lc on the evaluation set): {std(ours)}",
    }


def noise(docs: Path) -> dict[str, Any]:
    """The abstract's 16x is Figure 2(b)'s p = 0.2 delay, read by the original's 32-sample
    estimator (SPEC 7): its replays where committed, as Figure 2(b)'s row reads them; beside them,
    or alone where none are committed, our variant, the exact crossing on the examples the noise
    left alone (``replays.noise``)."""
    runs = [r for d in table_rows(docs, "label_noise_split.json") for r in d.get("runs", []) if isinstance(r, dict)]
    tau = lambda r: num((r.get("kept") or {}).get("tau"))  # the crossing on the examples the noise left alone
    base = {r.get("K"): tau(r) for r in runs if r.get("label_noise") == 0 and tau(r)}
    delay = [tau(r) / base[r["K"]] for r in runs if r.get("label_noise") == 0.2 and tau(r) and r.get("K") in base]
    split = point("p = 0.2", paper.LABEL_NOISE_DELAY, delay, kind="tau", ratio_of=True)
    f2b = figure2b(docs)
    if not f2b["estimator"]:
        return {"points": [split]}
    variant = (
        f"our variant, the exact crossing on the examples the noise left alone: {fmt(delay[0], 2) if delay else '—'}"
    )
    return {"points": f2b["estimator"], "note": f"{f2b['said']}; {variant}", "same": f2b["same"]}


def _table1_steps(docs: Path) -> dict[int, float]:
    rows = table_index(docs, "table1.json", "B", definition="paper", compares=True)
    return {b: t for b, r in rows.items() if (t := num(r.get("tau_steps")))}


def tokens(docs: Path) -> dict[str, Any]:
    """Tokens to tau at B = 32 over the fewest at a larger B (the paper's 1.00x rows are its fewest)."""
    tau = {
        b: num(r.get("tau_examples_k"))
        for b, r in table_index(docs, "table1.json", "B", definition="paper", compares=True).items()
    }
    tau = {b: t for b, t in tau.items() if t}
    larger = [t for b, t in tau.items() if b > 32]
    ratio = [tau[32] / min(larger)] if 32 in tau and larger else []
    return {
        "points": [point("B = 32 over the fewest at a larger B", paper.TOKEN_RATIO, ratio, kind="tau", ratio_of=True)]
    }


def steps_ratio(docs: Path) -> dict[str, Any]:
    """The 23x: steps to tau at B = 32 over B = 512 (Table 1's step ratio)."""
    tau = _table1_steps(docs)
    ratio = [tau[32] / tau[512]] if 32 in tau and 512 in tau else []
    return {"points": [point("B = 32 over B = 512", paper.STEP_RATIO, ratio, kind="tau", ratio_of=True)]}


def monotone(docs: Path) -> dict[str, Any]:
    """ "Higher learning rates monotonically slow the transition": the width at each lr of the lr
    sweep (paper definition) above the width at the next smaller lr, pair by pair."""
    rows = sorted(
        (r for r in table_rows(docs, "lr_sweep.json") if r.get("definition") == "paper" and num(r.get("tau_width"))),
        key=lambda r: r["lr"],
    )
    agree = [b["tau_width"] > a["tau_width"] for a, b in zip(rows, rows[1:])]
    widths = ", ".join(f"lr {r['lr']:g}: {fmt(r['tau_width'])}" for r in rows)
    return {
        "paper": "the width grows with lr at every step of the sweep",
        "ours": f"widths {widths}" if rows else "not run",
        "agree": agree,
        "n": f"{len(rows)} lrs, one run each",
    }


def figure3b(docs: Path) -> dict[str, Any]:
    """The cosine of consecutive displacements per window (plateau, pre, post; windows by the
    first-token tau as the original's script takes them) at K = 10, 20 and 36 against the paper's
    reading, each window mean with the 95% interval of its mean over the window's points; the
    original code's own run (K = 10) beside. Explained where that run's window means lie inside our
    K = 10 intervals: the paper's reading is not what its own code measures."""
    rows = table_rows(docs, "figure3_descent.json")
    ours = {r.get("K"): r for r in rows if r.get("source", "ours") == "ours"}
    ref = next((r for r in rows if r.get("source") == REFERENCE), None)
    pts, said = [], []
    for k in (10, 20, 36):
        r = ours.get(k, {})
        if r and num(r.get("cos_plateau")) is None:
            said.append(f"K = {k}: {r.get('note') or r.get('status')}")
        for w, cos in zip(WINDOWS, paper.DESCENT_COS):
            v = num(r.get(f"cos_{w}"))
            how = f"95% interval of the window's mean over its {r.get(f'n_{w}')} points (one run)"
            iv = (r.get(f"cos_{w}_lo"), r.get(f"cos_{w}_hi"))
            pts.append(point(f"K = {k} {w}", cos, [v] if v is not None else [], iv, digits=2, kind="cos", how=how))
    inside = [
        p["iv"][0] <= num(ref.get(f"cos_{w}")) <= p["iv"][1]
        for p, w in zip(pts[:3], WINDOWS)
        if ref is not None and p["iv"] and num(ref.get(f"cos_{w}")) is not None
    ]
    if ref is not None:
        said.append(f"{REFERENCE} (K = 10): " + " / ".join(fmt(ref.get(f"cos_{w}"), 3) for w in WINDOWS))
    return {"points": pts, "note": "; ".join(said), "explained": bool(inside) and all(inside)}


REFERENCE = "the original code, its own run"  # figure3_descent's reference row (reproduce.figure3)
WINDOWS = ("plateau", "pre", "post")


# artifact, the quantity compared (a cell's " / " values in this order), its reader, the files linked
ROWS = (
    ("Table 1", "tau in steps by batch size B (B = 32 at K = 20; B >= 64 at K = 10, cosine)", table1, "table1.md"),
    ("Table 2", "tau_fwd / tau_bwd / their ratio / transfer", table2, "table2.md"),
    ("Table 3", "tau in steps (L_seq < 0.5 log K), n_b = 1000", table3, "table3.md recipe_log.json"),
    ("Table 4", "mean transition width over three seeds", table4, "phase_boundary_table4.md"),
    ("Table 5", "delta of tau ~ D^delta at threshold alpha log K [95% interval]", table5, "table5.md"),
    ("Table 6", "% of groups >= 80% / % at 100% / mean candidate accuracy (K = 10, 20)", table6, "tables.md"),
    ("Table 7", "plateau (mean L_seq, steps 100-500, nats) / plateau over log K / tau (K = 10)", table7, "table7.md"),
    (
        "Table 8",
        "max all-succeed lr, min any-fail lr, eta* (the critical learning rate)",
        table8,
        "phase_boundary_table8.md seeds_warmup_boundary.md",
    ),
    ("Table 9", "Delta L (nats) of the paper's top heads at Pre and Mid", table9, "tables.md"),
    ("Table 10", "anisotropy / lambda_max on the plateau, the original's estimator", table10, "table10.md"),
    ("Table 11", "gradient dissipation Q", table11, "table11.md"),
    ("Table 12", "verdicts on the six tested mechanisms", table12, "table12.md"),
    ("Figure 1", "plateau / log K (mean L_seq, steps 100-500)", figure1, "figure1.svg recipe_log.json"),
    ("Figure 2(a)", "tokens to tau in thousands by batch size B (as Table 1)", figure2a, "table1.md"),
    ("Figure 2(b)", "delay tau(p) / tau(0) at label noise p", figure2b, "label_noise.md label_noise_estimator.md"),
    ("Figure 3(a)", "z-dependence onset before the loss onset", figure3a, "figure3_lead.md"),
    (
        "Figure 3(b)",
        "cosine of consecutive displacements by window (plateau, pre, post)",
        figure3b,
        "figure3_descent.md",
    ),
    ("Figure 4", "delta of tau ~ D^delta [95% interval]", figure4, "table3_fit.md"),
    ("Figure 5", "delta of tau ~ K^delta at fixed D [95% interval]", figure5, "fixed_d_fit.md"),
    ("Claim: plateau at log K", "plateau / log K (mean L_seq, steps 100-500), K sweep", plateau, "table3.md"),
    ("Claim: 3.6x over 7x in lr", "transition width at lr 2e-3 over lr 3e-4 (K = 20)", lr_ratio, "lr_sweep_ratio.md"),
    (
        "Claim: ~50% lead",
        "mean lead fraction of the z-dependence onset over the Ks with a positive lead",
        lead,
        "figure3_lead_summary.md",
    ),
    ("Claim: 16x label noise", "delay at p = 0.2", noise, "label_noise_estimator.md label_noise_split.json"),
    ("Claim: 1.8x tokens", "tokens to tau at B = 32 over the fewest at a larger B", tokens, "table1.md"),
    ("Claim: 23x steps", "steps to tau at B = 32 over B = 512", steps_ratio, "table1.md"),
    ("Claim: monotonically", "higher lr slows the transition at every step of the lr sweep", monotone, "lr_sweep.md"),
)
# what ours measures where it is not simply the paper's quantity ("yes")
SAME = {
    "Table 1": "yes at B = 32 (K = 20, clipped, as the original); at B >= 64 our K = 10 cosine runs, what the "
    "paper's rows most likely are (SPEC 7); our K = 20 runs at B >= 64 are in table1.md",
    "Figure 2(a)": "yes, read as Table 1: B = 32 at K = 20, B >= 64 our K = 10 cosine runs (SPEC 7)",
    "Claim: 1.8x tokens": "yes, read as the paper's rows most likely are (SPEC 7): B = 32 at K = 20 over our "
    "K = 10 cosine runs at B >= 64, two Ks in one ratio",
    "Claim: 23x steps": "yes, read as Table 1 (SPEC 7): B = 32 at K = 20 over our K = 10 cosine run at B = 512",
    "Table 2": "our variant: tau_fwd on the evaluation set's L1 at checkpoints, not the training first-token loss",
    "Table 10": "our variant: plateau checkpoints snapped to ours; the original's filter (its 100-step grid, strictly "
    "before 0.8 tau) applied to ours in the note",
    "Table 11": "yes (Q_original: the training batch's z-deranged gap; the lr 1e-3 cells unclipped, a checkpoint "
    "every 50 steps, the others clipped, every 200; SPEC 8); a cell whose window has not closed (not run, or on "
    "the plateau at its last step: table11.md) is empty",
    "Figure 1": "yes; our first-token variant (Lc) is in recipe_log.json",
    "Figure 2(b)": "our variant: the exact crossing of the clean L_seq, not the 32-sample estimator's (SPEC 7)",
    "Figure 3(a)": "yes: the original's onsets, the training batch's full-vocabulary first-token loss and its "
    "z-deranged gap (SPEC 5), on the lead sweep's runs (docs/sweeps/lead_sweep.toml); a K whose log entry keeps no "
    "such series is named",
    "Figure 3(b)": "yes: windows by the first-token tau as the original's script takes it (SPEC 5); the paper "
    "prints no number (its reading: ~0 on the plateau, ~0.8 around tau); our per-group variant: figure3.svg",
    "Claim: plateau at log K": "yes; our first-token variant (Lc) is in table3.md",
    "Claim: ~50% lead": "yes: the original's quantity (Figure 3(a)); ours by Lc on the evaluation set in the note, "
    "the routing head's lead in tables.md",
    "Claim: 16x label noise": "our variant: the exact crossing on the examples the noise left alone (no estimator "
    "replays committed)",
}
# rows whose difference a doc section explains: the reason, the section (relative to the page)
EXPLAINED = {
    "Table 10": (
        "the original's power iteration stops near the spectrum's mean",
        "mechanisms.md#what-the-original-estimator-measures",
    ),
    "Figure 1": (
        "L_seq is log K plus a KL term",
        "reproduction.md#table-3-k-column-and-table-7-tau-and-plateau-height",
    ),
    "Claim: plateau at log K": (
        "L_seq is log K plus a KL term; below K = 10 the window holds the rise before the escape",
        "reproduction_sweeps.md#table-3-figure-4-and-table-5-the-k-sweep-mi-plateau-reproduce-k_sweep",
    ),
    "Figure 3(b)": (
        "the paper's original code, run on its own K = 10 config, reads what ours reads, not the paper's 0.8",
        "reproduction/figure3_descent.md",
    ),
}
# the committed files the rows read, under the docs folder
SOURCES = tuple(
    "table1.json table2.json table3.json recipe_log.json phase_boundary_table4.json table5.json tables.json "
    "table7.json phase_boundary_table8.json seeds_warmup_boundary.json table10.json table11.json table12.json "
    "label_noise.json label_noise_estimator.json "
    "figure3_lead.json figure3_descent.json table3_fit.json fixed_d_fit.json lr_sweep_ratio.json "
    "figure3_lead_summary.json label_noise_split.json lr_sweep.json".split()
)


def _marker(same: str) -> str:
    """The forest plot's marker class of a row's ``same_quantity`` text."""
    return next((m for m in ("our variant", "reduced budget") if same.startswith(m)), "yes")


def _n(judged: list[dict[str, Any]]) -> str:
    """The runs behind a row's numbers: one count, or the smallest to the largest."""
    ns = sorted({j["n"] for j in judged if j["n"]})
    return "—" if not ns else str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"


def judged_rows(docs: str | Path) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The page's rows (``ROWS``: the paper's value, ours with its interval and n, the same quantity
    or not, the verdict and its reason, the files) and every compared point as the forest plot
    draws it (artifact, label, paper, ours, lo, hi, n, verdict, same, note)."""
    docs, out, points = Path(docs), [], []
    sp = spreads(docs)
    for artifact, what, read, links in ROWS:
        got = {"points": [], **read(docs)}
        why_ex = EXPLAINED.get(artifact) if got.get("explained", True) else None
        judged = [vd.judge(p, sp, explained=bool(why_ex)) for p in got["points"]]
        v, why = vd.row_verdict(judged, got.get("agree"))
        if v == vd.NOT_RUN and got.get("missing"):
            why = got["missing"]
        if why_ex and vd.EXPLAINED in {j["verdict"] for j in judged}:
            why += f"; {why_ex[0]} ([{Path(why_ex[1].split('#')[0]).name}]({why_ex[1]}))"
        same = got.get("same") or SAME.get(artifact, "yes")
        paper_cell = got.get("paper") or cells(judged, paper_text)
        ours = got.get("ours") or cells(judged) or "not run"
        out.append(
            {
                "artifact": f"{artifact}: {what}",
                "paper": f"{paper_cell}; {got['paper_note']}" if got.get("paper_note") else paper_cell,
                "ours": f"{ours}; {got['note']}" if got.get("note") else ours,
                "n": got.get("n") or _n(judged),
                "same_quantity": same,
                "verdict": v,
                "why": why,
                "files": ", ".join(f"{docs.name}/{f}" for f in links.split()),
            }
        )
        points += [
            {
                "artifact": artifact,
                "label": j["label"],
                "paper": j["ref"],
                "ours": j["est"],
                "lo": j["lo"],
                "hi": j["hi"],
                "n": j["n"],
                "verdict": j["verdict"],
                "same": _marker(same),
                "note": "; ".join(x for x in (j["how"], j["distance"]) if x),
            }
            for j in judged
            if j["ref"] is not None
        ]
    return out, points


def scorecard(docs: str | Path) -> list[dict[str, str]]:
    """The page's rows (``judged_rows``)."""
    return judged_rows(docs)[0]


FOREST = "scorecard_forest.svg"  # the forest plot, under the docs folder, heading the page and the README
POINTS = "scorecard_points.json"  # every compared point as the forest plot draws it


def verdict_counts(rows: list[dict[str, Any]]) -> str:
    """The rows by verdict, in the rule's order: "5 consistent, 3 differs, ..."."""
    got = Counter(r["verdict"] for r in rows)
    return ", ".join(f"{got[v]} {v}" for v in vd.VERDICTS if got[v])


def write_scorecard(
    docs: str | Path = "docs/reproduction", static: bool | None = None, report: str | Path | None = None
) -> tuple[list[dict[str, str]], list[Path]]:
    """``mi-plateau reproduce scorecard``: the page ``scorecard.md`` one folder above ``docs``, its
    rows as ``scorecard.csv`` and ``.json`` and its points as ``scorecard_points.json`` in ``docs``,
    and the forest plot ``scorecard_forest.svg`` (``static`` as in ``tabular.write_figures``: where
    a browser is found by default); ``report``: also the interactive page (an HTML file) there.
    Returns the rows and the paths written."""
    from ..checkpoints import atomic_write_text
    from ..figures import forest
    from ..tabular import write_figures

    docs = Path(docs)
    rows, points = judged_rows(docs)
    link = lambda files: ", ".join(f"[{Path(f).name}]({f})" for f in files.split(", "))
    page = to_markdown([{**r, "files": link(r["files"])} for r in rows])
    paths = [docs.parent / PAGE, docs / f"{STEM}.csv", docs / f"{STEM}.json", docs / POINTS]
    counts = Counter(p["verdict"] for p in points)
    head = (
        f"![The forest plot: each number of ours against the paper's]({docs.name}/{FOREST})\n\n"
        f"Rows by verdict: {verdict_counts(rows)}. Points by verdict: "
        + ", ".join(f"{counts[v]} {v}" for v in vd.VERDICTS if counts[v])
        + f" ({len(points)} numbers of the paper). Every point, with our interval, n and how the interval was "
        f"made: [{POINTS}]({docs.name}/{POINTS})."
    )
    atomic_write_text(paths[0], f"# Scorecard: the paper beside ours\n\n{INTRO}\n\n{head}\n\n{page}\n{RULES}\n")
    atomic_write_text(paths[1], to_csv(rows))
    atomic_write_text(paths[2], json.dumps(rows, indent=1) + "\n")
    atomic_write_text(paths[3], json.dumps(points, indent=1) + "\n")
    fig = forest(points)
    done, _ = write_figures([(docs / FOREST, fig, {})], static)
    if report is not None:
        from ..report import scorecard_report

        done.append(scorecard_report(Path(report), points, rows, note=RULES))
    return rows, paths + done
