"""The web report's page as a newcomer meets it at scale (issue 82, 11), in a real browser
(Debian's Chromium driven by Playwright): the search box on the first screen, the grid's
Home/End/PageUp/PageDown keys, the page's landmarks and named charts, a deep link opened
from the cells' data before the grid is drawn, and bench/report.py failing on a target it
missed. The published H100 results in reports/, copied into a grid of many blocks where the
grid's size matters."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BROWSER_FLAGS, REPO, chromium, cudamatrix

playwright = pytest.importorskip("playwright.sync_api", reason="pip install '.[test]'")

PUBLISHED = REPO / "reports" / "results.json"
COPIES = 6  # the published cells six times: several blocks of 100 rows, a scrolled grid


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium(), args=BROWSER_FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def published_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("published")
    run = cudamatrix("report", str(PUBLISHED), out=out)
    assert (out / "report.html").exists(), run.output
    return out / "report.html"


@pytest.fixture(scope="module")
def large_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The published cells COPIES times, each copy's cases renamed (bench/report.py's way)."""
    folder = tmp_path_factory.mktemp("large")
    document = json.loads(PUBLISHED.read_text())
    cells = [{**cell, "case": f"{cell['case']}-{n}",
              "id": f"{cell['case']}-{n}/{cell['id'].split('/', 1)[1]}"}
             for n in range(COPIES) for cell in document["cells"]]
    (folder / "results.json").write_text(json.dumps({**document, "cells": cells}))
    run = cudamatrix("report", str(folder / "results.json"), out=folder / "out")
    assert (folder / "out" / "report.html").exists(), run.output
    return folder / "out" / "report.html", cells


