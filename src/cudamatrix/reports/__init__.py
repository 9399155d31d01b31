"""Reports made from cell results: JSON, Markdown, JUnit XML and a web page."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.files import write_atomic
from ..record.baseline import BaselineDiff
from ..record.history import PastRun, history_document
from ..record.results import CellResult, RunInfo, results_document
from .badge import badge
from .html import html_report
from .junit import junit_xml
from .markdown import markdown_report


def results_json(document: dict[str, Any]) -> str:
    """results.json with a line per cell: as easy to diff cell by cell as an indented file,
    and written by json's C encoder (an indented dump takes the pure-Python one, the
    largest part of a warm nightly run's reports)."""
    head = json.dumps({k: v for k, v in document.items() if k != "cells"}, indent=1)
    cells = ",\n".join("  " + json.dumps(cell) for cell in document["cells"])
    return f'{head[:-2]},\n "cells": [\n{cells}\n ]\n}}\n' if cells else \
        f'{head[:-2]},\n "cells": []\n}}\n'


def write_reports(out: Path, info: RunInfo, results: Sequence[CellResult],
                  diff: BaselineDiff | None = None,
                  history: Sequence[PastRun] = ()) -> list[Path]:
    """Every report of a run into `out`; `history` (the earlier runs kept, oldest first,
    this one last) goes beside them as history.json and into the page."""
    ordered = sorted(results, key=lambda r: r.cell.sort_key())
    document = results_document(info, ordered)
    if diff is not None:
        document["baseline"] = diff.to_dict()
    written = []
    for name, text in (
        ("results.json", results_json(document)),
        ("COMPATIBILITY.md", markdown_report(info, ordered, diff)),
        ("junit.xml", junit_xml(info, ordered)),
        ("report.html", html_report(info, ordered, diff, history)),
        ("badge.json", json.dumps(badge(ordered))),
        *((("history.json", json.dumps(history_document(history))),) if history else ()),
    ):
        write_atomic(out / name, text)
        written.append(out / name)
    return written
