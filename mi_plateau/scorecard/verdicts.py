"""The scorecard's one verdict rule (SPEC section 10): where one run of ours would fall, and whether
the paper's value lies there.

A compared point holds the paper's value and ours: one value per run (n runs), or one estimate
with its own 95% interval (a fit's bootstrap over runs, a mean over Ks), and, for crossing times,
each run's crossing interval. ``judge`` turns it into our interval for one run:

- n >= 3 runs: the 95% prediction interval for one new run, m +- t(0.975, n - 1) s sqrt(1 + 1/n),
  on the log scale for times and ratios (``LOG_KINDS``), else on the value's own scale (where the
  paper's value is itself a mean of m runs, Table 4, sqrt(1/m + 1/n));
- n < 3: the same with s from the quantity's pooled spread (``pooled``) over the conditions that
  have >= 3 runs (named in ``how``; a ratio of two runs' values sqrt 2 times it): on the log
  scale the pooled sd of log values (a coefficient of variation), else the pooled coefficient of
  variation times our value; t at the pooled degrees of freedom. No condition with >= 3 runs: no
  interval, and the verdict says so;
- each run's crossing interval widens it in quadrature (the root mean square of their half-widths
  on the same scale).

The verdict of a point, first that applies:
*not run* (no number of ours); *inconclusive*: censored (our runs stopped, or have not decided,
before the quantity could reach the paper's value; a bound already past it *differs*), or no
interval (one run, no pooled spread); *differs* (ours / paper and the distance in interval
half-widths), or *differs, explained* where a committed measurement says why: the paper's value
outside our interval (its ends rounded to the decimals the paper prints), however wide;
*inconclusive*: inside an interval whose ends differ by more than a factor 2 (log-scale
quantities); *consistent*: inside.
A row's verdict is its points' most severe (``SEVERITY``), with the count of each; the paper's
yes/no claims read *same verdict* or *other verdict*.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

CONSISTENT, DIFFERS, EXPLAINED, INCONCLUSIVE = "consistent", "differs", "differs, explained", "inconclusive"
SAME, OTHER, NOT_RUN = "same verdict", "other verdict", "not run"
VERDICTS = (CONSISTENT, DIFFERS, EXPLAINED, INCONCLUSIVE, SAME, OTHER, NOT_RUN)
SEVERITY = (DIFFERS, EXPLAINED, INCONCLUSIVE, CONSISTENT)  # a row takes its most severe point's verdict
WIDE = 2.0  # an interval whose ends differ by more than this factor decides nothing
MIN_RUNS = 3  # runs of one condition behind its own prediction interval (fewer: the pooled spread)
# quantities compared on the log scale: times, counts of tokens, and ratios of them
LOG_KINDS = frozenset({"tau", "width", "tokens", "ratio", "delay", "anisotropy", "lambda", "Q", "eta"})


@dataclass(frozen=True)
class Pooled:
    """A quantity's spread over the conditions with >= 3 runs: ``sd`` (log scale: the pooled sd of
    log values; else the pooled coefficient of variation), its degrees of freedom and its basis."""

    sd: float
    df: int
    basis: str


def num(v: Any) -> float | None:
    """A finite number, or None (a blank, a dash, text)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fmt(v: Any, dec: int = 0) -> str:
    """A number as the page writes it: whole thousands with separators, else 3 significant digits
    or ``dec`` decimals, whichever shows more; a missing one as a dash."""
    x = num(v)
    if x is None:
        return "—"
    if abs(x) >= 1000 or (x.is_integer() and abs(x) >= 100):
        return f"{round(x):,}"
    return max(f"{x:.3g}", f"{x:.{dec}f}" if dec else "", key=len)


def decimals(x: Any) -> int:
    """The decimals of a number as printed (its shortest repr): 3.6 -> 1, 23200 -> 0."""
    text = repr(x)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t  # scipy: loaded when a verdict is computed, not with the CLI

    return float(t.ppf(0.975, df))