def _opened(browser, page_file: Path, width: int = 1280, height: int = 800, **options):
    page = browser.new_page(viewport={"width": width, "height": height}, **options)
    page.goto(page_file.as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    return page


def test_the_search_box_is_on_the_first_screen(browser, published_page: Path) -> None:
    """At 1280x800 the search box is within the first screen (it was under the grid, at
    853 px on the 10,516-cell page); at 390 px it fits the screen and filters the grid."""
    page = _opened(browser, published_page)
    box = page.locator("#filters input[type=search]").bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800, box
    # The grid's first cells stay on the first screen too.
    assert page.locator("#grid td.g[data-n]").first.bounding_box()["y"] < 800
    page.close()
    phone = _opened(browser, published_page, 390, 844, device_scale_factor=2,
                    is_mobile=True, has_touch=True)
    search = phone.locator("#filters input[type=search]")
    box = search.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert box["y"] + box["height"] <= 844, box
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    cells = json.loads(PUBLISHED.read_text())["cells"]
    target = cells[0]["id"]
    search.tap()
    search.fill(target)
    search.press("Enter")
    shown = phone.locator("#grid td.g[data-n]:not(.hidden)")
    assert target in [td.get_attribute("data-id") for td in shown.all()]
    assert shown.count() < len(cells)
    phone.close()


def _focused(page) -> dict:
    """The focused grid cell: its id, its row among every row of the grid and its column."""
    return page.evaluate("""() => { const td = document.activeElement;
        const rows = [...document.querySelectorAll('#grid tbody > tr')];
        return {id: td.dataset.id || null, row: rows.indexOf(td.parentElement),
                column: td.cellIndex}; }""")


def _in_view(page) -> bool:
    """Whether the focused cell is inside the grid's scrolled box (not under its header)."""
    return page.evaluate("""() => { const td = document.activeElement.getBoundingClientRect();
        const box = document.querySelector('.grid-scroll').getBoundingClientRect();
        const head = document.querySelector('#grid thead').getBoundingClientRect();
        return td.top >= head.bottom - 1 && td.bottom <= box.bottom + 1
            && td.left >= box.left - 1 && td.right <= box.right + 1; }""")


def test_home_end_and_page_keys_move_the_focused_cell(browser, large_page) -> None:
    """The ARIA grid pattern's keys: Home and End the row's first and last cell, Ctrl+Home
    and Ctrl+End the grid's, PageDown and PageUp a screenful of rows in the same column;
    the cell reached has the focus and the tab stop, and is scrolled into the grid's box,
    in blocks of rows the browser has not drawn yet."""
    page_file, _ = large_page
    page = _opened(browser, page_file)
    rows = page.evaluate("document.querySelectorAll('#grid tbody > tr').length")
    assert page.locator("#grid tbody").count() > 2, "the grid is drawn in several blocks"
    ends = """r => { const cells = [...document.querySelectorAll('#grid tbody > tr')[r]
        .querySelectorAll('td.g[data-n]')]; return [cells[0].cellIndex,
        cells[cells.length - 1].cellIndex]; }"""
    page.locator("#grid td[tabindex='0']").focus()
    start = _focused(page)
    first_column, last_column = page.evaluate(ends, start["row"])
    page.keyboard.press("End")
    assert _focused(page) == {**start, "id": _focused(page)["id"], "column": last_column}
    assert _focused(page)["column"] > start["column"]
    assert _in_view(page)
    page.keyboard.press("Home")
    assert _focused(page) == {**start, "column": first_column}
    page.keyboard.press("PageDown")
    down = _focused(page)
    assert down["row"] > start["row"] + 5 and down["column"] == start["column"], down
    assert _in_view(page)
    page.keyboard.press("PageUp")
    assert _focused(page) == start
    page.keyboard.press("Control+End")
    last = _focused(page)
    assert last["row"] == rows - 1, (last, rows)
    assert last["column"] == page.evaluate(ends, rows - 1)[1]
    assert _in_view(page)
    assert page.locator("#grid td[tabindex='0']").count() == 1
    assert page.evaluate("document.activeElement.tabIndex") == 0
    page.keyboard.press("Control+Home")
    assert _focused(page) == start
    assert _in_view(page)
    page.close()


def test_the_page_has_landmarks_and_named_charts(browser, published_page: Path) -> None:
    """A screen reader's ways round the page: one main, a banner (the page's header), a
    navigation to its sections and the search; each chart a picture named by its title."""
    page = _opened(browser, published_page)
    assert page.get_by_role("main").count() == 1
    assert page.get_by_role("banner").count() == 1
    assert page.get_by_role("navigation").count() == 1
    assert page.get_by_role("search").count() == 1
    # The grid, the filters and the charts are inside main; the panel is over it.
    for part in ("#grid", "#filters", "#chart-works"):
        assert page.locator(f"main {part}").count() == 1, part
    for link in page.get_by_role("navigation").locator("a").all():
        assert page.locator(link.get_attribute("href")).count() == 1
    charts = page.locator("figure svg")
    assert charts.count() >= 3
    for n in range(charts.count()):
        chart = charts.nth(n)
        assert chart.get_attribute("role") == "img"
        named = chart.evaluate("""svg => { const title = svg.querySelector(':scope > title');
            return [svg.firstElementChild === title, title && title.id,
                    svg.getAttribute('aria-labelledby'), title && title.textContent]; }""")
        first, title_id, labelled_by, text = named
        assert first and title_id and labelled_by == title_id and text, named
        assert page.get_by_role("img", name=text).count() >= 1
    page.close()


def test_a_deep_link_opens_its_panel_before_the_grid_is_drawn(browser, large_page) -> None:
    """report.html#cell=ID opens the cell's panel from the cells' data, not once the whole
    grid is drawn: here the grid's rest never draws (its animation frames held back, as in
    a tab opened in the background) and the panel opens all the same; with the grid drawn,
    Escape gives the linked cell the focus."""
    page_file, cells = large_page
    target = cells[-1]["id"]  # in the grid's last block
    address = page_file.as_uri() + "#cell=" + target
    held = browser.new_page(viewport={"width": 1280, "height": 800})
    held.add_init_script("window.requestAnimationFrame = () => 0;")
    started = time.monotonic()
    held.goto(address)
    panel = held.locator("dialog#panel")
    playwright.expect(panel).to_be_visible()
    print(f"deep link's panel shown {time.monotonic() - started:.2f} s after the navigation "
          "(a figure for bench/report.py, not asserted)")
    assert held.locator("#panel-title").inner_text() == target
    assert held.locator("#grid td.g[data-n]").count() < len(cells)  # the grid still drawing
    held.close()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(address)
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    playwright.expect(page.locator("dialog#panel")).to_be_visible()
    assert page.locator("#panel-title").inner_text() == target
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.dataset.id") == target
    assert page.locator(f'#grid td[data-id="{target}"]').get_attribute("tabindex") == "0"
    page.close()


def test_the_report_benchmark_fails_on_a_missed_target(tmp_path: Path) -> None:
    """bench/report.py says each target it missed and exits 1 (it once printed a page of
    15.43 MB against its 15 MB and succeeded): here a page limit no page can meet. The
    times' targets are set out of reach of any machine's load, so that only the page's size
    decides: a test never holds a wall time."""
    chromium()
    generous = ["--target-open", "600", "--target-grid", "600", "--target-panel", "600",
                "--target-link", "600"]

    def bench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(REPO / "bench" / "report.py"), "--work",
                               str(tmp_path), "--only", "h100-run", *generous, *args],
                              capture_output=True, text=True, timeout=900, check=False)

    done = bench("--target-page-mb", "0.001")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    missed = [line for line in said.splitlines() if line.startswith("MISSED: ")]
    assert len(missed) == 1, said
    assert missed[0].startswith("MISSED: h100-run report.html "), missed
    assert missed[0].endswith(" MB against 0.001 MB"), missed
    assert "Traceback" not in said
    met = bench()  # every target within reach: no MISSED line, success
    assert met.returncode == 0, met.stdout + met.stderr
    assert "MISSED" not in met.stdout
