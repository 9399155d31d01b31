"""The web report: one self-contained page (jinja2), readable offline and from an artifact.

The first screen is the answer as pictures: the counts, where the code works per toolkit
x arch (a chart drawn to SVG when the report is written, charts.py) and the grid of every
cell. The grid, the filters and each cell's panel are drawn in the page by its small
inline script from the run's data, embedded once as JSON: a nightly's 10,000 cells are
not 10,000 elements written out. Nothing is fetched from the network.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, select_autoescape
from jinja2.bccache import Bucket

from ..common.versions import Arch
from ..config.options import default_cache
from ..record.baseline import BaselineDiff
from ..record.history import PastRun, cell_history, flips
from ..record.outcomes import FAILING, OUTCOMES
from ..record.results import CellResult, RunInfo, summary
from ..stages.cell.result import said_stage_seconds
from .answers import (
    Grid,
    GridCell,
    answer_grid,
    case_answers,
    css_class,
)
from .charts import named_svg, run_charts, svg
from .formats import ReportFormat
from .glance import UNEXPECTED, CompiledOnly, happened, likely_culprit, repro, repro_root
from .markdown import header
from .symbols import HISTORY_CODES, OUTCOME_COLOURS, SYMBOLS, VERBS

FLIPS_SHOWN = 200
# Per-cell logs are cut to this many characters in the page; results.json keeps them whole.
LOG_LIMIT = 40_000
# All the logs of a page together: a nightly's thousands of cells share it, each log cut to
# its part (never under LOG_FLOOR), so the page stays quick to open. A stage that did not
# succeed says why in its log; one that did shares a smaller budget (its log is its
# command lines and the compiler's figures, which the panel shows otherwise).
LOG_BUDGET = 4_000_000
LOG_FLOOR = 300
OK_LOG_BUDGET = 500_000
OK_LOG_LIMIT = 4_000
# What many cells share, kept once in the page and named by its place: a toolkit's package
# versions, a rule's diagnosis, a case's upstream reports and notes, a variant's kernel;
# a kernel's registers and what its build ships, alike for every library version and host
# a toolkit x arch builds it with, and a message many cells end with (issue 82: 3.2 MB of
# a 10,516-cell page).
SHARED = ("versions", "diagnosis", "upstream", "note", "expected", "prediction", "reason",
          "kernel", "resources", "ships", "message")
# A stage's values in the page, in this order: the keys once, not once a stage.
STAGE_KEYS = ("stage", "status", "message", "seconds", "said", "log")
# A case's sentence longer than this is folded under its beginning.
SENTENCE_FOLD = 260


def _plain(markdown_line: str) -> str:
    return markdown_line.lstrip("- ").replace("**", "").replace("`", "")


def _cut(log: str, limit: int) -> str:
    return log if len(log) <= limit else log[:limit] + "\n… (cut; results.json has it all)"


def log_limit(results: Sequence[CellResult]) -> tuple[int, int]:
    """Each log's share of the page's budgets: a stage that did not succeed (between
    LOG_FLOOR and LOG_LIMIT), and one that did (at most OK_LOG_LIMIT, none at all where
    too many share OK_LOG_BUDGET)."""
    failed = sum(1 for r in results for s in r.stages if s.log and s.status != "ok")
    succeeded = sum(1 for r in results for s in r.stages if s.log and s.status == "ok")
    ok_limit = min(OK_LOG_LIMIT, OK_LOG_BUDGET // max(succeeded, 1))
    return (max(LOG_FLOOR, min(LOG_LIMIT, LOG_BUDGET // max(failed, 1))),
            ok_limit if ok_limit >= LOG_FLOOR else 0)


class Shared:
    """Values many cells hold alike, each kept once: a cell names its place instead."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._places: dict[str, int] = {}

    def place(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True)
        if key not in self._places:
            self._places[key] = len(self.values)
            self.values.append(value)
        return self._places[key]


