"""The hostile corpus (tests/data/hostile/) end to end, every defence on (issue 11).

Its cases print script tags, control characters, table pipes and rich markup through
the compiler, collide on joined ids and read /dev/zero; the report is then fed
``javascript:`` links too. The run must keep every cell, leave no process behind and a
cache that verifies; the reports must parse, and the web page must still filter and open
its panels in Chromium without running anything the data holds.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from conftest import BROWSER_FLAGS, REPO, Run, chromium, cudamatrix, private_cache
from cudamatrix.orchestrator.compile_cache import MANIFEST, CompileCache

playwright = pytest.importorskip("playwright.sync_api", reason="pip install '.[test]'")

HOSTILE = REPO / "tests" / "data" / "hostile"
EXPECTED = {
    "log-script/v/13.0/sm_80": "xfail",
    "control-chars/v/13.0/sm_80": "xfail",
    "p__a/b/13.0/sm_80": "pass",
    "p/a__b/13.0/sm_80": "xfail",
    "dev-zero/v/13.0/sm_80": "error",
}


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    cache = private_cache(root)
    cases = [w for c in EXPECTED for w in ("--case", c.split("/")[0])]
    run = cudamatrix("run", "--corpus", str(HOSTILE), *cases, "--toolkit", "13.0",
                     "--arch", "sm_80", "--cell-memory", "1", "--cache", str(cache),
                     out=root / "out")
    # The report again, from results that also carry links a case file can no longer hold.
    data = json.loads((root / "out" / "results.json").read_text())
    for cell in data["cells"]:
        cell["upstream"] = ["javascript:window.pwned='link'", "https://example.com/issue"]
    (root / "poisoned.json").write_text(json.dumps(data))
    report = cudamatrix("report", str(root / "poisoned.json"), out=root / "report")
    assert report.code in (0, 1), report.output[-2000:]
    return run, root, cache


def _cells(run: Run) -> dict[str, dict[str, Any]]:
    return run.cells()


def test_every_cell_is_kept_with_its_true_verdict(hostile_run) -> None:
    run, _, _ = hostile_run
    assert run.code == 1, run.output[-3000:]  # dev-zero is an error: the tool's limit
    assert "Traceback" not in run.output
    outcomes = {cell_id: cell["outcome"] for cell_id, cell in _cells(run).items()}
    assert outcomes == EXPECTED
    zero = _cells(run)["dev-zero/v/13.0/sm_80"]
    assert "memory limit" in zero["message"], zero["message"]
    assert len(list((run.out / "cells").glob("*.json"))) == len(EXPECTED)


def test_no_process_outlives_the_run_and_the_cache_verifies(hostile_run) -> None:
    _, root, cache = hostile_run
    left = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True,
                          check=False).stdout.split()
    assert left == []
    entries = [p.parent for p in (cache / "compile").rglob(MANIFEST)]
    assert len(entries) == 4  # every cell but the accident
    checker = CompileCache(cache)
    for entry in entries:
        files, problem = checker._verified(entry)
        assert files is not None, (entry, problem)


def test_junit_and_markdown_stay_well_formed(hostile_run) -> None:
    _, root, _ = hostile_run
    for folder in (root / "out", root / "report"):
        suites = ElementTree.parse(folder / "junit.xml").getroot()
        assert len(suites.findall(".//testcase")) == len(EXPECTED)
        markdown = (folder / "COMPATIBILITY.md").read_text()
        assert "\x1b" not in markdown and "\x07" not in markdown
        assert "<script" not in markdown and "javascript:" not in markdown.replace(
            "javascript:window.pwned='link'", "")
        grid = markdown[markdown.index("## At a glance"):].split("\n## ", 1)[0].splitlines()
        columns = {line.replace("\\|", "").count("|") for line in grid if line.startswith("|")}
        assert len(columns) == 1, grid  # no row gained or lost a column
        # Every folded block closes, whatever a case's name or message holds.
        assert markdown.count("<details>") == markdown.count("</details>") > 0


def test_the_page_filters_opens_panels_and_runs_nothing_from_the_data(hostile_run) -> None:
    _, root, _ = hostile_run
    page_file = root / "report" / "report.html"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=BROWSER_FLAGS)
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(page_file.as_uri())
        page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
        assert page.evaluate("window.pwned") is None
        assert page.locator("#grid td.g[data-n]").count() == len(EXPECTED)
        for box in page.locator("input[name=outcome]").all():
            if box.get_attribute("value") != "xfail":
                box.uncheck()
        assert page.locator("#grid td.g[data-n]:not(.hidden)").count() == 3
        for box in page.locator("input[name=outcome]").all():
            box.check()
        page.locator('td.g[data-id="log-script/v/13.0/sm_80"]').click()
        panel = page.locator("dialog#panel")
        assert panel.is_visible()
        assert "<!--<script>" in panel.locator("pre.log").first.inner_text()
        hrefs = [a.get_attribute("href") or "" for a in page.locator("a").all()]
        assert hrefs and not [h for h in hrefs if h.lower().startswith("javascript")]
        assert "https://example.com/issue" in hrefs
        page.mouse.click(1, 1)
        assert page.evaluate("window.pwned") is None and dialogs == []
        browser.close()
