"""notebooks/tutorial.ipynb runs top to bottom in a fresh kernel of this interpreter (the venv's
Python, as CI installs it), writes only under its temporary folder, and is committed without
outputs."""

import json
import re
import sys
from pathlib import Path

import pytest

import mi_plateau

NOTEBOOK = Path(mi_plateau.__file__).parents[1] / "notebooks" / "tutorial.ipynb"

# appended to the notebook when the test runs it: what the tutorial's objects hold, as one JSON line
CHECK = """
import json
print("CHECK " + json.dumps({
    "converged": s["converged"],
    "plateau_ratio_Lc": s["definitions"]["first_token"]["plateau_ratio"],
    "records_columns": sorted(df.columns),
    "attn_heads": len(attn),
    "heads_columns": sorted(heads.columns),
    "heads": sorted(heads.index),
    "table6_definitions": sorted(set(t6["definition"])),
    "routing_head": ro["routing_head"],
    "work": str(work),
    "work_removed": not work.exists(),
}))
"""


def test_committed_notebook_has_no_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    assert code
    kept = [i for i in code if nb["cells"][i]["outputs"] or nb["cells"][i]["execution_count"] is not None]
    assert not kept, f"{NOTEBOOK.name}: cells {kept} keep outputs or execution counts; clear all outputs and save"


def _kernel_spec(root: Path, name: str) -> None:
    """A kernel spec for this interpreter under ``root`` (on JUPYTER_PATH, which comes before the
    user's own kernels): a "python3" registered elsewhere cannot stand in for the venv."""
    spec = root / "kernels" / name
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name, "language": "python"}))


def _text(cell) -> str:
    """A code cell's printed and displayed text (stdout, text/plain)."""
    parts = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
    return "".join(parts)


def test_tutorial_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # everything the kernel and Jupyter write goes under tmp_path; the kernel inherits the environment
    for var, sub in (
        ("JUPYTER_PATH", "jupyter"),
        ("JUPYTER_DATA_DIR", "jupyter_data"),
        ("JUPYTER_RUNTIME_DIR", "jupyter_runtime"),
        ("IPYTHONDIR", "ipython"),
        ("TMPDIR", "tmp"),
    ):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    _kernel_spec(tmp_path / "jupyter", "mi_plateau_test")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(CHECK))
    client = nbclient.NotebookClient(
        nb,
        kernel_name="mi_plateau_test",
        timeout=600,  # per cell
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # a cell that raises fails the test here (CellExecutionError)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o["output_type"] == "error"]
    text = "\n".join(_text(c) for c in code)

    # the summary: each family's tau with its interval, and the transition
    for fam, loss in (("paper", "L_seq"), ("first_token", "Lc")):
        tau = r"tau \d+ \[\d+, \d+\] \((exact|estimate)\)"
        line = rf"{fam} \({loss}\): plateau [\d.]+ log K; {tau}; transition \d+ -> \d+"
        assert re.search(line, text), f"no summary line for {fam} in:\n{text[:3000]}"
    assert "routing head L" in text
    # the loss curves, the attention pattern and Figure 3 drawn inline
    plotly = [c for c in code if any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in c.outputs)]
    assert len(plotly) >= 3

    check = json.loads(re.search(r"^CHECK (.*)$", text, re.M).group(1))
    assert check["converged"] and 0.9 < check["plateau_ratio_Lc"] < 1.3  # a plateau at log K, then a transition
    assert {"step", "L_seq", "Lc", "swap_gap"} <= set(check["records_columns"])
    assert check["attn_heads"] == 8  # the demo preset: 2 layers of 4 heads
    assert {"dL", "dL_lo", "dL_hi", "dLc", "sel_attn", "causal_share"} <= set(check["heads_columns"])
    assert check["heads"] == [f"L{layer}H{h}" for layer in range(2) for h in range(4)]
    assert check["table6_definitions"] == ["first_token", "paper"]
    assert re.fullmatch(r"L\dH\d", check["routing_head"])
    # the run lived under the temporary folder, and the last cell removed it
    assert Path(check["work"]).is_relative_to(tmp_path / "tmp") and check["work_removed"]
