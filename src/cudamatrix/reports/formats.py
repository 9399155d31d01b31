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


@dataclass(frozen=True)
class NamedFormat:
    """A format with the entry point it came from: what a broken one is called by."""

    entry: str
    format: ReportFormat


def plain_file_name(name: object) -> bool:
    """Whether `name` is one file's name in ``--out``: a plugin's ``../escaped.csv`` or
    ``/etc/x`` would be written wherever it points, outside the folder the user gave, and
    a dot name could be the tool's own (the --out lock, a file's temporary)."""
    return (isinstance(name, str) and name != "" and not name.startswith(".")
            and "/" not in name
            and "\\" not in name and "\0" not in name and name.isprintable()
            and len(name.encode(errors="surrogateescape")) <= 255)


def named_formats() -> list[NamedFormat]:
    """Every format with its entry point's name, the built-ins first, from the
    ``cudamatrix.reports`` entry points; an entry that is no `ReportFormat`, a file name
    that is not a plain name inside ``--out``, or one two formats take, is one line."""
    found: list[NamedFormat] = []
    for name, loaded in plugins.load(plugins.REPORTS).items():
        where = f"entry point {plugins.REPORTS} {name}"
        if not isinstance(loaded, ReportFormat):
            raise UserError(f"{where}: {loaded!r:.80} is not a ReportFormat (a file name and "
                            "a render function)")
        if not plain_file_name(loaded.file_name):
            raise UserError(f"{where}: its file name {loaded.file_name!a:.80} is not a plain "
                            "file name (a report is written inside --out, never beside it)")
        taken = next((f for f in found if f.format.file_name == loaded.file_name), None)
        if taken is not None:
            raise UserError(f"{where}: {loaded.file_name} is another format's file; give the "
                            "plugin's format another name")
        found.append(NamedFormat(name, loaded))
    return found


def report_formats() -> list[ReportFormat]:
    """Every format, checked as `named_formats` checks them, without their entry names."""
    return [named.format for named in named_formats()]


def rendered(named: NamedFormat, run: RunReport) -> str | None:
    """The format's text for this run, or None for no file; a render that raises or
    answers anything but text (a plugin's is someone else's code) is one line naming its
    entry point."""
    where = f"report {plugins.REPORTS} {named.entry} ({named.format.file_name})"
    try:
        text = named.format.render(run)
    except Exception as exc:  # a plugin's render may raise anything
        raise UserError(f"{where}: its render failed ({type(exc).__name__}: "
                        f"{str(exc)[:200]!a})") from None
    if text is not None and not isinstance(text, str):
        raise UserError(f"{where}: its render returned {type(text).__name__}, not text "
                        "(str) or None")
    return text
