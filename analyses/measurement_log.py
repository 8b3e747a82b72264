"""The one log mechanism of the measurement scripts beside it: a JSON log under docs/reproduction/
holding one row (or several) per run, from which each script rebuilds its tables alone.

``MI_PLATEAU_DOCS`` names another folder (the rebuild test writes the tables beside a copy of the
log). Each script: ``args()`` parses ``RUN ... | --build``, ``Log(name)`` reads the log,
``log.replace(run_name, rows)`` puts a run's rows in place of its earlier ones and writes the log
atomically at once (a script killed midway keeps every run it finished).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from mi_plateau.checkpoints import atomic_write_text

DOCS = Path(os.environ.get("MI_PLATEAU_DOCS") or Path(__file__).resolve().parent.parent / "docs" / "reproduction")


def run_name(run) -> str:
    """A run's name in the logs: its folder under checkpoints/ (``p57/paper_K30_nb300_s3`` beside an
    earlier ``paper_K30_nb300_s3``), or the folder's own name outside checkpoints/."""
    parts = Path(run.path).resolve().parts
    return "/".join(parts[parts.index("checkpoints") + 1 :]) if "checkpoints" in parts else Path(run.path).name


def args(doc: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("runs", nargs="*", help="run folders to measure and add to the log")
    p.add_argument("--build", action="store_true", help="only rebuild the tables from the committed log")
    return p.parse_args()


class Log:
    def __init__(self, name: str):
        self.path = DOCS / f"{name}_log.json"
        doc = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.rows: list[dict] = doc.get("rows", [])
        self.updated: str | None = doc.get("updated")

    def replace(self, run: str, rows: list[dict]) -> None:
        self.rows = [r for r in self.rows if r["run"] != run] + rows
        self.updated = time.strftime("%Y-%m-%d")
        atomic_write_text(self.path, json.dumps({"rows": self.rows, "updated": self.updated}, indent=1) + "\n")
