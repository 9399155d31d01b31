"""The report formats, behind one small seam: a format is a file name and a function from
the run to that file's text, found by the ``cudamatrix.reports`` entry points (the
built-ins below and in their modules, a plugin's as theirs), as frontends, providers and
commands are. Adding one is its module and one line of pyproject.toml; `write_reports`
does not change."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..common import plugins
from ..errors import UserError
from ..record.baseline import BaselineDiff
from ..record.history import PastRun, history_document
from ..record.results import CellResult, RunInfo


@dataclass(frozen=True)
class RunReport:
    """What every format is made from: the run, its cells in report order, results.json's
    document (with the baseline's comparison where there is one), the comparison itself
    and the earlier runs kept (oldest first, this one last)."""

    info: RunInfo
    results: Sequence[CellResult]
    document: dict[str, Any]
    diff: BaselineDiff | None = None
    history: Sequence[PastRun] = field(default_factory=tuple)


@dataclass(frozen=True)
class ReportFormat:
    """One file of a run's reports: its name in ``--out`` and how it is written (None:
    nothing to write for this run, as history.json without earlier runs)."""

    file_name: str
    render: Callable[[RunReport], str | None]


def results_json(document: dict[str, Any]) -> str:
    """results.json with a line per cell: as easy to diff cell by cell as an indented file,
    and written by json's C encoder (an indented dump takes the pure-Python one, the
    largest part of a warm nightly run's reports)."""
    head = json.dumps({k: v for k, v in document.items() if k != "cells"}, indent=1)
    cells = ",\n".join("  " + json.dumps(cell) for cell in document["cells"])
    return f'{head[:-2]},\n "cells": [\n{cells}\n ]\n}}\n' if cells else \
        f'{head[:-2]},\n "cells": []\n}}\n'


RESULTS_JSON = ReportFormat("results.json", lambda run: results_json(run.document))
HISTORY_JSON = ReportFormat("history.json", lambda run: json.dumps(
    history_document(run.history)) if run.history else None)


def report_formats() -> list[ReportFormat]:
    """Every format, the built-ins first, from the ``cudamatrix.reports`` entry points; an
    entry that is no `ReportFormat`, or a file name two formats take, is one line."""
    found: list[ReportFormat] = []
    for name, loaded in plugins.load(plugins.REPORTS).items():
        if not isinstance(loaded, ReportFormat):
            raise UserError(f"entry point {plugins.REPORTS} {name}: {loaded!r} is not a "
                            "ReportFormat (a file name and a render function)")
        taken = next((f for f in found if f.file_name == loaded.file_name), None)
        if taken is not None:
            raise UserError(f"entry point {plugins.REPORTS} {name}: {loaded.file_name} is "
                            "another format's file; give the plugin's format another name")
        found.append(loaded)
    return found
