"""The interactive report: one self-contained HTML file per run, or per comparison of runs.

``report(runs)`` reads the passes' tidy tables through ``analyze_run`` (cached per checkpoint
under ``analyses/<run>/passes/``, so a report after ``mi-plateau analyze`` costs seconds), turns
them into Tables 6 and 9, the routing summary and plotly figures, and writes one HTML file with
plotly.js embedded once: it opens offline, from a file, with no network. The only numbers made
here are the attention patterns, which need the model forward at a few chosen checkpoints.

The page's prose and markup live in ``templates/report.html`` (named blocks, ``string.Template``),
its style sheet in ``templates/report.css`` and its scripts in ``templates/report.js``;
``markup`` fills them with the data. Every string that comes from a run (its folder name, its
config, its command line) is written through ``html.escape`` (``fill`` escapes every value that
is not markup made here); JSON inside ``<script>`` has ``<``, ``>``, ``&`` and ``/`` as unicode
escapes.
See docs/report.md.

Layout: ``markup`` (the templates, ``fill``, ``script``, ``Page``), ``html_tables`` (rows as HTML),
``inputs`` (what a report reads: command.json, LLC curves, the passes' tables), ``sections``
(the sections shared by all runs), ``runs`` (each run's own sections), ``pages`` (``report``,
``sweep_report``, ``scorecard_report``).
"""

from .html_tables import fold_intervals, html_table, kv_table, page_cell, transposed_table
from .inputs import gather, read_command, read_llc
from .markup import BLOCK, TEMPLATES, Html, Page, esc, fill, nav_links, options, script, template_blocks, template_text
from .pages import default_out, report, run_nav, scorecard_report, sweep_report
from .runs import ATTENTION_PATTERN_BUDGET, KEY_FRACTIONS, MAX_ATTENTION_CHECKPOINTS, MAX_SLIDER_FRAMES, spread
from .sections import SUMMARY_LEADS, summary_rows

__all__ = [
    "ATTENTION_PATTERN_BUDGET",
    "BLOCK",
    "KEY_FRACTIONS",
    "MAX_ATTENTION_CHECKPOINTS",
    "MAX_SLIDER_FRAMES",
    "SUMMARY_LEADS",
    "TEMPLATES",
    "Html",
    "Page",
    "default_out",
    "esc",
    "fill",
    "fold_intervals",
    "gather",
    "html_table",
    "kv_table",
    "nav_links",
    "options",
    "page_cell",
    "read_command",
    "read_llc",
    "report",
    "run_nav",
    "scorecard_report",
    "script",
    "spread",
    "summary_rows",
    "sweep_report",
    "template_blocks",
    "template_text",
    "transposed_table",
]
