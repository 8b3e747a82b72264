"""The Python API: the same operations as the command line, returning data instead of text."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from .checkpoints import Run, RunError, refuse_inside_run
from .config import AnalysisConfig, RunOptions, compare_name
from .config.layout import token_labels
from .config.options import with_old_keywords
from .frames import records
from .interventions import head_ablation_named
from .outputs import write_comparison, write_run_analysis
from .passes.analyze import (
    analyze_run,
    eval_set_on,
    figure3_paper,
    pass_config_of,
    passes_on,
    run_outputs,
    weights_for,
)
from .passes.bootstrap import head_bootstrap, swap_gap_intervals
from .replays.exact_check import exact_check as replayed_exact_check

# The original's estimator replayed (numpy only, so imported here): the passes' own functions take
# a run folder or a Run and return plain dicts already, so the API is those functions themselves.
from .replays.sampled import sampled_tau as sampled_tau
from .replays.sampled import sampled_width as sampled_width
from .settle import run_summary
from .summaries import nan_to_none


def summary(run: str | os.PathLike | Run) -> dict[str, Any]:
    """Plateau height, tau and convergence of a run, computed from its checkpoint records.

    Keys include K, log_K, plateau_loss, plateau_ratio, tau, tau_examples, alpha, converged,
    last_step, n_checkpoints. NaN values become None so the dict is valid JSON.
    """
    return run_summary(run if isinstance(run, Run) else Run(run))


def exact_check(run: str | os.PathLike | Run, *, progress: bool = False) -> dict[str, Any]:
    """Are the settled crossings of this run the all-exact ones? Every checkpoint up to the
    lowest crossing scored on the full evaluation set, each default question (tau at eval.alpha
    and Table 5's alphas, the width) and both families' clocks compared (``settle``)."""
    return replayed_exact_check(run if isinstance(run, Run) else Run(run), progress=progress)


def spacing_check(run: str | os.PathLike | Run, *, ckpt_every_max: int) -> dict[str, Any]:
    """Would ``train.ckpt_every_max = ckpt_every_max`` have kept every tau and width of this densely
    checkpointed run? Its records replayed under the widening spacing (``replays.spacing``)."""
    from .replays.spacing import spacing_check as check  # here, not at the top: it imports torch

    return nan_to_none(check(run if isinstance(run, Run) else Run(run), ckpt_every_max))


TABLE6_NOTE = (
    "definition paper: a group's accuracy = fraction of its K examples whose target string scores highest among the "
    "group's K candidate strings, at fractions of the L_seq tau; first_token: fraction whose four A tokens are all the "
    "teacher-forced argmax, at fractions of the Lc tau. 200 fixed groups. Columns paper_* are the paper's Table 6 row "
    "nearest in fraction of tau (reference only)."
)


def table9_note(head_ablation: str = "zero") -> str:
    """Table 9's note, naming what the head ablation ``head_ablation`` (a registered one) does."""
    return (
        "Delta L (nats, the paper's) = full-vocabulary mean cross-entropy over A1..A4 and EOS with the head's "
        f"{head_ablation_named(head_ablation).legend}, minus clean; Delta Lc the same for the first-token candidate "
        "loss. definition paper: ranked by Delta L at tau/4, tau, 2 tau of the L_seq tau; first_token: ranked by "
        "Delta Lc at those fractions of the Lc tau. Columns paper_* are the paper's Table 9 (reference only)."
    )


def analyze(
    runs,
    out: str | os.PathLike = "analyses",
    *,
    progress: bool = True,
    pass_config: AnalysisConfig | None = None,
    with_figure3: bool = False,
    options: RunOptions | None = None,
    **old,
) -> dict[str, Any]:
    """Run every pass over each run (on ``options.device``: ``devices.resolve``); write Tables 6 and 9 (md, csv,
    json), Figure 3 (HTML), the tidy pass tables and routing.json under ``out/<run name>/``, and a comparison folder
    ``out/compare_<names>/`` when several runs are given, the passes as ``pass_config`` sets them (the
    analysis section, ``config.AnalysisConfig``; default: its defaults). Returns paths and headline numbers.
    (``device=`` and ``max_head_checkpoints=`` are accepted for one release, with a DeprecationWarning.)"""
    pc = pass_config_of(pass_config, old, "analyze")
    options = with_old_keywords(options, old, "analyze")
    if isinstance(runs, (str, os.PathLike, Run)):
        runs = [runs]
    out = Path(out)
    refuse_inside_run(out, "analysis")
    result: dict[str, Any] = {"runs": {}}
    all_t6, all_t9, all_f3, all_routing = [], [], {}, []
    for r in runs:
        run = r if isinstance(r, Run) else Run(r)
        cfg = run.config()
        s = summary(run)
        name = run.name
        if name in result["runs"]:
            raise RunError(f"{run.path}: two runs named {name!r}; their analyses would share analyses/{name}/")
        folder = out / name
        tables = analyze_run(run, folder, pc, progress=progress, options=options)
        o = run_outputs(name, cfg, s, tables, pc)
        o["figure3_paper"] = figure3_paper(run, tables["checkpoint"], pc.delta)
        if o["figure3_paper"]["b_error"] and progress:
            print(f"Figure 3(b): {o['figure3_paper']['b_error']}", file=sys.stderr)
        paths = write_run_analysis(folder, name, tables, o, TABLE6_NOTE, table9_note(pc.head_ablation))
        result["runs"][name] = {
            "summary": s,
            "routing": o["routing"],
            "folder": str(folder),
            "files": [str(p) for p in paths],
            "figure3_onsets_original": o["figure3_paper"]["onsets_original"],  # Figure 3(a): the original's lead
            "figure3_onsets": o["figure3_paper"]["onsets"],  # ours, on Lc
            "figure3_windows": o["figure3_paper"]["windows"],  # its (b): the displacement cosine by window
        }
        if with_figure3:  # the data behind figure3.html, for callers that plot it again
            result["runs"][name]["figure3"] = o["figure3"]
            result["runs"][name]["figure3_paper"] = o["figure3_paper"]
        all_t6 += records(o["table6"])
        all_t9 += records(o["table9"])
        all_f3[name] = o["figure3"]
        all_routing.append(o["routing"])
    if len(runs) > 1:
        names = list(result["runs"])
        folder = out / compare_name(names)
        write_comparison(folder, all_t6, all_t9, all_routing, all_f3, TABLE6_NOTE, table9_note(pc.head_ablation))
        result["comparison"] = str(folder)
    return nan_to_none(result)


def _checkpoint_at(run: Run, step: int | None, options: RunOptions):
    """The checkpoint nearest ``step`` (None: the last; a snapped step says so on stderr): the
    config, the step, its weights and the evaluation set, both on ``options.device``, and the
    device."""
    cfg = run.config()
    steps = run.steps()
    if not steps:
        raise RunError(f"{run.path / 'manifest.json'}: the run has no checkpoints yet")
    s = steps[-1] if step is None else run.nearest_step(step)
    if step is not None and s != step:
        print(f"nearest checkpoint to {step}: {s}", file=sys.stderr)
    ev, dev = eval_set_on(cfg, options)
    return cfg, s, weights_for(run, s, cfg, dev), ev, dev


def _intervals(out: dict, n_boot: int, seed: int) -> tuple[dict, list[dict]]:
    """One checkpoint's passes with 95% bootstrap intervals over groups: the swap gaps
    (``swap_gap_lo``/``_hi``, ``swap_gap_seq_lo``/``_hi``) and each head's Delta L
    (``dL_lo``/``_hi`` and ``top_share``, the share of resamples where it has the largest)."""
    ck = dict(out["checkpoint"][0])
    for r in records(swap_gap_intervals(out["groups"], n_boot, seed)):
        ck.update({k: v for k, v in r.items() if k != "step"})
    per: dict[str, list[float]] = {}
    for r in out.get("head_groups", []):
        if r.get("dL") is not None and r["dL"] == r["dL"]:
            per.setdefault(r["head"], []).append(r["dL"])
    ci = head_bootstrap(per, n_boot, seed) if per else {}
    heads = [
        {
            **r,
            **(
                {"dL_lo": ci[r["head"]]["lo"], "dL_hi": ci[r["head"]]["hi"], "top_share": ci[r["head"]]["top_share"]}
                if r["head"] in ci
                else {}
            ),
        }
        for r in out["heads"]
    ]
    return ck, heads


def inspect(
    run,
    step: int | None = None,
    head: str | None = None,
    n_examples: int = 3,
    n_boot: int = 1000,
    seed: int = 0,
    options: RunOptions | None = None,
    **old,
) -> dict[str, Any]:
    """Per-head scores at the checkpoint nearest ``step``: selector attention (minus baseline),
    ablation Delta L (the paper's) / Delta Lc / Delta L1, swap contribution and causal share of
    the swap gap; the checkpoint's losses in both families. With
    ``head`` (e.g. "L0H3"), also that head's attention pattern on ``n_examples`` examples.
    The swap gaps and Delta L carry 95% bootstrap intervals over groups (``n_boot`` resamples,
    ``seed``; ``_lo``/``_hi`` keys, and ``top_share`` per head). On ``options.device``
    (``device=``: deprecated, as in ``analyze``)."""
    options = with_old_keywords(options, old, "inspect")
    from .model import parse_head  # here, not at the top: model imports torch (summary runs without it)

    run = run if isinstance(run, Run) else Run(run)
    cfg, s, W, ev, dev = _checkpoint_at(run, step, options)
    if head is not None:
        layer, h = parse_head(head, cfg.model.n_layers, cfg.model.n_heads)
    out = passes_on(dev, W, ev, step=s)
    ck, heads = _intervals(out, n_boot, seed)
    res: dict[str, Any] = {"run": run.name, "step": s, "checkpoint": ck, "heads": heads, "patching": out["patching"]}
    if head is not None:
        from .model.forward import run_cached  # here, not at the top: torch, as above

        toks = ev.tokens[:n_examples]
        _, _, pats, _ = run_cached(W, toks)
        res["pattern"] = {
            "head": head,
            "examples": [
                {"tokens": token_labels(toks[i]), "pattern": pats[layer][i, h].tolist()} for i in range(len(toks))
            ],
        }
    return nan_to_none(res)


def ablation_report(
    run,
    step: int | None = None,
    head_ablation: str = "zero",
    n_boot: int = 1000,
    seed: int = 0,
    options: RunOptions | None = None,
    **old,
) -> dict[str, Any]:
    """Head ablation at the checkpoint nearest ``step``: per head (nats) the paper's Delta L
    (full-vocabulary cross-entropy over A1..A4 and EOS, ablated minus clean), Delta Lc and
    Delta L1, in head order (layer, head) as ``inspect`` lists them; each head ablated as the
    registered head ablation ``head_ablation`` defines ("zero", "mean", ...:
    ``interventions.head_ablations``). Intervals over groups, and the device, as in ``inspect``."""
    if "mean" in old:  # the older API's switch between zero and mean ablation
        warnings.warn(
            'ablation_report(mean=...) is deprecated: pass head_ablation="mean" (or "zero")', DeprecationWarning, 2
        )
        head_ablation = "mean" if old.pop("mean") else "zero"
    options = with_old_keywords(options, old, "ablation_report")
    head_ablation_named(head_ablation)  # a ValueError naming the choices, before any work
    run = run if isinstance(run, Run) else Run(run)
    cfg, s, W, ev, dev = _checkpoint_at(run, step, options)
    out = passes_on(dev, W, ev, step=s, head_ablation=head_ablation)
    ck, heads = _intervals(out, n_boot, seed)
    return nan_to_none(
        {
            "run": run.name,
            "step": s,
            "mode": head_ablation,
            "checkpoint": ck,
            "L_seq": ck["L_seq"],
            "full_loss": ck["full_loss"],
            "Lc": ck["Lc"],
            "L1": ck["L1"],
            "swap_gap_seq": ck["swap_gap_seq"],
            "swap_gap": ck["swap_gap"],
            "heads": heads,
        }
    )
