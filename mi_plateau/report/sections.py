"""The sections shared by every run of a report: the summary table, the loss curves and
Figure 3 with all runs in each, Tables 6 and 9 with the routing summary, and each run's
provenance (seeds, command line, whole config)."""

from __future__ import annotations

import json

from .. import figures
from ..frames import records
from ..interventions import head_ablation_named
from .html_tables import html_table, kv_table, transposed_table
from .markup import Page, esc, fill

# the routing leads in the summary table (column label, routing key), each with its 95% interval
SUMMARY_LEADS = (
    ("lead (tau−t_r)/tau, causal", "routing_lead_swap_contrib"),
    ("lead, attention", "routing_lead_sel_attn"),
)


def summary_rows(data: list[dict]) -> list[dict]:
    """One row per run for the page's summary table: tau and the plateau under both definition
    families, convergence, and the routing heads with their leads (and 95% intervals)."""
    rows = []
    for d in data:
        s, ro = d["summary"], d["routing"]
        fam = s["definitions"]
        rows.append(
            {
                "run": d["name"],
                "K": s["K"],
                "n_b": s["n_b"],
                "tau, paper (L_seq), steps": fam["paper"]["tau"],
                "tau, first token (Lc), steps": fam["first_token"]["tau"],
                "plateau / log K, paper": fam["paper"]["plateau_ratio"],
                "plateau / log K, first token": fam["first_token"]["plateau_ratio"],
                "converged": s["converged"],
                "status": s["status"],
                "checkpoints": s["n_checkpoints"],
                "routing head": ro.get("routing_head"),
                "top attention head": ro.get("top_attention_head"),
                **{
                    f"{label}{end}": ro.get(f"{key}{end}") for label, key in SUMMARY_LEADS for end in ("", "_lo", "_hi")
                },
            }
        )
    return rows


def summary_section(page: Page, data: list[dict]) -> None:
    page.add(fill("summary"))
    for d in data:
        s = d["summary"]
        if s["status"] != "finished":
            page.add(fill("unfinished", name=d["name"], status=s["status"], last_step=s["last_step"]))
    page.add(html_table(summary_rows(data)))


def curve_sections(page: Page, data: list[dict]) -> None:
    """The loss curves and the Figure 3 panels of every run, each figure holding all runs."""
    label = {d["name"]: esc(d["name"]) for d in data}  # names as they go into plotly text
    page.add(fill("loss"))
    page.fig(
        figures.loss_curves(
            {label[d["name"]]: d["tables"]["checkpoint"] for d in data},
            {label[d["name"]]: {"log_K": d["summary"]["log_K"], "tau": d["summary"]["tau"]} for d in data},
        )
    )
    page.add(fill("figure3"))
    page.fig(figures.figure3_paper({label[d["name"]]: d["figure3_paper"] for d in data}))
    page.add(fill("figure3_ours"))
    page.fig(figures.figure3({label[d["name"]]: d["figure3"] for d in data}))


def table_sections(page: Page, data: list[dict], head_ablation: str = "zero") -> None:
    """Tables 6 and 9 and the routing summary, all runs in each; Table 9's note says what the
    head ablation ``head_ablation`` (a registered one, ``interventions``) does to a head."""
    page.add(fill("table6"))
    page.add(html_table([r for d in data for r in records(d["table6"])]))
    page.add(fill("table9", ablation=head_ablation_named(head_ablation).legend))
    page.add(html_table([r for d in data for r in records(d["table9"])]))
    page.add(fill("routing"))
    page.add(transposed_table([d["routing"] for d in data]))


def provenance_section(page: Page, data: list[dict]) -> None:
    """Each run's seeds, command line (command.json) and whole config."""
    page.add(fill("provenance"))
    for d in data:
        cfg, cmd = d["cfg"], d["command"]
        seeds = {
            "task.data_seed": cfg.task.data_seed,
            "model.init_seed": cfg.model.init_seed,
            "train.batch_seed": cfg.train.batch_seed,
            "eval.eval_seed": cfg.eval.eval_seed,
        }
        argv = cmd.get("argv")
        prov = {
            "run folder": str(d["run"].path),
            "argv": " ".join(map(str, argv)) if isinstance(argv, list) else argv,
            **{k: v for k, v in cmd.items() if k not in ("argv", "versions")},
            **{f"version {k}": v for k, v in (cmd.get("versions") or {}).items()},
        }
        tables = {"seeds": kv_table(seeds), "command": kv_table(prov), "config": kv_table(_flatten(cfg.to_dict()))}
        page.add(fill("provenance_run", name=d["name"], **tables))


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v if not isinstance(v, (list, tuple)) else json.dumps(v)
    return out
