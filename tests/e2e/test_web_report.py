"""The web report in a real browser (Debian's Chromium driven by Playwright), on the real
H100 results in reports/: the first screen (counts, the works heatmap, the grid), the charts
drawn from the run's data, filters, the cell panel, coverage, and no network."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import BROWSER_FLAGS, EVIDENCE, REPO, chromium, cudamatrix
from cudamatrix.config.repro_line import repro_line

playwright = pytest.importorskip("playwright.sync_api", reason="pip install '.[test]'")

ARTIFACTS = Path(os.environ.get("CUDAMATRIX_TEST_ARTIFACTS", REPO / "out" / "test-artifacts"))


@pytest.fixture(scope="module")
def page_and_cells(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("web")
    run = cudamatrix("report", str(REPO / "reports" / "results.json"), out=out)
    assert (out / "report.html").exists(), run.output
    cells = json.loads((REPO / "reports" / "results.json").read_text())["cells"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=BROWSER_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        page.goto((out / "report.html").as_uri())
        page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
        yield page, cells, requested
        browser.close()


def _visible_cells(page) -> int:
    return page.locator("#grid td.g[data-n]:not(.hidden)").count()


def _decided_in_heatmap(page, chart: str) -> int:
    """The cells a works heatmap counts, read back from the labels it drew ("6/14")."""
    labels = page.locator(f"#chart-{chart} svg text").all_text_contents()
    return sum(int(m[2]) for label in labels if (m := re.fullmatch(r"(\d+)/(\d+)!?", label)))


def test_grid_has_every_cell_and_loads_nothing_from_the_network(page_and_cells) -> None:
    page, cells, requested = page_and_cells
    assert "CUDA compatibility report" in page.title()
    assert page.locator("#grid td.g[data-n]").count() == len(cells)
    assert _visible_cells(page) == len(cells)
    assert page.locator("#shown").inner_text() == f"{len(cells)} cells shown"
    assert "NVIDIA H100" in (page.locator("ul.header").text_content() or "")
    # The works heatmap counts every decided cell (skips are not decided), per toolkit x arch.
    assert _decided_in_heatmap(page, "works") == sum(c["outcome"] != "skip" for c in cells)
    # Library versions get their own (the run has several), and compile seconds per toolkit
    # one box per toolkit that compiled.
    assert _decided_in_heatmap(page, "works-library") == sum(
        c["outcome"] != "skip" for c in cells if c["library"])
    caption = page.locator("#chart-compile-time figcaption").inner_text()
    compiled = sum(1 for c in cells for s in c["stages"]
                   if s["stage"] in ("compile", "build") and s["seconds"] > 0)
    assert f"{compiled} in all" in caption
    assert [u for u in requested if not u.startswith("file://")] == []


def test_outcome_and_axis_filters(page_and_cells) -> None:
    page, cells, _ = page_and_cells
    outcomes = Counter(c["outcome"] for c in cells)
    for box in page.locator("input[name=outcome]").all():
        if box.get_attribute("value") != "skip":
            box.uncheck()
    assert _visible_cells(page) == outcomes["skip"] > 0
    # Rows without a skipped cell disappear entirely.
    skipping_rows = {(c["case"], c["variant"], c["library"]) for c in cells
                     if c["outcome"] == "skip"}
    assert page.locator("#grid tbody tr:not(.hidden-row)").count() == len(skipping_rows)
    page.select_option("select[name=toolkit]", "13.5")
    assert _visible_cells(page) == sum(1 for c in cells if c["outcome"] == "skip"
                                       and c["toolkit"] == "13.5") > 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-filtered.png"), full_page=True)
    page.select_option("select[name=toolkit]", "")
    for box in page.locator("input[name=outcome]").all():
        box.check()
    page.select_option("select[name=arch]", "sm_90a")
    assert _visible_cells(page) == sum(1 for c in cells if c["arch"] == "sm_90a")
    page.select_option("select[name=arch]", "")
    assert _visible_cells(page) == len(cells)


def test_cell_opens_message_diagnosis_resources_and_log(page_and_cells) -> None:
    page, cells, _ = page_and_cells
    target = next(c for c in cells if c["diagnosis"]
                  and c["diagnosis"]["rule"] == "ptx-newer-than-driver")
    page.locator(f'td.g[data-id="{target["id"]}"]').click()
    panel = page.locator("dialog#panel")
    assert panel.is_visible()
    assert panel.locator("#panel-title").inner_text() == target["id"]
    assert panel.locator("#panel-message").inner_text() == target["message"]
    assert target["diagnosis"]["title"] in panel.locator("#panel-diagnosis").inner_text()
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in panel.locator("pre.log").last.inner_text()
    assert "registers" in panel.locator("#panel-resources").inner_text()
    page.screenshot(path=str(ARTIFACTS / "report-cell.png"))
    panel.locator("button").click()
    assert not panel.is_visible()


def test_coverage_counts_each_axis_value(page_and_cells) -> None:
    page, cells, _ = page_and_cells
    per_toolkit = Counter(c["toolkit"] for c in cells)
    rows = page.locator('#coverage tr[data-axis="toolkit"]')
    assert rows.count() == len(per_toolkit)
    for row in rows.all():
        value, count = (row.locator("td").nth(i).inner_text() for i in (1, 2))
        assert int(count) == per_toolkit[value]


def test_the_answer_is_seen_first(page_and_cells, tmp_path: Path) -> None:
    """Issue 58, point 1: the first screen holds the counts, the works heatmap and the grid,
    a symbol per cell (a shape and colour per stage it stopped at), the unexpected ones told
    from the expected failures; each cell's message and repro on hover (its title) and on
    tap (the panel); the sentences come after; at desktop and phone widths, with no
    sideways scrolling of the page itself (the grid scrolls in its own box, its first column
    and header held). On the 2026-11-22 H100 report's toolkit 13.5 cells, as published then,
    with cells that were not what their case expected."""
    published = REPO / "tests" / "data" / "published-2026-11-22-toolkit-13.5.json"
    made = cudamatrix("report", str(published), out=tmp_path / "page")
    assert (tmp_path / "page" / "report.html").exists(), made.output
    cells = json.loads(published.read_text())["cells"]
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((tmp_path / "page" / "report.html").as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    for part in ("#counts", "#chart-works svg", "#grid td.g[data-n]"):
        assert page.locator(part).first.bounding_box()["y"] < 800, part  # the first screen
    # The run's facts beside the counts are readable (not white on white).
    assert page.evaluate("getComputedStyle(document.querySelector('#counts .muted')).color") \
        != "rgb(255, 255, 255)"
    glance = page.locator("section#glance")
    assert glance.bounding_box()["y"] < page.locator("section#cases").bounding_box()["y"]
    cases = {c["case"] for c in cells}
    assert page.locator("#cases ul.sentences > li").count() == len(cases)
    grid = glance.locator("#grid td.g[data-n]")
    assert grid.count() == len(cells)
    unexpected = [c for c in cells if c["outcome"] in ("fail", "error", "xpass")]
    assert glance.locator("td.g.u").count() == len(unexpected) > 0
    expected_failures = [c for c in cells if c["outcome"] == "xfail"
                         and any(s["status"] == "failed" for s in c["stages"])]
    assert glance.locator("td.g.expected-failure").count() == len(expected_failures)
    # Each stage a cell stopped at has its own symbol; the legend says each.
    symbols = {}
    for td in grid.all():
        symbols.setdefault(td.get_attribute("class").split(" k-")[1].split()[0],
                           set()).add(td.inner_text())
    assert all(len(shown) == 1 for shown in symbols.values()), symbols
    assert len({next(iter(shown)) for shown in symbols.values()}) == len(symbols)
    target = next(c for c in unexpected if c["outcome"] == "fail")
    # The repro line's one maker: its own --out, compiled again, then the cell.
    command = repro_line(["--tier", "gpu"], target["id"].split("@")[0])
    assert command.endswith(f"--no-compile-cache --cell {target['id'].split('@')[0]}")
    square = glance.locator(f'td.g[data-id="{target["id"]}"]')
    square.hover()  # its title is written when it is first pointed at or focused
    assert target["id"] in (square.get_attribute("title") or "")
    square.click()  # a tap
    panel = page.locator("dialog#panel")
    assert panel.locator("#panel-repro").inner_text() == command
    panel.locator("button").click()
    # The grid's first column and header stay when it scrolls.
    box = glance.locator(".grid-scroll")
    first_x = glance.locator("#grid tbody th.row").first.bounding_box()["x"]
    box.evaluate("b => { b.scrollLeft = 400; b.scrollTop = 200; }")
    assert glance.locator("#grid tbody th.row").first.bounding_box()["x"] == first_x
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    box.evaluate("b => { b.scrollLeft = 0; b.scrollTop = 0; }")
    page.screenshot(path=str(ARTIFACTS / "first-screen-desktop.png"))
    phone = page.context.browser.new_page(viewport={"width": 390, "height": 844},
                                          device_scale_factor=2, is_mobile=True, has_touch=True)
    phone.goto(page.url)
    phone.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    for part in ("#counts", "#chart-works svg", "#grid td.g[data-n]"):
        assert phone.locator(part).first.bounding_box()["y"] < 844, part
    phone.locator(f'td.g[data-id="{target["id"]}"]').tap()
    assert phone.locator("dialog#panel #panel-repro").inner_text() == command
    phone.locator("dialog#panel button").tap()
    phone.screenshot(path=str(ARTIFACTS / "first-screen-phone.png"))
    phone.close()
    page.close()
    run = cudamatrix("report", str(published), out=tmp_path)
    assert run.code in (0, 1)
    markdown = (tmp_path / "COMPATIBILITY.md").read_text()
    assert markdown.index("## At a glance") == markdown.index("\n## ") + 1
    assert markdown.index("## At a glance") < markdown.index("## Not what the cases expect")
    assert command in markdown


def test_a_cells_kernel_is_shown_by_its_cpp_name(page_and_cells, tmp_path: Path) -> None:
    """The real-kernel H100 run: the panel names the case's kernel as C++ prints it and the
    name the driver looked up, above ptxas's registers for it."""
    results = EVIDENCE / "realworld-h100" / "results.json"
    run = cudamatrix("report", str(results), out=tmp_path)
    assert (tmp_path / "report.html").exists(), run.output
    cell_id = "cutlass-nchw-to-nhwc/half/13.0/sm_90a"
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    page.locator(f'td.g[data-id="{cell_id}"]').click()
    text = page.locator("dialog#panel #panel-resources").inner_text()
    page.close()
    assert "void cutlass::nchw_to_nhwc_kernel<cutlass::half_t>(cutlass::half_t*" in text, text
    assert "_ZN7cutlass19nchw_to_nhwc_kernelINS_6half_tEEEvPT_PKS2_iiii" in text, text
    assert "registers" in text