def pooled(conditions: dict[str, list[float]], log: bool) -> Pooled | None:
    """The pooled spread of one quantity over ``conditions`` (name -> one value per run) with >= 3
    positive runs (log) or >= 3 runs and a nonzero mean (linear): sum (n_i - 1) s_i^2 over
    sum (n_i - 1), on log values or on s_i / |m_i|; None where no condition qualifies."""
    ss, df, used = 0.0, 0, []
    for name, vals in conditions.items():
        vals = [v for v in vals if v is not None and math.isfinite(v) and (v > 0 or not log)]
        if len(vals) < 3 or (not log and statistics.fmean(vals) == 0):
            continue
        ys = [math.log(v) for v in vals] if log else vals
        s = statistics.stdev(ys) if log else statistics.stdev(ys) / abs(statistics.fmean(ys))
        ss, df = ss + (len(vals) - 1) * s * s, df + len(vals) - 1
        used.append(f"{name} ({len(vals)} runs)")
    if not df:
        return None
    return Pooled(math.sqrt(ss / df), df, ", ".join(used))


def point(
    label: str,
    ref: Any,
    ours: Any = (),
    interval: Any = None,
    digits: int | None = None,
    *,
    kind: str = "",
    crossings: Any = (),
    censored: Any = None,
    how: str = "",
    n: int | None = None,
    note: str = "",
    of_mean: int = 1,
    ratio_of: bool = False,
    pending: str = "",
) -> dict[str, Any]:
    """One comparison: the paper's ``ref`` and ours, one value per run (``ours``), or one estimate
    with its 95% ``interval`` (``how`` names it; ``n`` the runs or Ks behind it); ``kind`` the
    quantity (its pooled spread and scale); ``crossings`` each run's (lo, hi) crossing interval;
    ``censored`` our lower bound where the runs stopped before the quantity was reached;
    ``of_mean``: the paper's value is a mean of this many runs (the interval is for such a mean);
    ``ratio_of``: the value is a ratio of two runs' values of ``kind`` (a pooled spread sqrt 2 wider);
    ``pending``: what our runs have not decided yet, where they have no value (censored);
    compared at ``digits`` decimals (default: those the paper prints)."""
    vals = [x for x in map(num, ours) if x is not None]
    iv = tuple(map(num, interval)) if interval and None not in map(num, interval) else None
    cr = [(num(a), num(b)) for a, b in crossings or ()]
    return {
        "label": label,
        "ref": num(ref),
        "vals": vals,
        "iv": iv,
        "digits": decimals(ref) if digits is None else digits,
        "kind": kind,
        "crossings": [c for c in cr if None not in c],
        "censored": num(censored),
        "how": how,
        "n": n if n is not None else (len(vals) if vals else 0),
        "note": note,
        "of_mean": of_mean,
        "ratio_of": ratio_of,
        "pending": pending,
    }


def _scale(p: dict[str, Any]) -> tuple[bool, Any, Any]:
    """Log scale for a log kind with every value positive, else the values' own."""
    log = p["kind"] in LOG_KINDS and all(v > 0 for v in p["vals"] + list(p["iv"] or ()))
    return (log, math.log, math.exp) if log else (log, float, float)


def prediction_half(vals: list[float]) -> float:
    """The half-width of the 95% prediction interval for one new run from >= ``MIN_RUNS`` runs'
    values (their own scale): t(0.975, n - 1) s sqrt(1 + 1/n)."""
    n = len(vals)
    return t975(n - 1) * statistics.stdev(vals) * math.sqrt(1 + 1 / n)


