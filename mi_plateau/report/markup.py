"""The page's markup: the templates (``templates/report.html``, ``report.css``, ``report.js``,
shipped as package data) read into named blocks and filled in, markup made here marked as
``Html`` so that ``fill`` puts it in as it is and escapes every other value, and ``Page``, the
sections and figures of one page in order."""

from __future__ import annotations

import html
import json
import re
from functools import cache
from importlib.resources import files
from string import Template
from typing import Any

esc = html.escape


def _script_json(obj: Any) -> str:
    """JSON safe to place inside <script>: no '</script>', no HTML-significant characters."""
    s = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    for a, b in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("/", "\\u002f"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        s = s.replace(a, b)
    return s


TEMPLATES = files("mi_plateau") / "templates"
BLOCK = re.compile(r"^(?:<!--|//) block: (\w+)(?: -->)?\n", re.M)


class Html(str):
    """Markup made here (a table, a figure, a filled block): ``fill`` puts it in as it is."""


@cache
def template_text(name: str) -> str:
    """The text of ``templates/<name>`` (shipped as package data)."""
    return TEMPLATES.joinpath(name).read_text(encoding="utf-8")


@cache
def template_blocks(name: str) -> dict[str, Template]:
    """The named blocks of ``templates/<name>``: each starts after a line ``<!-- block: NAME -->``
    (``// block: NAME`` in a script) and runs to the next, trailing newlines dropped; the text
    before the first block is the file's own comment."""
    parts = BLOCK.split(template_text(name))
    return {k: Template(v.rstrip("\n")) for k, v in zip(parts[1::2], parts[2::2])}


def fill(block: str, **values: Any) -> Html:
    """A block of ``templates/report.html`` filled in: ``Html`` values as they are, every other
    value as escaped text."""
    t = template_blocks("report.html")[block]
    return Html(t.substitute({k: v if isinstance(v, Html) else esc(str(v)) for k, v in values.items()}))


def script(block: str, **values: Any) -> Html:
    """A block of ``templates/report.js`` as a <script>, each value written as script-safe JSON."""
    js = template_blocks("report.js")[block].substitute({k: _script_json(v) for k, v in values.items()})
    return Html(f"<script>\n{js}\n</script>")


def nav_links(anchors) -> Html:
    """The page's navigation bar: one link per (anchor, label)."""
    return Html("".join(f"<a href='#{a}'>{esc(t)}</a>" for a, t in anchors))


def options(items, chosen: int = 0) -> Html:
    """<option>s of a <select>, valued by position, ``chosen`` selected."""
    return Html(
        "".join(
            f"<option value='{i}'{' selected' if i == chosen else ''}>{esc(str(x))}</option>"
            for i, x in enumerate(items)
        )
    )


class Page:
    """Collects HTML sections and figures; knows how many figures it emitted."""

    def __init__(self):
        self.parts: list[str] = []
        self.figures: list[tuple[str, object]] = []  # (div id, figure): what a static export writes
        self.n_figs = 0

    def add(self, s: str) -> None:
        self.parts.append(s)

    def fig(self, fig, div_id: str | None = None) -> str:
        self.n_figs += 1
        div_id = div_id or f"fig{self.n_figs}"
        self.figures.append((div_id, fig))
        self.add(
            "<div class='fig'>"
            + fig.to_html(
                full_html=False,
                include_plotlyjs=False,
                auto_play=False,
                div_id=div_id,
                config={"displaylogo": False, "responsive": True},
            )
            + "</div>"
        )
        return div_id

    def html(self) -> Html:
        return Html("".join(self.parts))