def _cell_data(result: CellResult, info: RunInfo, limits: tuple[int, int] = (LOG_LIMIT,
               OK_LOG_LIMIT), shared: Shared | None = None) -> dict[str, Any]:
    cell = result.cell
    failed_limit, ok_limit = limits
    data = {
        "happened": happened(result),
        "repro": repro(cell, info) if result.outcome in UNEXPECTED else "",
        "id": cell.id, "case": cell.case, "variant": cell.variant, "frontend": cell.frontend,
        "toolkit": cell.toolkit, "arch": cell.arch,
        "library": f"{cell.library} {cell.library_version}" if cell.library else "",
        "outcome": result.outcome, "stage": result.stage, "reached": result.reached,
        "message": result.message, "reason": result.reason, "expected": result.expected,
        "note": result.note,
        "diagnosis": result.diagnosis, "upstream": list(result.upstream),
        "resources": result.resources, "warnings": result.warnings, "ships": result.ships,
        "kernel": result.kernel, "timing": result.timing,
        "prediction": result.prediction,
        "attempts": list(result.attempts), "flaky": result.flaky,
        "seconds": round(result.seconds, 2), "versions": result.versions,
        # A stage's message where it is not the cell's decisive one (the panel says that).
        # Each stage as its values in STAGE_KEYS' order (the page names them once).
        "stages": [[s.stage, s.status, s.message if s.message != result.message else "",
                    round(s.seconds, 2), said_stage_seconds(s),
                    _cut(s.log, failed_limit if s.status != "ok" else ok_limit)
                    if s.status != "ok" or ok_limit else ""]
                   for s in result.stages],
    }
    if shared is not None:
        for key in SHARED:
            data[key] = shared.place(data[key])
    return data


def as_columns(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Records as their keys once and each record as its values in the keys' order (null
    where a record has no such key). Written out whole, a 10,000-cell page held each cell's
    30 key names 10,000 times: 3.5 of its 15.4 MB (issue 82), read again by the browser."""
    keys = list(dict.fromkeys(key for record in records for key in record))
    return {"keys": keys, "rows": [[record.get(key) for key in keys] for record in records]}


def coverage(results: Sequence[CellResult]) -> list[dict[str, Any]]:
    """How often each value of each axis was exercised, and with what outcomes."""
    axes: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        cell = r.cell
        values = {"toolkit": cell.toolkit, "arch": cell.arch, "frontend": cell.frontend}
        if cell.library:
            values["library"] = f"{cell.library} {cell.library_version}"
        if r.device:
            values["driver"] = str(r.device.get("driver", ""))
            values["gpu"] = f"{r.device.get('name', '')} ({r.device.get('arch', '')})"
        for axis, value in values.items():
            axes[axis][value][r.outcome] += 1
    table = []
    for axis, seen in axes.items():
        for value, outcomes in sorted(seen.items()):
            table.append({"axis": axis, "value": value, "cells": sum(outcomes.values()),
                          "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES}})
    return table


def is_web_link(text: object) -> bool:
    """Only http(s) addresses become links: ``javascript:`` from a case file stays text."""
    return isinstance(text, str) and re.match(r"https?://", text, re.IGNORECASE) is not None


def _history_data(history: Sequence[PastRun], cells: dict[str, dict[str, Any]]
                  ) -> dict[str, Any]:
    """The runs (date, commit) once, and per cell a string of outcome letters: 20 runs of
    the nightly tier's 2,000 cells stay tens of kilobytes."""
    for cell_id, data in cells.items():
        data["history"] = "".join(HISTORY_CODES.get(outcome, "?")
                                  for _, _, outcome in cell_history(history, cell_id))
        # A timed cell's median in each kept run (null where it was not timed): the panel
        # draws its time across the runs.
        times = [run.times.get(cell_id) for run in history]
        if sum(t is not None for t in times) >= 2:
            data["times"] = times
    return {"runs": [{"finished": r.finished, "revision": r.revision} for r in history],
            "codes": {code: outcome or "absent" for outcome, code in HISTORY_CODES.items()}}


