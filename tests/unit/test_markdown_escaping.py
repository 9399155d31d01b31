"""COMPATIBILITY.md is a pull request's GitHub step summary: every value from a case, a
record or a machine goes through one escaping function (md_text, or md_code in a code
span), so the rendered page holds no tag, link, image or heading the tool did not write
(issue 43, item 7). Rendered here with a CommonMark renderer (markdown-it, tables on)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from markdown_it import MarkdownIt

from cudamatrix.record.baseline import Baseline, compare
from cudamatrix.record.results import CellResult, RunInfo
from cudamatrix.reports.markdown import markdown_report, md_code, md_text

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes
SEED = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())
HOSTILE = ("x`y\n# Injected heading\n<script>alert(1)</script><img src=x onerror=alert(1)>"
           "[click](https://evil.example) ![i](https://evil.example/i.png) | a | b |")
# The tags the tool writes itself (folded blocks, their summaries); every value inside one
# is HTML-escaped, so no other tag can appear.
TOOL_TAGS = {"<details>", "</details>", "<summary>", "</summary>", "<strong>", "</strong>",
             "<code>", "</code>"}


def _hostile() -> tuple[RunInfo, list[CellResult]]:
    document = json.loads(json.dumps(SEED))
    run = document["run"]
    for key in ("finished", "host", "tier", "runner_label", "provider_choice"):
        run[key] = HOSTILE
    cells = []
    for number, cell in enumerate(document["cells"][:3]):
        cell = json.loads(json.dumps(cell))
        cell["case"] = f"case{number}{HOSTILE}"
        cell["variant"] = f"variant{HOSTILE}"
        cell["title"] = HOSTILE
        cell["message"] = HOSTILE
        cell["note"] = HOSTILE
        cell["outcome"] = "fail"
        cell["upstream"] = ["https://github.com/NVIDIA/cutlass/issues/1"]
        cells.append(CellResult.from_dict(cell))
    return RunInfo.from_dict(run), cells


def _rendered(text: str) -> list:
    return MarkdownIt("commonmark").enable("table").parse(text)


def _walk(tokens: list) -> list:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def test_no_tag_link_or_heading_the_tool_did_not_write() -> None:
    info, cells = _hostile()
    baseline = {f"gone{HOSTILE}": {"outcome": "pass", "message": HOSTILE},
                cells[0].cell.id: {"outcome": "pass", "message": HOSTILE}}
    diff = compare(f"base{HOSTILE}", Baseline(baseline), cells)
    text = markdown_report(info, cells, diff)
    tokens = list(_walk(_rendered(text)))
    html = [t.content for t in tokens if t.type in ("html_inline", "html_block")]
    tags = {tag for block in html for tag in re.findall(r"<[^>]*>", block)}
    assert tags <= TOOL_TAGS, tags
    assert not any("<script" in block or "<img" in block for block in html)
    links = {t.attrs.get("href") for t in tokens if t.type == "link_open"}
    assert links <= {"https://github.com/NVIDIA/cutlass/issues/1"}, links  # the upstream's
    assert not [t for t in tokens if t.type == "image"]
    headings = [t for t in tokens if t.type == "heading_open"]
    # The report's own: its title, the baseline's, the glance, the unexpected cells', the
    # cases' and each case's kernel resources table (inside its folded block).
    resources = {c.cell.case for c in cells if c.resources}
    assert len(headings) == 1 + 1 + 1 + 1 + 1 + len(resources), [t.map for t in headings]
    assert "Injected heading" not in [t.content for t in tokens if t.type == "inline"
                                      and t.content.startswith("Injected")]


def test_a_code_span_holds_any_value() -> None:
    for value in ("a`b", "``x``", "`", "a|b", "line\nbreak"):
        tokens = list(_walk(_rendered(f"say {md_code(value)}")))
        (code,) = [t for t in tokens if t.type == "code_inline"]
        assert code.content == value.replace("\n", " "), (value, code.content)
    assert md_text("<b>") == "&lt;b&gt;"
