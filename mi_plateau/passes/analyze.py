"""Run the passes over a run's checkpoints, caching one JSON file per checkpoint.

Cheap passes (losses, accuracy, swap gap, selector attention) run at every checkpoint; the
per-head ablations and the causal patching run at ``max_checkpoints`` checkpoints spread
evenly over the run plus the checkpoints the tables read (the phases of Table 9 and the tau
fractions of Table 6). Rerunning skips checkpoints already analysed with the same settings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import warnings
from contextlib import nullcontext
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..checkpoints import Run, RunError, atomic_write_json, read_json, refuse_inside_run
from ..config import AnalysisConfig, RunOptions, layout_for
from ..config.layout import D_VOCAB
from ..config.options import with_old_keywords
from ..frames import frame
from ..interventions import head_ablation_named
from ..summaries import nan_to_none, nearest, summarize
from .bootstrap import swap_gap_intervals
from .descent import coherent_descent, windows
from .head_scores import ablation_columns, cache_version
from .lead import curve_rows, original_onsets, original_series, original_tau, z_onsets
from .routing import figure3_data, routing
from .table6_9 import table6, table9


@dataclass(frozen=True)
class PassConfig(AnalysisConfig):
    """The analysis section (``config.AnalysisConfig``: its fields, help and bounds) as the passes
    run it: its head ablation one of the registry's, and the key of the pass cache."""

    def __post_init__(self):
        super().__post_init__()
        head_ablation_named(self.head_ablation)  # a ValueError naming the choices

    def key(self) -> str:
        # the version is derived from the per-head registry and its CODE_VERSION: a score
        # declared (or a pass changed) makes every cached checkpoint a miss; a hand-numbered
        # version (4 and before) never equals a derived one, so such caches are recomputed.
        # Zero and mean ablation keep the key they had as the flag "mean"; any other names itself.
        d = {
            "shifts": list(self.shifts),
            "mean": self.head_ablation == "mean",
            "min_gap": self.min_gap,
            "v": cache_version(),
        }
        if self.head_ablation not in ("zero", "mean"):
            d["ablation"] = self.head_ablation
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]


OLD_SETTINGS = {"max_head_checkpoints": "max_checkpoints"}  # the API's older keyword -> the field now
# PassConfig's older fields -> (the field now, its value from the old one), accepted for one release
OLD_FIELDS = {
    "max_head_checkpoints": ("max_checkpoints", lambda v: v),
    "mean_ablation": ("head_ablation", lambda v: "mean" if v else "zero"),
}
_pass_config_init = PassConfig.__init__


