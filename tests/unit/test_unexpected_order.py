"""The report's cells that are not what their case expects (reports/markdown.py's
unexpected section): every outcome that is not (a failure, an error, a pass where a
failure was expected), worst first, as record/outcomes.py groups them and
reports/symbols.py ranks them. A reviewer's mistakes (an xpass left out of the group, an
error ranked above a failure) passed the unit lane until this test."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cudamatrix.record.results import load_results
from cudamatrix.reports.markdown import markdown_report

REPO = Path(__file__).resolve().parents[2]
HEADING = "## Not what the cases expect ("


def _section(text: str) -> str:
    start = text.index(HEADING)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _count(text: str) -> int:
    return int(text.split(HEADING, 1)[1].split(")", 1)[0]) if HEADING in text else 0


def test_each_unexpected_cell_is_listed_worst_first() -> None:
    info, cells = load_results(REPO / "reports" / "results.json")
    before = _count(markdown_report(info, cells))
    # Three cells that were what their case expects, made the three kinds of unexpected,
    # in the reverse of the order the section gives them.
    chosen = [r for r in cells if r.outcome in ("pass", "xfail")][:3]
    made = dict(zip((r.cell.id for r in chosen), ("xpass", "error", "fail"), strict=True))
    changed = [dataclasses.replace(r, outcome=made[r.cell.id]) if r.cell.id in made else r
               for r in cells]
    text = markdown_report(info, changed)
    assert _count(text) == before + 3
    section = _section(text)
    where = {outcome: section.index(f"<code>{cell_id}</code>")
             for cell_id, outcome in made.items()}
    assert where["fail"] < where["error"] < where["xpass"], where
