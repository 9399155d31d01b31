"""COMPATIBILITY.md is GitHub's step summary (issue 58, point 3): the published run's 230
cells in at most 20 KB, and a large library's nightly (those cells copied 44 times, 10,120
cells) within GitHub's 1 MiB, what did not fit counted and left to the page, never a table
or a folded block cut in half."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from cudamatrix.record.results import CellResult, load_results
from cudamatrix.reports.budget import MARKDOWN_BUDGET_BYTES, Section, fitted
from cudamatrix.reports.markdown import markdown_report

REPO = Path(__file__).resolve().parents[2]
COPIES = 44


def _copied(cells: list[CellResult], copies: int) -> list[CellResult]:
    """The run's cells as `copies` libraries' worth: each copy's cases renamed."""
    return [dataclasses.replace(r, cell=dataclasses.replace(r.cell, case=f"{r.cell.case}-{n}"))
            for n in range(copies) for r in cells]


def test_the_published_run_is_at_most_20_kb() -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    text = markdown_report(info, cells)
    assert len(cells) >= 230
    assert len(text.encode()) <= 20 * 1024, len(text.encode())
    # One vocabulary: the legend's symbols, no second set of outcome marks.
    assert "✅" not in text and "🔶" not in text and "❌" not in text


def test_a_nightly_of_10120_cells_fits_githubs_limit_and_says_what_is_left() -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    many = _copied(cells, COPIES)
    text = markdown_report(info, many)
    assert len(many) == COPIES * len(cells)
    assert len(text.encode()) <= MARKDOWN_BUDGET_BYTES < 1024 * 1024
    # The grid is whole (a row per case and variant), the cases that did not fit counted.
    grid = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in grid.splitlines() if line.startswith("|`")]  # unspaced rows
    assert len(rows) == len({(r.cell.case, r.cell.variant, r.cell.library_version)
                             for r in many if r.cell.frontend != "audit"})
    assert text.count("<details>") == text.count("</details>")
    # Twice as many: the cases that no longer fit are counted, each folded block whole.
    text = markdown_report(info, _copied(cells, 2 * COPIES))
    assert len(text.encode()) <= MARKDOWN_BUDGET_BYTES
    left = re.search(r"… (\d+) more cases did not fit GitHub's 1 MiB step summary", text)
    assert left is not None and int(left[1]) > 0
    assert text.count("<details>") == text.count("</details>")


def test_a_section_that_does_not_fit_keeps_whole_items_and_counts_the_rest() -> None:
    table = Section(["| a |", "|---|"], [f"| row {n} |" for n in range(100)], left="rows")
    lines = fitted([Section(["# title"]), table, Section(["## later"], ["x"])], budget=400)
    text = "\n".join(lines)
    assert len(text.encode()) <= 400
    kept = [line for line in lines if line.startswith("| row")]
    assert 0 < len(kept) < 100
    assert f"… {100 - len(kept)} more rows did not fit" in text
    # A blank line ends the table before the count, so the count is not read as a row.
    assert lines[lines.index(kept[-1]) + 1] == ""