@functools.wraps(_pass_config_init)
def _init_with_old_fields(self, *args, **kw) -> None:
    """``PassConfig(...)``, its older fields (``OLD_FIELDS``) set as the fields they became, each
    with a DeprecationWarning naming that field (a TypeError where both name different values)."""
    for name, (field_name, value) in OLD_FIELDS.items():
        if name in kw:
            new = value(kw.pop(name))
            if field_name in kw and kw[field_name] != new:
                raise TypeError(f"PassConfig({name}=...) contradicts {field_name}={kw[field_name]!r}")
            warnings.warn(
                f"PassConfig({name}=...) is deprecated: use PassConfig({field_name}=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            kw[field_name] = new
    _pass_config_init(self, *args, **kw)


PassConfig.__init__ = _init_with_old_fields


def pass_config_of(pc: AnalysisConfig | None, old: dict[str, Any], where: str) -> PassConfig:
    """``pc`` (None: the defaults) as a ``PassConfig``, with the older API's keywords of
    ``OLD_SETTINGS`` taken out of ``old`` and set, each with a DeprecationWarning naming its field."""
    pc = PassConfig() if pc is None else pc
    if type(pc) is not PassConfig:
        pc = PassConfig(**{f.name: getattr(pc, f.name) for f in fields(AnalysisConfig)})
    for name, field_name in OLD_SETTINGS.items():
        if name in old:
            value = old.pop(name)
            warnings.warn(
                f"{where}({name}=...) is deprecated: pass pass_config=PassConfig({field_name}=...)",
                DeprecationWarning,
                stacklevel=3,
            )
            if value is not None:
                pc = replace(pc, **{field_name: value})
    return pc


def head_checkpoints(steps: list[int], taus, pc: PassConfig) -> list[int]:
    """The steps that get the expensive per-head passes (and the paper family's scoring).

    For each known tau (``taus``: one tau or several, e.g. both families'):
    ``max_checkpoints`` points evenly spaced in t / tau over [0, ``head_span`` tau], so the
    set does not move as a run grows and resolves the plateau and the transition alike; plus the
    checkpoints the tables read; and the last one. Before any tau is known (a run still on its
    plateau) only the last checkpoint.
    """
    chosen = {steps[-1]}
    n = min(pc.max_checkpoints, len(steps))
    for tau in [taus] if taus is None or isinstance(taus, int) else taus:
        if tau is None:
            continue
        if n > 1:
            for i in range(n):
                chosen.add(nearest(steps, pc.head_span * tau * i / (n - 1)))
        for f in (*pc.phase_fracs, *pc.table6_fracs):
            chosen.add(nearest(steps, f * tau))
    return sorted(chosen)


def weights_for(run: Run, step: int, cfg, device=None):
    """The checkpoint's weights as the functional forward's ``Weights`` (shapes checked against
    the run's config), on ``device`` (default: the CPU)."""
    from ..model.forward import Weights  # here, not at the top: torch (the tables import without it)

    sd = run.weights(step)
    m = cfg.model
    expected = _expected_shapes(cfg)
    for k, shape in expected.items():
        if k not in sd or tuple(sd[k].shape) != shape:
            got = tuple(sd[k].shape) if k in sd else "missing"
            raise RunError(f"{run.weights_path(step)}: {k} is {got}, the run's config expects {shape}")
    if device is not None:
        sd = {k: v.to(device) for k, v in sd.items()}
    return Weights.of(sd, m)


def eval_set_on(cfg, options: RunOptions):
    """The run's fixed evaluation set on ``options.device`` (``devices.resolve``), and that device;
    torch takes ``options.threads`` threads (``devices.use_threads``)."""
    # here, not at the top: task and devices import torch (the tables import this module without it)
    from ..devices import resolve, use_threads
    from ..task import make_eval_set, make_task

    use_threads(options.threads)
    dev = resolve(options.device)
    return make_eval_set(make_task(cfg.task), cfg.eval).on(dev), dev


def passes_on(device, W, ev, **kw) -> dict[str, list[dict[str, Any]]]:
    """``checkpoint_passes`` on ``device`` (weights and evaluation set already there, see
    ``weights_for`` and ``EvalSet.on``): on a GPU, the tensors the passes make go there too."""
    from .per_checkpoint import checkpoint_passes  # here, not at the top: it imports torch

    with nullcontext() if device is None or device.type == "cpu" else device:
        return checkpoint_passes(W, ev, **kw)


SEQUENCE_CHECKPOINT_COLUMNS = (
    "L_seq",
    "cand_acc",
    "cand_groups_ge80",
    "cand_groups_100",
    "swap_gap_seq",
    "shuffle_gap_seq",
)
SEQUENCE_GROUP_COLUMNS = ("cand_acc", "L_seq", "swap_gap_seq")


def _cheap_part(tables: dict[str, list]) -> dict[str, list]:
    """The rows ``checkpoint_passes(..., ablation=False)`` gives, from a result with ablation."""
    ck = [
        {
            **{k: v for k, v in r.items() if k not in ("ld_clean", "ld_swap")},
            **{k: None for k in SEQUENCE_CHECKPOINT_COLUMNS},
        }
        for r in tables["checkpoint"]
    ]
    heads = [{**r, **{k: None for k in ablation_columns()}} for r in tables["heads"]]
    groups = [{**r, **{k: None for k in SEQUENCE_GROUP_COLUMNS}} for r in tables["groups"]]
    head_groups = [{**r, **{k: None for k in ablation_columns(per_group=True)}} for r in tables.get("head_groups", [])]
    return {**tables, "checkpoint": ck, "heads": heads, "groups": groups, "patching": [], "head_groups": head_groups}


def _expected_shapes(cfg) -> dict[str, tuple[int, ...]]:
    m = cfg.model
    return {
        "embed.weight": (D_VOCAB, m.d_model),
        "pos_embed.weight": (layout_for(cfg.task).seq_len, m.d_model),
        "blocks.0.attn.q.weight": (m.n_heads * m.d_head, m.d_model),
        "blocks.0.mlp.in.weight": (m.d_mlp, m.d_model),
        "unembed.weight": (D_VOCAB, m.d_model),
    }


def analyze_run(
    run: str | Path | Run,
    out_dir: str | Path,
    pc: PassConfig = PassConfig(),
    *,
    progress: bool = True,
    steps: list[int] | None = None,
    options: RunOptions | None = None,
    heavy: bool = True,
    **old,
) -> dict[str, list[dict[str, Any]]]:
    """All passes over a run, on ``options.device`` (``devices.resolve``; ``device=``: deprecated);
    returns the tidy tables and writes per-checkpoint caches. ``heavy=False``: the cheap passes
    only (no per-head passes, no paper family), at every checkpoint.

    Tables (pandas DataFrames): "checkpoint" (one row per checkpoint, with the swap gaps' 95%
    bootstrap intervals over groups), "heads" (checkpoint x head), "groups" (checkpoint x
    group: metrics and swap gaps), "patching" (checkpoint x hook x layer), "head_groups"
    (checkpoint x head x group: selector attention; Delta L, Delta Lc and the swap contribution
    where the ablations ran).
    """
    options = with_old_keywords(options, old, "analyze_run")
    run = run if isinstance(run, Run) else Run(run)
    cfg = run.config()
    records = run.records()
    if not records:
        raise RunError(f"{run.path / 'manifest.json'}: the run has no checkpoints yet")
    all_steps = [r["step"] for r in records]
    if steps is None:
        steps = all_steps
    K = cfg.task.K
    if cfg.task.has_selector and any(s % K == 0 for s in pc.shifts):
        raise RunError(f"shifts {list(pc.shifts)}: a shift that is a multiple of K={K} replaces a selector by itself")
    fams = summarize(cfg, records)["definitions"]
    heavy = set(head_checkpoints(all_steps, [f["tau"] for f in fams.values()], pc)) if heavy else set()
    ev, dev = eval_set_on(cfg, options)
    cache = Path(out_dir) / "passes"  # under the folder the caller gave, never elsewhere
    refuse_inside_run(cache, "pass cache")
    # A cached file serves a checkpoint only if it was made from the same weights (their SHA-256,
    # computed from the file where an older manifest lacks it) with the same pass settings, task,
    # model and evaluation set: how the weights were trained does not change what the passes
    # compute from them.
    what = json.dumps({k: cfg.to_dict()[k] for k in ("task", "model", "eval")}, sort_keys=True)
    key = pc.key() + "-" + hashlib.sha1(what.encode()).hexdigest()[:10]
    sha = run.weights_sha256(steps)
    tables: dict[str, list] = {"checkpoint": [], "heads": [], "groups": [], "patching": [], "head_groups": []}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(steps), desc=f"analyse {run.name}", unit="ckpt", file=sys.stderr, dynamic_ncols=True)
    for step in steps:
        want_heavy = step in heavy
        f = cache / f"step_{step:06d}.json"
        out = _from_cache(f, key, sha.get(step), want_heavy)
        if out is None:
            W = weights_for(run, step, cfg, dev)
            out = passes_on(
                dev,
                W,
                ev,
                step=step,
                shifts=pc.shifts,
                head_ablation=pc.head_ablation,
                ablation=want_heavy,
                min_gap=pc.min_gap,
            )
            out = nan_to_none(out)
            atomic_write_json(f, {"key": key, "sha256": sha.get(step), "ablation": want_heavy, "tables": out})
        for k in tables:
            tables[k].extend(out.get(k, []))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return _frames(tables, pc)


