"""GitLab CI output: a section of the job log with what a person looks for first, and the
merge request note (`gitlab-note.md` beside the report), each within GitLab's limits.

GitLab has no step summary and no annotations: a job's log is what the pipeline page shows,
folded into sections by its `section_start`/`section_end` markers, and a note's body is
refused over 1,000,000 characters. So the log gets one open section (the counts, the
failures that count, at most `LOG_CELLS` of them, each line bounded), and the note is the
Markdown report cut at a line boundary to fit, saying where the rest is.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..common.log_line import log_line
from ..common.words import shortened
from ..record.baseline import BaselineDiff
from ..record.outcomes import FAILING
from ..record.results import CellResult, summary
from .budget import whole_lines_within

NOTE_LIMIT_CHARS = 1_000_000
# Room for what a job adds around the note (a heading, a link to the pipeline).
NOTE_BUDGET_CHARS = NOTE_LIMIT_CHARS - 16_000
NOTE_FILE = "gitlab-note.md"
LOG_CELLS = 20
LOG_LINE_CHARS = 400
SECTION = "cudamatrix_summary"


def log_section(results: Sequence[CellResult], diff: BaselineDiff | None,
                started: int | None = None) -> list[str]:
    """The job log's section: opened unfolded, the counts, then the failures that count
    (only the new ones where there is a baseline), the worst first as the report orders
    them, then how many more the report has."""
    stamp = int(time.time()) if started is None else started
    counts = summary(results)
    by_id = {r.cell.id: r for r in results}
    if diff is not None:
        failing = [by_id[c.cell] for c in diff.new_failures if c.cell in by_id]
        what = f"new failures since {diff.source}"
    else:
        failing = [r for r in results if r.outcome in FAILING]
        what = "failures (no baseline: every one counts)"
    lines = [f"\x1b[0Ksection_start:{stamp}:{SECTION}[collapsed=false]\r\x1b[0K"
             + log_line(f"cudamatrix: {len(results)} cells, "
                        + " ".join(f"{k}={v}" for k, v in counts.items() if v)),
             log_line(f"{len(failing)} {what}")]  # the baseline's name: the user's words
    for result in failing[:LOG_CELLS]:  # a record's words: one log line, shown, bounded
        line = f"  {result.cell.id}: {result.outcome} at {result.stage}: " + (
            result.message or result.reason)
        lines.append(log_line(shortened(" ".join(line.split()), LOG_LINE_CHARS)))
    if len(failing) > LOG_CELLS:
        lines.append(f"  … {len(failing) - LOG_CELLS} more: COMPATIBILITY.md and report.html "
                     "in the job's artifacts have them all")
    lines.append(f"\x1b[0Ksection_end:{stamp}:{SECTION}\r\x1b[0K")
    return lines


def note(markdown: str, report_name: str = "COMPATIBILITY.md") -> str:
    """The Markdown report as a merge request note: whole where it fits GitLab's limit,
    else cut at a line boundary with a line saying where the whole report is."""
    if len(markdown) <= NOTE_BUDGET_CHARS:
        return markdown
    return whole_lines_within(markdown, NOTE_BUDGET_CHARS) + (
        f"\n… cut to fit GitLab's {NOTE_LIMIT_CHARS:,} character note; the whole report is "
        f"{report_name} in the pipeline's artifacts.\n")


def publish(report: Path, results: Sequence[CellResult], diff: BaselineDiff | None) -> bool:
    """Under GitLab CI, print the log's section and write the note beside the written
    Markdown `report`; False elsewhere."""
    if os.environ.get("GITLAB_CI") != "true":
        return False
    # Written as made: the section's markers are GitLab's escapes (ESC [0K, CR), which the
    # log line would show rather than pass; every line of a record's words went through
    # log_line in log_section.
    sys.stdout.write("".join(line + "\n" for line in log_section(results, diff)))
    sys.stdout.flush()
    (report.parent / NOTE_FILE).write_text(note(report.read_text(encoding="utf-8")),
                                           encoding="utf-8")
    return True
