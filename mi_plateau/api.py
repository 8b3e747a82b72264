"""The Python API: the same operations as the command line, returning data instead of text."""

from __future__ import annotations

import os
from typing import Any

from .checkpoints import Run, RunError


def summary(run: str | os.PathLike | Run) -> dict[str, Any]:
    """Plateau height, tau and convergence of a run, computed from its checkpoint records.

    Keys include K, log_K, plateau_Lc, plateau_ratio, tau, tau_examples, alpha, converged,
    last_step, n_checkpoints. NaN values become None so the dict is valid JSON.
    """
    from .summaries import nan_to_none, summarize

    run = run if isinstance(run, Run) else Run(run)
    manifest = run.manifest()
    s = summarize(run.config(), [c["record"] for c in manifest["checkpoints"]])
    s["status"] = manifest.get("status")
    s["run"] = str(run.path)
    return nan_to_none(s)


def _outputs_for(name: str, cfg, s: dict, tables: dict, pc=None) -> dict[str, Any]:
    from .passes.analyze import PassConfig
    from .passes.tables import figure3_data, routing, table6, table9

    pc = pc or PassConfig()
    K, tau = cfg.task.K, s["tau"]
    return {
        "table6": table6(name, K, tau, tables["checkpoint"], pc.table6_fracs),
        "table9": table9(name, K, tau, tables["heads"], fracs=pc.phase_fracs),
        "routing": routing(name, K, tau, tables["heads"], tables["checkpoint"]),
        "figure3": figure3_data(name, K, tau, tables["checkpoint"], tables["groups"]),
    }


TABLE6_NOTE = (
    "Per-group accuracy = fraction of a group's K examples whose four A tokens are all the "
    "teacher-forced argmax; 200 fixed groups. Columns paper_* are the paper's Table 6 row "
    "nearest in fraction of tau (reference only)."
)
TABLE9_NOTE = (
    "Delta Lc (nats) = candidate loss with the head's hook_z zeroed at every position minus clean. "
    "Pre ~ 0.25 tau, Mid ~ tau, Post = last checkpoint. Columns paper_* are the paper's Table 9 "
    "(reference only)."
)


def analyze(runs, out: str | os.PathLike = "analyses", *, progress: bool = True, pass_config=None, max_head_checkpoints: int | None = None,
            with_figure3: bool = False) -> dict[str, Any]:
    """Run every pass over each run; write Tables 6 and 9 (md, csv, json), Figure 3 (HTML), the
    tidy pass tables and routing.json under ``out/<run name>/``, and a comparison folder
    ``out/compare_<names>/`` when several runs are given. Returns paths and headline numbers."""
    from dataclasses import replace
    from pathlib import Path

    from .checkpoints import atomic_write_bytes, atomic_write_json
    from .figures import figure3
    from .summaries import nan_to_none
    from .passes.analyze import PassConfig, analyze_run
    from .tabular import write_table

    if isinstance(runs, (str, os.PathLike, Run)):
        runs = [runs]
    pc = pass_config or PassConfig()
    if max_head_checkpoints is not None:
        pc = replace(pc, max_head_checkpoints=max_head_checkpoints)
    out = Path(out)
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
        tables = analyze_run(run, folder, pc, progress=progress)
        o = _outputs_for(name, cfg, s, tables, pc)
        paths = []
        for key in ("checkpoint", "heads", "groups", "patching"):
            paths += write_table(folder / f"pass_{key}", tables[key], title=f"{name}: {key} pass rows")
        paths += write_table(folder / "table6", o["table6"], title=f"Table 6 (collective transition): {name}", note=TABLE6_NOTE)
        paths += write_table(folder / "table9", o["table9"], title=f"Table 9 (head ablation): {name}", note=TABLE9_NOTE)
        atomic_write_json(folder / "routing.json", o["routing"])
        f3 = folder / "figure3.html"
        atomic_write_bytes(f3, figure3({name: o["figure3"]}).to_html(include_plotlyjs=True, full_html=True).encode())
        paths += [folder / "routing.json", f3]
        result["runs"][name] = {"summary": s, "routing": o["routing"], "folder": str(folder), "files": [str(p) for p in paths]}
        if with_figure3:  # the data behind figure3.html, for callers that plot it again
            result["runs"][name]["figure3"] = o["figure3"]
        all_t6 += o["table6"]
        all_t9 += o["table9"]
        all_f3[name] = o["figure3"]
        all_routing.append(o["routing"])
    if len(runs) > 1:
        names = list(result["runs"])
        folder = out / ("compare_" + "__".join(names))
        if len(folder.name) > 120:
            import hashlib

            folder = out / ("compare_" + hashlib.sha1("|".join(names).encode()).hexdigest()[:10])
        write_table(folder / "table6", all_t6, title="Table 6 (collective transition)", note=TABLE6_NOTE)
        write_table(folder / "table9", all_t9, title="Table 9 (head ablation)", note=TABLE9_NOTE)
        write_table(folder / "routing", all_routing, title="Selector-routing heads and leads")
        atomic_write_bytes(folder / "figure3.html", figure3(all_f3).to_html(include_plotlyjs=True, full_html=True).encode())
        result["comparison"] = str(folder)
    return nan_to_none(result)


