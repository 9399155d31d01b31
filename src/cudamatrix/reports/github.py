"""GitHub Actions output: workflow-command annotations and the job's step summary.

GitHub shows at most 10 annotations of each type per step (and 50 per job) and
refuses a step summary over 1 MiB, so both are budgeted here: the worst cells
first, a last annotation that says how many more there are, and a summary cut
at a line boundary with a pointer to the full report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..common.log_line import annotation_data, annotation_property
from ..record.baseline import BaselineDiff
from ..record.outcomes import FAILING
from ..record.results import CellResult
from .budget import whole_lines_within

ANNOTATIONS_PER_TYPE = 10
SUMMARY_LIMIT_BYTES = 1024 * 1024
# Room for the closing note and for whatever earlier steps appended to the same file.
SUMMARY_BUDGET_BYTES = SUMMARY_LIMIT_BYTES - 64 * 1024


def _command(kind: str, title: str, message: str) -> str:
    """One workflow command on one line: what a case or a compiler wrote is in its values
    alone, escaped as GitHub reads them, and cannot end the line or start another."""
    return f"::{kind} title={annotation_property(title)}::{annotation_data(message)}"


def _budgeted(kind: str, items: list[tuple[str, str]], what: str) -> list[str]:
    lines = [_command(kind, t, m) for t, m in items[:ANNOTATIONS_PER_TYPE - 1]]
    if len(items) == ANNOTATIONS_PER_TYPE:
        lines.append(_command(kind, *items[-1]))
    elif len(items) > ANNOTATIONS_PER_TYPE:
        rest = len(items) - (ANNOTATIONS_PER_TYPE - 1)
        lines.append(_command(kind, f"{rest} more {what}",
                              "see the step summary and COMPATIBILITY.md for all of them"))
    return lines


def annotation_lines(results: Sequence[CellResult], diff: BaselineDiff | None) -> list[str]:
    """Errors for failures (only the new ones when there is a baseline), warnings for xpass."""
    by_id = {r.cell.id: r for r in results}
    if diff is not None:
        failing = [by_id[c.cell] for c in diff.new_failures if c.cell in by_id]
        what = "new failures"
    else:
        failing = [r for r in results if r.outcome in FAILING]
        what = "failures"
    errors = []
    for r in failing:
        rule = (r.diagnosis or {}).get("title", "")
        errors.append((f"{r.cell.id}: {r.outcome} at {r.stage}",
                       (r.message or r.reason) + (f" [{rule}]" if rule else "")))
    warnings = [(f"{r.cell.id}: xpass", "expected to fail but worked; possibly fixed upstream: "
                 + (", ".join(r.upstream) or r.expected)) for r in results if r.outcome == "xpass"]
    # A kernel that starts to spill or grows is a warning, whatever its cell's outcome.
    warnings += [(f"{c.cell}: resources", c.describe())
                 for c in (diff.resources if diff is not None else [])]
    # A kernel that got slower beyond its noise, too (time_changes.py).
    warnings += [(f"{c.cell}: time", c.describe())
                 for c in (diff.slower if diff is not None else [])]
    return _budgeted("error", errors, what) + _budgeted(
        "warning", warnings, "unexpected passes, resource or time changes")


def step_summary(markdown: str, report_name: str = "COMPATIBILITY.md") -> str:
    """The Markdown report, cut at a line boundary to fit GitHub's step summary limit."""
    if len(markdown.encode()) <= SUMMARY_BUDGET_BYTES:
        return markdown
    kept = whole_lines_within(markdown, SUMMARY_BUDGET_BYTES, lambda line: len(line.encode()))
    return kept + (f"\n\n… cut to fit GitHub's 1 MiB step summary; the whole report "
                   f"is {report_name} in the run's artifacts.\n")


def publish(report: Path, results: Sequence[CellResult], diff: BaselineDiff | None) -> bool:
    """Under GitHub Actions, print annotations and append the written Markdown `report` to the
    step summary; False elsewhere."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return False
    for line in annotation_lines(results, diff):
        # Plain stdout, never through the log's rule (which would break the command on
        # purpose) nor rich (a wrapped workflow command is no command): the one place the
        # tool starts a line with `::`, its values escaped (_command).
        print(line, flush=True)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with Path(summary_file).open("a", encoding="utf-8") as handle:
            handle.write(step_summary(report.read_text(encoding="utf-8")))
    return True