def test_a_timed_cells_panel_says_its_kernel_time(page_and_cells, tmp_path: Path) -> None:
    """The H100's timed CUTLASS nchw_to_nhwc (bench/evidence/kernel-time-h100/realworld), against
    a baseline where that cell ran 20% faster: the panel gives the median, minimum, noise,
    samples, L2 and SM clock; the page's baseline section lists the cell under Time."""
    results = EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt" / "results.json"
    cell_id = "nchw-timed/capped/12.4/sm_90"
    document = json.loads(results.read_text())
    for cell in document["cells"]:
        for stage in cell["stages"]:
            if cell["id"] == cell_id and stage["stage"] == "run":
                stage["details"]["timing"]["median_us"] /= 1.2
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(document))
    run = cudamatrix("report", str(results), "--baseline", str(baseline), out=tmp_path / "out")
    assert (tmp_path / "out" / "report.html").exists(), run.output
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto((tmp_path / "out" / "report.html").as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    assert f"{cell_id}: slower: median 24.99 us -> 29.98 us (1.20x" in \
        page.locator("section#baseline").inner_text()
    # The kernel time chart draws every timed cell, a point each, with its noise.
    timed = [c for c in document["cells"] if any(
        s["stage"] == "run" and (s.get("details") or {}).get("timing") for s in c["stages"])]
    assert f"{len(timed)} cells" in page.locator("#chart-kernel-time figcaption").inner_text()
    page.locator(f'td.g[data-id="{cell_id}"]').click()
    text = page.locator("dialog#panel #panel-resources").inner_text()
    page.close()
    assert "Kernel time" in text, text
    assert "median 29.98 us, min 29.60 us, noise 1.19% over 830 samples (over its noise " \
        "target), L2 cold; SM clock 1980 of 1980 MHz" in text, text


def test_a_timed_cells_panel_draws_its_samples_and_its_time_across_runs(
        page_and_cells, tmp_path: Path) -> None:
    """The H100's timed nchw_to_nhwc with the samples this version records: the panel draws
    them, a point each, titled; and with an earlier run kept in history.json (the same cell
    20% faster), the cell's median in each run as a line across the runs."""
    results = EVIDENCE / "kernel-time-h100" / "realworld" / "prebuilt" / "results.json"
    cell_id = "nchw-timed/capped/12.4/sm_90"
    samples = [29.9 + (i % 7) / 100 for i in range(40)]

    def document(finished: str, scale: float) -> Path:
        record = json.loads(results.read_text())
        record["run"]["finished"] = record["run"]["started"] = finished
        for cell in record["cells"]:
            for stage in cell["stages"]:
                if cell["id"] == cell_id and stage["stage"] == "run":
                    stage["details"]["timing"]["median_us"] /= scale
                    stage["details"]["timing"]["samples_us"] = samples
        path = tmp_path / f"{finished[:10]}.json"
        path.write_text(json.dumps(record))
        return path

    earlier = cudamatrix("report", str(document("2026-11-20T10:00:00+00:00", 1.2)),
                         out=tmp_path / "earlier")
    assert (tmp_path / "earlier" / "history.json").exists(), earlier.output
    run = cudamatrix("report", str(document("2026-11-21T10:00:00+00:00", 1.0)), "--history",
                     str(tmp_path / "earlier" / "history.json"), out=tmp_path / "now")
    assert (tmp_path / "now" / "report.html").exists(), run.output
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto((tmp_path / "now" / "report.html").as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    # The outcomes over the kept runs: a bar a run, the flips since the run before said.
    assert "The last 2 runs (history.json)" in \
        page.locator("#chart-history figcaption").inner_text()
    page.locator(f'td.g[data-id="{cell_id}"]').click()
    drawn = page.locator("#panel-resources svg.samples circle")
    assert drawn.count() == len(samples)
    assert drawn.first.locator("title").text_content() == "sample 1: 29.90 us"
    assert "40 values, 29.90 to 29.96 us" in page.locator("#panel-resources").inner_text()
    across = page.locator("#panel-history svg.times circle")
    titles = [across.nth(i).locator("title").text_content() for i in range(across.count())]
    page.close()
    assert len(titles) == 2, titles
    assert titles[0].startswith("2026-11-20") and "median 24.99 us" in titles[0], titles
    assert titles[1].startswith("2026-11-21") and "median 29.98 us" in titles[1], titles


@pytest.fixture
def fresh_page(page_and_cells):
    """The published report in a page of its own: keyboard focus, the search box and the
    address's fragment start from nothing."""
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_and_cells[0].url.split("#")[0])
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    yield page
    page.close()


def _focused_id(page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.dataset.id || null")


def _tab_to_grid(page) -> str:
    """Tab from the page's start until a grid cell has the focus: its id."""
    for _ in range(40):
        page.keyboard.press("Tab")
        if (found := _focused_id(page)) is not None:
            return found
    raise AssertionError("no grid cell took the focus")


def test_the_grid_is_one_tab_stop(fresh_page) -> None:
    """Issue 70, 4: one tab stop for the whole grid (a roving tabindex), not one per cell;
    the next Tab leaves the grid."""
    page = fresh_page
    assert page.locator("#grid td[tabindex='0']").count() == 1
    first = _tab_to_grid(page)
    assert first == page.locator("#grid td.g[data-n]").first.get_attribute("data-id")
    page.keyboard.press("Tab")
    assert _focused_id(page) is None
    assert page.evaluate("document.activeElement.closest('#grid')") is None


@pytest.mark.parametrize("key", ["Enter", " "])
def test_enter_and_space_open_a_cell_escape_closes_it(fresh_page, key: str) -> None:
    """Issue 70, 4: the key that opens a cell's panel does not also close it (Enter used to
    reach the panel's focused close button); Escape closes it and gives the cell back its
    focus."""
    page = fresh_page
    cell = _tab_to_grid(page)
    page.keyboard.press(key)
    panel = page.locator("dialog#panel")
    page.wait_for_timeout(100)  # a second activation would have closed it by now
    assert panel.is_visible()
    assert panel.locator("#panel-title").inner_text() == cell
    page.keyboard.press("Escape")
    assert not panel.is_visible()
    assert _focused_id(page) == cell


def test_arrow_keys_move_in_the_grid(fresh_page) -> None:
    """Issue 70, 4: arrows move between cells (past a toolkit x arch the row has no cell
    for), the tab stop moving with the focus."""
    page = fresh_page
    _tab_to_grid(page)
    where = "(() => { const td = document.activeElement; " \
        "return [td.parentElement.sectionRowIndex, td.cellIndex]; })()"
    row, column = page.evaluate(where)
    page.keyboard.press("ArrowRight")
    right = page.evaluate(where)
    assert right[0] == row and right[1] > column
    assert page.evaluate(f"document.querySelector('#grid tbody').rows[{row}].cells"
                         f"[{right[1]}].matches('td.g[data-n]')")
    page.keyboard.press("ArrowDown")
    down = page.evaluate(where)
    assert down[0] > row and down[1] == right[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(where) == [row, column]
    assert page.locator("#grid td[tabindex='0']").count() == 1
    assert page.evaluate("document.activeElement.tabIndex") == 0
    page.keyboard.press("Enter")
    assert page.locator("dialog#panel").is_visible()


def test_the_search_box_finds_cells_by_any_of_their_words(fresh_page, page_and_cells) -> None:
    """Issue 70, 4: a search box filters the grid by case, variant, toolkit, arch and
    message (each word must match); a cell found is opened from it."""
    page, cells = fresh_page, page_and_cells[1]

    def matching(query: str) -> list[str]:
        return [c["id"] for c in cells if all(
            word in " ".join(str(c[k] or "") for k in (
                "id", "case", "variant", "toolkit", "arch", "library", "message", "reason"
            )).lower() for word in query.lower().split())]

    search = page.locator("#filters input[type=search]")
    for query in ("unsupported_ptx_version", "launch-limits 13.5", "SM_90A"):
        search.fill(query)
        expected = matching(query)
        assert 0 < len(expected) < len(cells), query
        # The grid follows the typing once its burst is over.
        playwright.expect(page.locator("#shown")).to_have_text(f"{len(expected)} cells shown")
        shown = page.locator("#grid td.g[data-n]:not(.hidden)")
        assert sorted(td.get_attribute("data-id") for td in shown.all()) == sorted(expected)
    target = matching("launch-limits 13.5")[0]
    search.fill(target)
    search.press("Enter")
    assert _visible_cells(page) == len(matching(target))
    page.locator(f'td.g[data-id="{target}"]').click()
    assert page.locator("#panel-title").inner_text() == target
    page.keyboard.press("Escape")
    search.fill("")
    search.press("Enter")
    assert _visible_cells(page) == len(cells)


def test_each_cell_has_a_link_that_opens_it(fresh_page, page_and_cells) -> None:
    """Issue 70, 4: the panel shows the cell's link (report.html#cell=ID); the page opened
    at that link opens that cell's panel."""
    page, cells = fresh_page, page_and_cells[1]
    target = next(c for c in cells if c["outcome"] == "xfail")["id"]
    page.locator(f'td.g[data-id="{target}"]').click()
    link = page.locator("#panel-link")
    assert link.inner_text() == f"report.html#cell={target}"
    address = page.url.split("#")[0] + link.get_attribute("href")
    other = page.context.browser.new_page(viewport={"width": 390, "height": 844})
    other.goto(address)
    other.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    assert other.locator("dialog#panel").is_visible()
    assert other.locator("#panel-title").inner_text() == target
    other.keyboard.press("Escape")
    assert other.evaluate("document.activeElement.dataset.id") == target
    other.close()


def test_a_grid_of_many_blocks_filters_to_the_height_of_its_rows(page_and_cells,
                                                                   tmp_path: Path) -> None:
    """The grid is drawn in blocks of 100 rows, a block out of sight left unrendered: every
    cell is still in it, the columns line up from block to block, arrows cross from one
    block to the next, and once filtered the grid is as tall as the rows it shows, even
    for a block drawn before and now out of sight (not the height it was last drawn at)."""
    document = json.loads((REPO / "reports" / "results.json").read_text())
    cells = [{**cell, "case": f"{cell['case']}-{n}",
              "id": f"{cell['case']}-{n}/{cell['id'].split('/', 1)[1]}"}
             for n in range(4) for cell in document["cells"]]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({**document, "cells": cells}))
    run = cudamatrix("report", str(results), out=tmp_path / "out")
    assert (tmp_path / "out" / "report.html").exists(), run.output
    page = page_and_cells[0].context.browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((tmp_path / "out" / "report.html").as_uri())
    page.wait_for_selector('#grid[data-drawn="all"]', state="attached")
    assert page.locator("#grid tbody").count() > 1
    assert page.locator("#grid td.g[data-n]").count() == len(cells)
    lefts = page.evaluate("""() => [...document.querySelectorAll('#grid tbody')].map(b =>
        { b.scrollIntoView(); const td = b.rows[0].cells[5];
          return Math.round(td.getBoundingClientRect().left); })""")
    assert len(set(lefts)) == 1, lefts
    # The first block's lowest cell in a column the second block has cells in: the arrow
    # down from it lands in the second block.
    start = page.evaluate("""() => {
        const [first, second] = document.querySelectorAll('#grid tbody');
        const below = new Set([...second.querySelectorAll('td.g[data-n]')].map(td => td.cellIndex));
        const above = [...first.querySelectorAll('td.g[data-n]')];
        return above.reverse().find(td => below.has(td.cellIndex)).dataset.id; }""")
    page.locator(f'td.g[data-id="{start}"]').click()
    page.keyboard.press("Escape")
    assert _focused_id(page) == start
    page.keyboard.press("ArrowDown")
    assert page.evaluate("[...document.querySelectorAll('#grid tbody')]"
                         ".indexOf(document.activeElement.closest('tbody'))") == 1
    page.evaluate("document.querySelector('.grid-scroll').scrollTop = 0")
    page.fill("#filters input[type=search]", f"{cells[0]['case']}/")
    page.locator("#filters input[type=search]").press("Enter")
    shown_rows = page.locator("#grid tbody tr:not(.hidden-row)").count()
    assert 0 < shown_rows < 100
    height = page.evaluate("(() => { const g = document.getElementById('grid');"
                           " return g.getBoundingClientRect().height"
                           " - g.tHead.getBoundingClientRect().height; })()")
    assert abs(height - 21 * shown_rows) < 1, (height, shown_rows)
    page.close()
