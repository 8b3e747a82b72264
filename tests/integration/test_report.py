"""The interactive report: self-contained, escapes what runs bring in, renders in a real browser."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import pytest

from mi_plateau.config import AnalysisConfig, RunOptions

SCRIPT = "<script>alert(1)</script>"
BAD_NAME = "<img src=x onerror=alert(1)>"  # a folder name cannot hold '/', so the script tag goes into the config


class Refs(HTMLParser):
    """Every <script src> and <link href> of a page."""

    def __init__(self):
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src") is not None:
            self.refs.append(a["src"])
        if tag == "link" and a.get("href") is not None:
            self.refs.append(a["href"])


@pytest.fixture(scope="module")
def reports(tiny_run, tmp_path_factory):
    """The report of the tiny run, and a comparison of it with a copy whose name, config and
    command line carry HTML."""
    from mi_plateau.report import report

    tmp = tmp_path_factory.mktemp("report")
    analyses = tmp / "analyses"
    single = report([tiny_run.path], progress=False, analyses=analyses, pass_config=AnalysisConfig(max_checkpoints=6))

    bad = tmp / "runs" / BAD_NAME
    shutil.copytree(tiny_run.path, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["preset"] = SCRIPT
    (bad / "config.json").write_text(json.dumps(cfg))
    cmd = json.loads((bad / "command.json").read_text())
    cmd["argv"] = ["mi-plateau", "train", "--set", SCRIPT]
    (bad / "command.json").write_text(json.dumps(cmd))
    shutil.copytree(analyses / tiny_run.name / "passes", analyses / BAD_NAME / "passes")  # same weights, same cache
    compare = report(
        [tiny_run.path, bad], progress=False, analyses=analyses, pass_config=AnalysisConfig(max_checkpoints=6)
    )
    cdn = report(
        [tiny_run.path],
        tmp / "cdn" / "r.html",
        progress=False,
        analyses=analyses,
        pass_config=AnalysisConfig(max_checkpoints=6),
        plotly="cdn",
    )
    directory = report(
        [tiny_run.path],
        tmp / "dir" / "r.html",
        progress=False,
        analyses=analyses,
        pass_config=AnalysisConfig(max_checkpoints=6),
        plotly="directory",
    )
    llc_file = tmp / "llc.json"  # a recorded LLC curve (estimators.llc's format), numbers made up
    steps = tiny_run.steps()
    rows = [
        {
            "step": st,
            "llc_mean": 10.0 * i - 5.0,
            "llc_std": 1.5,
            "llc_drift": 0.2,
            "chains_failed": 0,
            "lr": 3e-6,
            "localization": 1e4,
            "nbeta": 1000.0,
            "n_chains": 4,
            "n_draws": 200,
        }
        for i, st in enumerate(steps[::10])
    ]
    llc_file.write_text(json.dumps({"run": str(tiny_run.path), "rows": rows}))
    llc = report(
        [tiny_run.path],
        tmp / "llc" / "r.html",
        progress=False,
        analyses=analyses,
        pass_config=AnalysisConfig(max_checkpoints=6),
        llc=[llc_file],
    )
    return {
        "single": single,
        "compare": compare,
        "llc": llc,
        "llc_rows": rows,
        "tiny": tiny_run,
        "analyses": analyses,
        "cdn": cdn,
        "directory": directory,
    }


def test_tables_show_intervals_in_their_columns(reports):
    text = reports["single"].read_text()
    # Table 6, Table 9 and the routing table fold their bootstrap intervals into the column
    for col in ("ge80_pct [95% CI]", "dL [95% CI]", "routing_lead_sel_attn [95% CI]"):
        assert f">{col}</th>" in text, col
    assert "<th>ge80_pct_lo</th>" not in text and "<th>dL_hi</th>" not in text


def test_default_paths(reports):
    a, name = reports["analyses"], reports["tiny"].name
    assert reports["single"] == a / name / "report.html"
    assert reports["compare"] == a / f"compare_{name}__{BAD_NAME}" / "report.html"


@pytest.mark.parametrize("which", ["single", "compare"])
def test_self_contained(reports, which):
    text = reports[which].read_text()
    p = Refs()
    p.feed(text)
    for ref in p.refs:
        assert not re.match(r"\s*(https?:)?//", ref, re.I), f"external resource {ref!r}"
    assert "cdn.plot.ly" not in " ".join(p.refs)
    assert text.count("* plotly.js v") == 1  # plotly.js embedded exactly once
    assert text.count('class="plotly-graph-div"') >= 7


def test_plotly_modes(reports):
    """--plotly cdn links the CDN's plotly.js of the bundled version; directory links one
    plotly.min.js beside the page; the figures are the same."""
    from plotly.offline import get_plotlyjs_version

    inline, cdn, directory = (reports[k].read_text() for k in ("single", "cdn", "directory"))
    assert f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js" in cdn and "* plotly.js v" not in cdn
    assert (
        "<script src='plotly.min.js'>" in directory
        and (reports["directory"].parent / "plotly.min.js").stat().st_size > 1e6
    )
    assert len(cdn) < len(inline) / 3
    assert (
        cdn.count('class="plotly-graph-div"')
        == inline.count('class="plotly-graph-div"')
        == directory.count('class="plotly-graph-div"')
    )
    print(
        f"\nreport sizes: inline {len(inline.encode())} B, cdn {len(cdn.encode())} B, "
        f"directory {len(directory.encode())} B"
    )


def test_analyze_figures_share_one_plotly(reports, tmp_path):
    from mi_plateau.api import analyze

    analyze([reports["tiny"].path], tmp_path / "an", progress=False)
    fig = (tmp_path / "an" / reports["tiny"].name / "figure3.html").read_text()
    assert "<script src='../plotly.min.js'>" in fig and "* plotly.js v" not in fig
    assert (tmp_path / "an" / "plotly.min.js").is_file()


def test_user_strings_escaped(reports):
    text = reports["compare"].read_text()
    assert SCRIPT not in text and BAD_NAME not in text
    assert "alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # config preset and argv, shown as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text  # the run name, shown as text


def test_cli_main_prints_path(reports, tmp_path, capsys, monkeypatch):
    from mi_plateau.cli import main

    monkeypatch.chdir(tmp_path)  # the passes cache under ./analyses/, never the checkout's
    name = reports["tiny"].name
    shutil.copytree(reports["analyses"] / name / "passes", tmp_path / "analyses" / name / "passes")
    out = tmp_path / "r.html"
    assert main(["report", str(reports["tiny"].path), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.stat().st_size > 1_000_000


@pytest.mark.browser
@pytest.mark.parametrize("which", ["single", "compare", "directory", "llc"])
def test_renders_in_headless_chromium(reports, which, tmp_path, render_status):
    page = reports[which]
    st = render_status(page, tmp_path)
    print(f"\n{which}: {page.stat().st_size} B, load event at {st['load_ms']} ms in headless Chromium")
    assert st["errors"] == []
    assert st["expected"] == page.read_text().count('class="plotly-graph-div"')
    assert st["plots"] == st["expected"] and st["svgs"] == st["expected"]


@pytest.mark.browser
def test_headless_check_sees_errors(reports, tmp_path, render_status):
    """The status the browser test reads does catch a script error (the check can fail)."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        reports["single"].read_text().replace("</body>", "<script>throw new Error('boom')</script></body>")
    )
    st = render_status(broken, tmp_path)
    assert any("boom" in e for e in st["errors"])


