"""docs/report.md documents every diagnosis rule (issue 71, item 5): its table is made from
rules.toml by docs/generate.py, so a rule added without its row shows here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from cudamatrix.record.diagnose import rules

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_rule_has_its_row_in_order() -> None:
    table = _generator()._rules_table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [rule.name for rule in rules()]
    for rule in rules():
        assert rule.title.replace("|", "\\|") in table
        for link in rule.links:
            assert link in table


def test_the_committed_report_page_holds_the_current_table() -> None:
    generate = _generator()
    page = (ROOT / "docs" / "report.md").read_text()
    assert generate._with_rules(page) == page, "docs/report.md is stale: python docs/generate.py"
    assert generate._rules_table() in page
