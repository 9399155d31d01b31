"""Reports made from cell results: JSON, Markdown, JUnit XML and a web page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..common.files import write_atomic
from ..record.baseline import BaselineDiff
from ..record.history import PastRun
from ..record.results import CellResult, RunInfo, results_document
from .formats import RunReport, report_formats, results_json

__all__ = ["results_json", "write_reports"]


def write_reports(out: Path, info: RunInfo, results: Sequence[CellResult],
                  diff: BaselineDiff | None = None,
                  history: Sequence[PastRun] = ()) -> list[Path]:
    """Every report of a run into `out`, one file a format (formats.py); `history` (the
    earlier runs kept, oldest first, this one last) goes beside them as history.json and
    into the page."""
    ordered = sorted(results, key=lambda r: r.cell.sort_key())
    document = results_document(info, ordered)
    if diff is not None:
        document["baseline"] = diff.to_dict()
    run = RunReport(info, ordered, document, diff, tuple(history))
    written = []
    for report in report_formats():
        text = report.render(run)
        if text is not None:
            write_atomic(out / report.file_name, text)
            written.append(out / report.file_name)
    return written