def test_report_tables_use_the_pass_settings_given(tiny_run, tmp_path):
    """``report(pass_config=...)``: the tables are computed with those settings (Table 6 at the
    fractions of tau asked for), not the defaults."""
    import pandas as pd

    from mi_plateau.passes.analyze import PassConfig
    from mi_plateau.report import gather

    pc = PassConfig(table6_fracs=(0.5,), n_boot=0)
    d = gather(tiny_run, tmp_path / "an", pc, progress=False, options=RunOptions(device="cpu"))
    t6 = pd.DataFrame(d["table6"])
    assert set(t6["target"]) == {"0.5 tau"}  # the default would give 0.25, 0.5, 1 and 1.5 tau


def test_an_llc_curve_is_drawn_beside_its_runs_loss(reports):
    page = reports["llc"].read_text()
    assert "The learning coefficient" in page and "LLC estimate" in page
    assert "The learning coefficient" not in reports["single"].read_text()
    ys = [r["llc_mean"] for r in reports["llc_rows"]]
    assert json.dumps(ys[1:]).strip("[]") in page.replace(".0,", ",").replace(".0]", "]") or str(ys[1]) in page


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"rows": []}, "not an LLC curve"),
        ([1, 2], "not an LLC curve"),
        ({"run": "/x/other", "rows": [{"step": 0}]}, "other"),
    ],
)
def test_a_bad_llc_file_is_refused_before_any_work(reports, tmp_path, doc, words):
    from mi_plateau.checkpoints import RunError
    from mi_plateau.report import report

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(RunError, match=words) as e:
        report([reports["tiny"].path], tmp_path / "r.html", progress=False, analyses=tmp_path / "an", llc=[bad])
    assert "\n" not in str(e.value) and not (tmp_path / "an").exists()


@pytest.mark.parametrize("which", ["single", "compare", "llc"])
def test_navigation_links_every_runs_sections_and_each_link_lands(reports, which):
    """A page of several runs linked only the first run's sections."""
    import re

    page = reports[which].read_text()
    nav = page[page.index("<nav") : page.index("</nav>")] if "<nav" in page else page
    links = re.findall(r"<a href='#([^']+)'>", nav)
    ids = set(re.findall(r"id='([^']+)'", page)) | set(re.findall(r'id="([^"]+)"', page))
    assert links and all(a in ids for a in links), [a for a in links if a not in ids]
    runs = 2 if which == "compare" else 1
    for i in range(runs):
        assert {f"r{i}-heads", f"r{i}-attn", f"r{i}-groups"} <= set(links)
    assert ("r0-llc" in links) == (which == "llc")


def test_the_notes_say_what_the_registered_interventions_do(reports):
    """Table 9's note names the head ablation the passes ran, and the patching note every
    registered patch, from the registry (``mi_plateau.interventions``)."""
    from mi_plateau.interventions import head_ablation_named, resid_patches

    page = reports["single"].read_text()
    assert f"with the head's {head_ablation_named('zero').legend}, minus clean" in page
    assert all(f"{p.name} = {p.legend}" in page for p in resid_patches())