def _checkpoint_at(run: Run, step: int):
    from .passes.analyze import weights_for
    from .task import make_eval_set, make_task

    cfg = run.config()
    s = run.nearest_step(step)
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    return cfg, s, weights_for(run, s, cfg), ev


def inspect(run, step: int, head: str | None = None, n_examples: int = 3) -> dict[str, Any]:
    """Per-head scores at the checkpoint nearest ``step``: selector attention (minus baseline),
    ablation Delta Lc / Delta L1, swap contribution and causal share of the swap gap. With
    ``head`` (e.g. "L0H3"), also that head's attention pattern on ``n_examples`` examples."""
    from .summaries import nan_to_none
    from .model import parse_head
    from .passes.probes import checkpoint_passes
    from .task import token_labels

    run = run if isinstance(run, Run) else Run(run)
    cfg, s, W, ev = _checkpoint_at(run, step)
    if head is not None:
        layer, h = parse_head(head, cfg.model.n_layers, cfg.model.n_heads)
    out = checkpoint_passes(W, ev, step=s)
    res: dict[str, Any] = {"run": run.name, "step": s, "checkpoint": out["checkpoint"][0], "heads": out["heads"], "patching": out["patching"]}
    if head is not None:
        from .passes.forward import run_cached

        toks = ev.tokens[:n_examples]
        _, _, pats, _ = run_cached(W, toks)
        res["pattern"] = {
            "head": head,
            "examples": [
                {"tokens": token_labels(toks[i]), "pattern": pats[layer][i, h].tolist()} for i in range(len(toks))
            ],
        }
    return nan_to_none(res)


def ablation_report(run, step: int, mean: bool = False) -> dict[str, Any]:
    """Head ablation at the checkpoint nearest ``step``: Delta Lc and Delta L1 per head (nats),
    sorted by Delta Lc; zero ablation, or mean ablation with ``mean=True``."""
    from .summaries import nan_to_none
    from .passes.probes import checkpoint_passes

    run = run if isinstance(run, Run) else Run(run)
    cfg, s, W, ev = _checkpoint_at(run, step)
    out = checkpoint_passes(W, ev, step=s, mean=mean)
    heads = sorted(out["heads"], key=lambda r: -r["dLc"])
    ck = out["checkpoint"][0]
    return nan_to_none({"run": run.name, "step": s, "mode": "mean" if mean else "zero", "Lc": ck["Lc"], "L1": ck["L1"],
                        "swap_gap": ck["swap_gap"], "heads": heads})
