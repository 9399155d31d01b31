"""A Markdown report that fits a size: GitHub refuses a step summary over 1 MiB, and
COMPATIBILITY.md is that summary. Sections are kept in the order they matter (the counts,
what changed, the grid, the unexpected cells, then the cases); a section that does not fit
keeps the items that do and says how many it left to the web page, so a nightly's
COMPATIBILITY.md is never cut in the middle of a table or a folded block."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# GitHub's limit is 1 MiB; the margin leaves room for what the workflow appends.
MARKDOWN_BUDGET_BYTES = 1024 * 1024 - 64 * 1024


@dataclass(frozen=True)
class Section:
    """Lines that open the section (a heading, a table's header), then its items (a table
    row, a folded cell), then lines that close it; `left` says what the items are, for the
    line that counts those that did not fit ("cells", "rows of the grid")."""

    opening: Sequence[str]
    items: Sequence[str] = ()
    closing: Sequence[str] = ()
    left: str = "items"


def whole_lines_within(text: str, budget: int, size: Callable[[str], int] = len) -> str:
    """The whole lines of `text` from its start that fit `budget` as `size` measures them
    (characters, or `lambda s: len(s.encode())` for bytes): what a summary or a note cut to
    its engine's limit keeps, never a line cut in two (GitHub's step summary, GitLab's
    merge request note)."""
    kept, used = [], 0
    for line in text.splitlines(keepends=True):
        used += size(line)
        if used > budget:
            break
        kept.append(line)
    return "".join(kept)


def _size(lines: Sequence[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)


def fitted(sections: Sequence[Section], budget: int = MARKDOWN_BUDGET_BYTES,
           elsewhere: str = "report.html and results.json") -> list[str]:
    """The sections' lines within `budget` bytes: whole sections while they fit, then as
    many items of the next as fit, with a line saying how many are only `elsewhere`; later
    sections are each named by such a line."""
    lines: list[str] = []
    for section in sections:
        whole = [*section.opening, *section.items, *section.closing]
        if _size(lines) + _size(whole) <= budget:
            lines += whole
            continue
        note = (f"… {{}} more {section.left} did not fit GitHub's 1 MiB step summary: "
                f"{elsewhere} have them all.")
        # After a blank line: a line under a table's last row would be read as a row.
        room = budget - _size(lines) - _size(section.opening) - _size(section.closing) \
            - _size(["", note.format(len(section.items))])
        if room < 0:
            continue
        kept = 0
        for item in section.items:
            room -= _size([item])
            if room < 0:
                break
            kept += 1
        lines += [*section.opening, *section.items[:kept],
                  "", note.format(len(section.items) - kept), *section.closing]
    return lines