def _from_cache(f: Path, key: str, sha: str | None, want_heavy: bool) -> dict[str, list] | None:
    """The rows a cache file holds for this checkpoint, or None where it cannot serve (absent,
    unreadable, other settings or weights, or without the per-head passes ``want_heavy`` asks)."""
    if not f.exists():
        return None
    try:
        c = read_json(f)
        if not isinstance(c, dict):
            raise KeyError("not a cache file")
        if c.get("key") == key and c.get("sha256") == sha and (c.get("ablation") or not want_heavy):
            # a file written when this step was on the per-head grid (an earlier tau)
            # serves the cheap passes only: the tables must not depend on the cache's history
            return c["tables"] if want_heavy or not c.get("ablation") else _cheap_part(c["tables"])
    except (RunError, KeyError, TypeError, AttributeError):  # an unreadable cache file is recomputed
        return None
    return None


def _frames(tables: dict[str, list], pc: PassConfig) -> dict[str, Any]:
    """The pass rows of every checkpoint as DataFrames, with the swap gaps' intervals over groups."""
    # JSON null -> NaN in numeric columns, so the tables read the same fresh or cached
    for rows in tables.values():
        for r in rows:
            for k, v in r.items():
                if v is None:
                    r[k] = float("nan")
    # columns in one order (step first, then by name), however the rows were made or cached
    out = {k: _ordered(frame(rows)) for k, rows in tables.items()}
    gaps = swap_gap_intervals(out["groups"], pc.n_boot, pc.boot_seed)  # the swap gaps' intervals over groups
    if len(gaps):
        out["checkpoint"] = _ordered(out["checkpoint"].merge(gaps, on="step", how="left"))
    return out


