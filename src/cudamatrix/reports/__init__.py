"""Reports made from cell results: JSON, Markdown, JUnit XML and a web page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..common.files import write_atomic
from ..errors import UserError
from ..record.baseline import BaselineDiff
from ..record.history import PastRun
from ..record.results import CellResult, RunInfo, results_document
from .formats import RunReport, named_formats, rendered, results_json

__all__ = ["results_json", "write_reports"]


def write_reports(out: Path, info: RunInfo, results: Sequence[CellResult],
                  diff: BaselineDiff | None = None,
                  history: Sequence[PastRun] = ()) -> list[Path]:
    """Every report of a run into `out`, one file a format (formats.py); `history` (the
    earlier runs kept, oldest first, this one last) goes beside them as history.json and
    into the page. A plugin's format that fails is one line naming it, raised once every
    other format is written."""
    ordered = sorted(results, key=lambda r: r.cell.sort_key())
    document = results_document(info, ordered)
    if diff is not None:
        document["baseline"] = diff.to_dict()
    run = RunReport(info, ordered, document, diff, tuple(history))
    written = []
    broken: list[str] = []
    for named in named_formats():
        try:
            text = rendered(named, run)
        except UserError as exc:
            broken.append(str(exc))  # the other formats are still written
            continue
        if text is not None:
            write_atomic(out / named.format.file_name, text)
            written.append(out / named.format.file_name)
    if broken:
        raise UserError("; ".join(broken) + f" (the other reports are written in {out})")
    return written
