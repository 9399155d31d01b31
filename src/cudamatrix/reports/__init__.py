"""Reports made from cell results: JSON, Markdown, JUnit XML and a web page."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..results import CellResult, RunInfo, results_document, write_atomic
from .junit import junit_xml
from .markdown import markdown_report


def write_reports(out: Path, info: RunInfo, results: Sequence[CellResult]) -> list[Path]:
    ordered = sorted(results, key=lambda r: r.cell.sort_key())
    written = []
    for name, text in (
        ("results.json", json.dumps(results_document(info, ordered), indent=1)),
        ("COMPATIBILITY.md", markdown_report(info, ordered)),
        ("junit.xml", junit_xml(info, ordered)),
    ):
        write_atomic(out / name, text)
        written.append(out / name)
    return written