def _ordered(df):
    return df[sorted(df.columns, key=lambda c: (c != "step", c))] if len(df.columns) else df


def run_outputs(name: str, cfg, s: dict, tables: dict, pc: PassConfig | None = None) -> dict[str, Any]:
    """Tables 6 and 9, the routing summary and Figure 3's data of one run, from its pass tables
    and its summary (both families' tau)."""
    pc = pc or PassConfig()
    K = cfg.task.K
    taus = {f: v["tau"] for f, v in s["definitions"].items()}
    return {
        "table6": table6(
            name,
            K,
            taus,
            tables["checkpoint"],
            pc.table6_fracs,
            group_rows=tables["groups"],
            n_boot=pc.n_boot,
            seed=pc.boot_seed,
        ),
        "table9": table9(
            name,
            K,
            taus,
            tables["heads"],
            fracs=pc.phase_fracs,
            head_group_rows=tables.get("head_groups"),
            n_boot=pc.n_boot,
            seed=pc.boot_seed,
        ),
        "routing": routing(
            name,
            K,
            taus,
            tables["heads"],
            tables["checkpoint"],
            tables.get("head_groups"),
            tables["groups"],
            n_boot=pc.n_boot,
            seed=pc.boot_seed,
        ),
        "figure3": {f: figure3_data(name, K, t, tables["checkpoint"], tables["groups"], f) for f, t in taus.items()},
    }


def figure3_paper(run: Run, checkpoint_rows, delta: int = 200) -> dict[str, Any]:
    """Figure 3 as the paper computed it, for one run: (a) by the original's quantity, the series
    and onsets of ``passes.lead`` from the run's records (``a_original``, ``onsets_original``, the
    latter None where the records keep no z-deranged training loss), and ours, from the passes' checkpoint
    rows (``a``, ``onsets``: Lc and the z-shuffle gap); (b) the displacement rows and the cosine's
    windows of ``passes.descent`` from the weights, against the original's first-token tau (no
    windows before it). Where (b) cannot be read (too few checkpoints for ``delta``, a grid step
    missing) its rows are empty and ``b_error`` says why in one line."""
    K = run.config().task.K
    series = original_series(run.records(), K)
    out: dict[str, Any] = {
        "a": curve_rows(checkpoint_rows, K),
        "onsets": z_onsets(checkpoint_rows, K),
        "a_original": series,
        "onsets_original": original_onsets(series, K),
    }
    try:
        b = coherent_descent(run, delta)
    except RunError as e:
        return {**out, "b": [], "windows": {}, "b_error": str(e)}
    return {**out, "b": b, "windows": windows(b, original_tau(series, K)), "b_error": None}
