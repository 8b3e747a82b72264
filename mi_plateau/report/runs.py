"""The sections of one run: its LLC curve (where one was recorded), head scores and the head grid
with a slider over the ablated checkpoints, the attention viewer, group accuracy and patching.
Checkpoints are downsampled to keep the page in bounds, the key fractions of tau always kept."""

from __future__ import annotations

from .. import figures
from ..frames import records
from ..interventions import resid_patches
from ..passes.head_scores import panels
from ..passes.table6_9 import accuracy_histogram
from ..summaries import nearest
from .markup import Page, esc, fill, options, script

MAX_SLIDER_FRAMES = 40  # checkpoints in the head-grid slider
MAX_ATTENTION_CHECKPOINTS = 12  # checkpoints whose attention patterns are stored
ATTENTION_PATTERN_BUDGET = 48  # K x stored checkpoints of attention patterns, at most (K = 36: 4 checkpoints)

# checkpoints kept in every downsampled view, as fractions of tau
KEY_FRACTIONS = (0.25, 0.5, 1.0, 1.5)


def spread(items: list, n: int, keep: tuple = ()) -> list:
    """At most ``n`` items of a sorted list: first, last and ``keep``, the rest evenly spread."""
    if len(items) <= n:
        return list(items)
    must = sorted({items[0], items[-1], *(k for k in keep if k in items)})[:n]
    others = [x for x in items if x not in must]
    r = n - len(must)
    pick = [others[round(i * (len(others) - 1) / max(r - 1, 1))] for i in range(r)] if r > 0 else []
    return sorted(set(must) | set(pick))


def llc_section(page: Page, d: dict, key: str, rows: list[dict]) -> None:
    """The run's learning-coefficient curve (``rows`` from ``read_llc``) beside its loss, with
    the estimator's settings as its first row recorded them."""
    first = rows[0]
    page.add(
        fill(
            "llc",
            key=key,
            name=d["name"],
            points=len(rows),
            lr=first.get("lr"),
            gamma=first.get("localization"),
            nbeta=first.get("nbeta"),
            chains=first.get("n_chains"),
            draws=first.get("n_draws"),
        )
    )
    s = d["summary"]
    page.fig(figures.llc_curve(esc(d["name"]), d["tables"]["checkpoint"], rows, s["log_K"], s["tau"]))


def run_sections(page: Page, d: dict, key: str, notes: list[str], progress: bool) -> None:
    """The per-run figures: head scores, head grid with slider, attention, groups, patching."""
    name, lab, tau, K = d["name"], esc(d["name"]), d["summary"]["tau"], d["cfg"].task.K
    t = {k: records(v) for k, v in d["tables"].items()}
    all_steps = sorted({r["step"] for r in t["checkpoint"]})
    _head_section(page, d, key, t["heads"], len(all_steps), notes)
    _attention_section(page, d, key, all_steps, notes, progress)
    page.add(fill("groups", key=key, name=name, K=K, checkpoints=len(all_steps)))
    page.fig(figures.group_accuracy(accuracy_histogram(t["groups"], K), t["checkpoint"], lab, tau))
    if t["patching"]:
        page.add(fill("patching", name=name, legend=patch_legend()))
        page.fig(figures.patching(t["patching"], lab, tau))


def patch_legend() -> str:
    """The line above the patching figure: what each registered patch (``interventions``) patches."""
    return "; ".join(f"{iv.name} = {iv.legend}" for iv in resid_patches())


def heads_legend() -> str:
    """The line above the head figures: the legend of every score they draw (the per-head
    scores with a panel, ``passes.head_scores``), in their order."""
    return "; ".join(s.panel.legend for s in panels())


def _head_section(page: Page, d: dict, key: str, heads: list[dict], n_checkpoints: int, notes: list[str]) -> None:
    """Head scores over training, and the head grid with a slider over the ablated checkpoints
    (at most ``MAX_SLIDER_FRAMES``, the key fractions of tau kept)."""
    name, lab, tau = d["name"], esc(d["name"]), d["summary"]["tau"]
    page.add(fill("heads", key=key, name=name, legend=heads_legend()))
    page.fig(figures.head_scores_over_training(heads, lab, tau))
    ablated = sorted({r["step"] for r in heads if r["dLc"] == r["dLc"]})
    if not ablated:
        return
    keep = [s for s in ablated if tau and s in (nearest(ablated, f * tau) for f in KEY_FRACTIONS)]
    frames = spread(ablated, MAX_SLIDER_FRAMES, tuple(keep))
    notes.append(fill("slider_note", name=name, shown=len(frames), ablated=len(ablated), checkpoints=n_checkpoints))
    page.fig(figures.head_grid_slider(heads, lab, frames))


def _attention_section(page: Page, d: dict, key: str, all_steps: list[int], notes: list[str], progress: bool) -> None:
    """The attention viewer: every selector of the first base group (eval rows 0..K-1) at a few
    checkpoints, fewer for large K so that the page stays in bounds (K x checkpoints patterns
    per head), with controls for the checkpoint, the head and the example."""
    from ..passes.attention import attention_patterns  # here, not at the top: it imports torch

    name, lab, tau, K = d["name"], esc(d["name"]), d["summary"]["tau"], d["cfg"].task.K
    n_att = max(4, min(MAX_ATTENTION_CHECKPOINTS, ATTENTION_PATTERN_BUDGET // K))
    att_steps = spread(all_steps, n_att, tuple(nearest(all_steps, f * tau) for f in KEY_FRACTIONS) if tau else ())
    A = attention_patterns(d["run"], d["cfg"], att_steps, K, progress=progress)
    routing = d["routing"].get("routing_head")
    h0 = A["heads"].index(routing) if routing in A["heads"] else 0
    notes.append(
        fill(
            "attention_note",
            name=name,
            stored=len(att_steps),
            checkpoints=len(all_steps),
            steps=", ".join(map(str, att_steps)),
            examples=len(A["examples"]),
            last_z=K - 1,
            routing=routing,
        )
    )
    A["title"] = f"{lab}:"
    page.add(fill("attention", key=key, name=name, first_pred=A["first_pred"]))
    div = f"{key}-attnfig"
    heads, examples = options(A["heads"], h0), options(A["examples"])
    page.add(
        fill("attention_controls", div=div, last=len(att_steps) - 1, step=att_steps[-1], heads=heads, examples=examples)
    )
    first = figures.attention_pattern(
        A["patterns"][-1][h0][0], A["labels"][0], f"{lab}: {A['heads'][h0]}, step {att_steps[-1]}", A["first_pred"]
    )
    page.fig(first, div)
    page.add(script("attention", data={k: A[k] for k in ("steps", "heads", "labels", "patterns", "title")}, id=div))
