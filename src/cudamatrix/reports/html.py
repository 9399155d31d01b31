"""The web report: one self-contained page (jinja2), readable offline and from an artifact.

The grids are rendered on the server side, so the page reads without scripts; the
small inline script adds the filters and the cell panel from the same data,
embedded as JSON. Nothing is fetched from the network.
"""

from __future__ import annotations

import re
import shlex
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
from ..record.results import CellResult, RunInfo, summary
from ..record.verdict import OUTCOMES
from .answers import GLYPHS, VERBS, answer_grid, case_answers, css_class
from .glance import UNEXPECTED, likely_culprit, repro
from .labels import row_label
from .markdown import header

FLIPS_SHOWN = 200
# Per-cell logs are cut to this many characters in the page; results.json keeps them whole.
LOG_LIMIT = 40_000


def _plain(markdown_line: str) -> str:
    return markdown_line.lstrip("- ").replace("**", "").replace("`", "")


def _cell_data(result: CellResult, info: RunInfo) -> dict[str, Any]:
    cell = result.cell
    return {
        "repro": (f"cd {shlex.quote(info.repro_folder)} && " if info.repro_folder else "")
        + repro(cell, info) if result.outcome in UNEXPECTED else "",
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
        "seconds": round(result.seconds, 2), "versions": result.versions,
        "stages": [{"stage": s.stage, "status": s.status, "message": s.message,
                    "seconds": round(s.seconds, 2),
                    "log": s.log if len(s.log) <= LOG_LIMIT
                    else s.log[:LOG_LIMIT] + "\n… (cut; results.json has it all)"}
                   for s in result.stages],
    }


def _grids(results: Sequence[CellResult]) -> list[dict[str, Any]]:
    """Per case, per variant: rows of toolkit (and library), columns of archs."""
    cases: dict[str, dict[str, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        cases[result.cell.case][result.cell.variant].append(result)
    grids = []
    for case_id, variants in cases.items():
        first = next(iter(variants.values()))[0]
        entries = []
        for variant, cells in variants.items():
            archs = sorted({r.cell.arch for r in cells}, key=Arch.parse)
            rows: dict[str, dict[str, CellResult]] = defaultdict(dict)
            for r in cells:
                rows[row_label(r.cell)][r.cell.arch] = r
            entries.append({"name": variant, "frontend": cells[0].cell.frontend, "archs": archs,
                            "rows": [{"label": label, "cells": [row.get(a) for a in archs]}
                                     for label, row in rows.items()]})
        grids.append({"id": case_id, "title": first.title, "upstream": first.upstream,
                      "variants": entries})
    return grids


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


# A cell's outcome in each kept run, one letter a run: the page draws the strip from it.
HISTORY_CODES = {"pass": "p", "xfail": "x", "xpass": "X", "fail": "f", "error": "e",
                 "skip": "s", "": "-"}


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


def html_report(info: RunInfo, results: Sequence[CellResult],
                diff: BaselineDiff | None = None, history: Sequence[PastRun] = ()) -> str:
    env = _environment()
    cells = {r.cell.id: _cell_data(r, info) for r in results}
    env.tests["web_link"] = is_web_link
    kept = list(history) if len(history) > 1 else []
    runs = _history_data(kept, cells) if kept else {"runs": [], "codes": {}}
    # Embedded in a <script> element by Jinja's tojson, which writes no '<', '>', '&' or "'"
    # (so no ``</script>`` or ``<!--<script>`` from a log can end or swallow the page's code).
    payload = {"cells": cells, "history": runs}
    flipped = flips(kept)
    filters = {
        "toolkit": sorted({r.cell.toolkit for r in results},
                          key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")]),
        "arch": sorted({r.cell.arch for r in results}, key=Arch.parse),
        "library": sorted({c["library"] for c in cells.values() if c["library"]}),
        "frontend": sorted({r.cell.frontend for r in results}),
    }
    return env.get_template("report.html.j2").render(
        info=info, header=[_plain(line) for line in header(info)],
        counts=summary(results), outcomes=OUTCOMES, grids=_grids(results),
        coverage=coverage(results), filters=filters, payload=payload, diff=diff,
        answers=case_answers(results), grid=answer_grid(results, info),
        glyph_legend=[(GLYPHS[w], css_class(w), VERBS[w]) for w in VERBS],
        culprit=likely_culprit(results), history=kept, flips=flipped[:FLIPS_SHOWN],
        flip_count=len(flipped),
        total=len(results))