class _QuietBytecodeCache(FileSystemBytecodeCache):
    """jinja2's compiled template kept in the tool's cache (a warm run renders without
    compiling it, 0.1 s); a cache that cannot be read or written is no cache, never an
    error."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _environment() -> Environment:
    return Environment(loader=PackageLoader("cudamatrix", "reports/templates"),
                       autoescape=select_autoescape(["html", "j2"]), trim_blocks=True,
                       lstrip_blocks=True,
                       bytecode_cache=_QuietBytecodeCache(str(default_cache() / "templates")))


# A grid cell's flags: not what its case expects; a failure its case expects; flaky.
UNEXPECTED_FLAG, EXPECTED_FAILURE_FLAG, FLAKY_FLAG = 1, 2, 4


def _grid_data(grid: Grid, index: dict[str, int]) -> dict[str, Any]:
    """The grid for the page's first script, apart from the cells' data so that it draws
    before the rest of the page has loaded: its columns once, and per row its label and
    each column's cell as [its index into the cells, what happened (an index into
    `happened`), its flags], or null where the run has none."""
    kinds = list(SYMBOLS)

    def flags(cell: GridCell) -> int:
        failed_as_expected = not cell.unexpected and cell.happened.startswith("fails")
        return (UNEXPECTED_FLAG * cell.unexpected + EXPECTED_FAILURE_FLAG * failed_as_expected
                + FLAKY_FLAG * cell.result.flaky)

    return {"columns": grid.columns, "happened": kinds,
            "kinds": [css_class(k).replace("h-", "k-") for k in kinds],
            "glyphs": [SYMBOLS[k] for k in kinds],
            "rows": [[row.case, row.variant, row.extra,
                      [[index[c.result.cell.id], kinds.index(c.happened), flags(c)] if c
                       else None for c in row.cells]]
                     for row in grid.rows]}


def _sentences(results: Sequence[CellResult]) -> list[dict[str, Any]]:
    """Per case, what its cells did in words; folded under its first words where long."""
    said = []
    for answer in case_answers(results):
        parts = [(variant, "; ".join(p.text for p in phrases),
                  sum(p.unexpected for p in phrases)) for variant, phrases in answer.parts()]
        size = sum(len(text) for _, text, _ in parts)
        said.append({"case": answer.case, "parts": parts,
                     "unexpected": sum(n for _, _, n in parts),
                     "fold": size > SENTENCE_FOLD})
    return said


def html_report(info: RunInfo, results: Sequence[CellResult],
                diff: BaselineDiff | None = None, history: Sequence[PastRun] = ()) -> str:
    env = _environment()
    limits = log_limit(results)
    shared = Shared()
    data = [_cell_data(r, info, limits, shared) for r in results]
    index = {r.cell.id: n for n, r in enumerate(results)}
    env.tests["web_link"] = is_web_link
    kept = list(history) if len(history) > 1 else []
    runs = _history_data(kept, {c["id"]: c for c in data}) if kept \
        else {"runs": [], "codes": {}}
    grid = answer_grid(results, info, audits=True)
    # Embedded in a <script> element by Jinja's tojson, which writes no '<', '>', '&' or "'"
    # (so no ``</script>`` or ``<!--<script>`` from a log can end or swallow the page's code).
    payload = {"cells": as_columns(data), "stage_keys": STAGE_KEYS, "shared": shared.values,
               "shared_keys": SHARED, "history": runs, "words": VERBS}
    flipped = flips(kept)
    filters = {
        "toolkit": sorted({r.cell.toolkit for r in results},
                          key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")]),
        "arch": sorted({r.cell.arch for r in results}, key=Arch.parse),
        "library": sorted({c["library"] for c in data if c["library"]}),
        "frontend": sorted({r.cell.frontend for r in results}),
    }
    happenings = Counter(happened(r) for r in results if r.cell.frontend != "audit")
    charts = [(chart, named_svg(svg(chart.spec), chart)) for chart in run_charts(results, kept)]
    counts = summary(results)
    compiled = CompiledOnly.of(results)
    return env.get_template("report.html.j2").render(
        info=info, header=[_plain(line) for line in header(info)], repro_root=repro_root(info),
        counts=counts, unexpected=sum(counts[o] for o in UNEXPECTED), outcomes=OUTCOMES,
        flaky=sum(r.flaky for r in results), compiled_only=compiled.said(),
        compiled_note=compiled.note(str((info.device or {}).get("reason") or "")),
        coverage=coverage(results), filters=filters, payload=payload, diff=diff,
        grid_payload=_grid_data(grid, index),
        sentences=_sentences(results), grid_columns=len(grid.columns),
        legend=[(SYMBOLS[w], css_class(w), VERBS[w], happenings.get(w, 0))
                for w in VERBS if happenings.get(w)],
        example=SYMBOLS["fails at compile"], failing=FAILING,
        outcome_colours=[(o, OUTCOME_COLOURS[o]) for o in OUTCOMES],
        first_chart=next((c for c in charts if c[0].id == "works"), None),
        charts=[c for c in charts if c[0].id != "works"],
        culprit=likely_culprit(results), history=kept, flips=flipped[:FLIPS_SHOWN],
        flip_count=len(flipped), total=len(results))


FORMAT = ReportFormat("report.html", lambda run: html_report(run.info, run.results, run.diff,
                                                           run.history))