def judge(p: dict[str, Any], spreads: dict[str, Pooled] | None = None, explained: bool = False) -> dict[str, Any]:
    """``p`` with our interval for one run (``est``, ``lo``, ``hi``, ``how``) and its ``verdict``
    by the module's rule (``explained``: a committed measurement says why ours differs)."""
    out = {**p, "est": None, "lo": None, "hi": None, "verdict": NOT_RUN, "distance": ""}
    if p["ref"] is None:
        return out | {"verdict": NOT_RUN, "distance": "the paper prints no number here"}
    if not p["vals"] and p.get("pending"):  # runs that exist but have not decided the quantity yet
        return out | {"verdict": INCONCLUSIVE, "distance": f"censored: {p['pending']}"}
    if not p["vals"] and p["censored"] is None:
        return out
    if not p["vals"]:  # only a bound: our runs stopped before the quantity was reached
        b = p["censored"]
        if b > p["ref"] > 0:
            return out | {"verdict": DIFFERS, "distance": f"ours > {_num(b)}, past the paper's {_num(p['ref'])}"}
        return out | {"verdict": INCONCLUSIVE, "distance": f"censored: ours > {_num(b)} (the run stopped first)"}
    log, fwd, back = _scale(p)
    ys = [fwd(v) for v in p["vals"]]
    m, n = statistics.fmean(ys), len(ys)
    half, how = None, p["how"]
    if p["iv"]:
        lo, hi = p["iv"]
        half, m = None, fwd(p["vals"][0])
        how = how or "95% interval"
    else:
        spread = (spreads or {}).get(p["kind"])
        if n >= MIN_RUNS:
            s, df, how = statistics.stdev(ys), n - 1, how or f"prediction interval over {n} runs"
        elif spread:
            s = (spread.sd if log else spread.sd * abs(m)) * (math.sqrt(2) if p.get("ratio_of") else 1)
            of = f"a ratio of two runs' {p['kind']}, " if p.get("ratio_of") else ""
            df, how = spread.df, how or f"{of}pooled {'sd of log ' if log else 'CV of '}{p['kind']}: {spread.basis}"
        else:
            s, df = None, 0
        if s is not None:
            half = t975(df) * s * math.sqrt(1 / p.get("of_mean", 1) + 1 / n)
            widen = [(fwd(b) - fwd(a)) / 2 for a, b in p["crossings"] if not log or a > 0]
            if widen:
                half = math.hypot(half, math.sqrt(statistics.fmean(w * w for w in widen)))
                how += "; widened by the crossing intervals"
        lo, hi = (back(m - half), back(m + half)) if half is not None else (None, None)
    out |= {"est": back(m), "lo": lo, "hi": hi, "how": how}
    if lo is None:
        why = f"{n} run{'s' if n > 1 else ''} and no pooled spread of {p['kind'] or 'this quantity'}"
        return out | {"verdict": INCONCLUSIVE, "distance": why}
    d = p["digits"]
    if not round(lo, d) <= p["ref"] <= round(hi, d):  # outside: a difference, however wide the interval
        return out | {"verdict": EXPLAINED if explained else DIFFERS, "distance": _distance(p["ref"], out, log, fwd)}
    if log and hi > WIDE * lo:  # inside, but an interval this wide decides nothing
        span = hi / lo
        return out | {
            "verdict": INCONCLUSIVE,
            "distance": f"our interval spans {span:.1f}x" if span < 100 else "our interval spans over 100x",
        }
    return out | {"verdict": CONSISTENT}


def _distance(ref: float, j: dict[str, Any], log: bool, fwd) -> str:
    """Ours / paper (ours - paper where a ratio means nothing) and the distance in half-widths."""
    c, lo, hi = fwd(j["est"]), fwd(j["lo"]), fwd(j["hi"])
    r = fwd(ref) if (not log or ref > 0) else None
    if r is None:
        return f"ours {_num(j['est'])} against the paper's {_num(ref)}"
    half = (hi - c) if r > c else (c - lo)
    away = abs(r - c) / half if half > 0 else math.inf
    what = f"ours / paper {j['est'] / ref:.2f}" if ref > 0 and j["est"] > 0 else f"ours - paper {j['est'] - ref:+.3g}"
    return f"{what}, {away:.1f} half-widths"


def _num(x: float) -> str:
    return fmt(x, 2)


def row_verdict(judged: list[dict[str, Any]], agree: list[bool] | None = None) -> tuple[str, str]:
    """A row's verdict and its reason: the paper's yes/no in every case (``agree``), else its points'
    most severe verdict with the count of each and the first point of that verdict named."""
    if agree:
        ok = sum(agree)
        return (SAME if ok == len(agree) else OTHER), f"the paper's verdict or sign in {ok} of {len(agree)} cases"
    run = [j for j in judged if j["verdict"] != NOT_RUN]
    if not run:
        return NOT_RUN, "no number of ours yet"
    counts = Counter(j["verdict"] for j in run)
    worst = next(v for v in SEVERITY if counts[v])
    tally = ", ".join(f"{counts[v]} {v}" for v in SEVERITY if counts[v])
    missing = len(judged) - len(run)
    tally += f", {missing} not run" if missing else ""
    first = next(j for j in run if j["verdict"] == worst)
    said = f"; {first['label']}: {first['distance']}" if first["distance"] else ""
    return worst, f"{tally} (of {len(judged)} points){said}"
