"""The reports at the nightly tier's scale: ``nox -s bench_report`` (``-- --write``).

Issue targets: the web page opens in under a second in a real browser, and
COMPATIBILITY.md (the GitHub step summary) keeps the glance first and stays under
GitHub's 1 MiB limit, for the nightly tier as well as for a real run.

The nightly tier (every toolkit, its archs, every library version, the known-bug corpus)
is a few thousand cells, and no machine here runs it whole in a benchmark's time. Its
results are therefore assembled from a real run: every planned cell takes the recorded
stages, messages and logs of a real cell of the same case and variant in
``reports/results.json`` (the H100 run; the same toolkit and arch where that run has
them), under its own toolkit, arch and library version. The sizes and times are those
of reports of that many real cells. The real run itself is measured beside it.

Chromium (Debian's) opens each page from disk, with no network: the time is the
navigation's own (``loadEventEnd``) and the time until the glance table is visible, the
median of five loads; a screenshot of the first screen is kept in the work folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGET_OPEN_S = 1.0
SUMMARY_LIMIT = 1 << 20  # GitHub's step-summary limit, bytes
LOADS = 5


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "cudamatrix", *args], cwd=REPO,
                          capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"cudamatrix {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def assembled_nightly(real: dict[str, Any], folder: Path) -> int:
    """results.json of every nightly cell, each from a real cell of its case and variant."""
    planned = [line.strip() for line in cli("list", "--tier", "nightly", "--known-bugs"
                                              ).splitlines() if line.count("/") >= 3]
    by_variant: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in real["cells"]:
        by_variant.setdefault((cell["case"], cell["variant"]), []).append(cell)
    cells = []
    for cell_id in planned:
        case, variant, toolkit, arch, *library = cell_id.split("/")
        sources = by_variant.get((case, variant))
        if not sources:
            continue
        source = next((c for c in sources if c["toolkit"] == toolkit and c["arch"] == arch),
                      sources[0])
        name, _, version = library[0].partition("-") if library else (None, "", None)
        cells.append({**source, "id": cell_id, "toolkit": toolkit, "arch": arch,
                      "library": name, "library_version": version or None})
    folder.mkdir(parents=True, exist_ok=True)
    run = dict(real["run"], tier="nightly")
    (folder / "results.json").write_text(json.dumps({**real, "run": run, "cells": cells}))
    return len(cells)


def page_open_seconds(page_file: Path, screenshot: Path) -> tuple[float, float]:
    """Median (load event, glance visible) seconds over LOADS loads, in Chromium."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("bench_report needs Debian's chromium (apt-get install chromium)")
    loads, glances = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        for number in range(LOADS):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            started = time.monotonic()
            page.goto(page_file.as_uri(), wait_until="load")
            page.locator("section#glance").wait_for(state="visible")
            glances.append(time.monotonic() - started)
            loads.append(page.evaluate(
                "performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
            if number == 0:
                page.screenshot(path=str(screenshot))
            page.close()
        browser.close()
    return statistics.median(loads), statistics.median(glances)


def measure(name: str, results: Path, work: Path) -> dict[str, Any]:
    out = work / name
    started = time.monotonic()
    cli("report", str(results), "--out", str(out))
    rendered = time.monotonic() - started
    markdown = (out / "COMPATIBILITY.md").read_text()
    load_s, glance_s = page_open_seconds(out / "report.html", work / f"{name}.png")
    cells = len(json.loads(results.read_text())["cells"])
    return {"name": name, "cells": cells, "render_s": rendered, "load_s": load_s,
            "glance_s": glance_s, "html_bytes": (out / "report.html").stat().st_size,
            "md_bytes": len(markdown.encode()),
            # The glance is the first section: before any per-case table or the details.
            "glance_first": markdown.index("\n## ") == markdown.index("\n## At a glance")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=REPO / "out" / "bench-report")
    parser.add_argument("--write", action="store_true", help="write bench/REPORT.md")
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    real_file = REPO / "reports" / "results.json"
    real = json.loads(real_file.read_text())
    assembled_nightly(real, work / "nightly-results")
    rows = [measure("h100-run", real_file, work),
            measure("nightly", work / "nightly-results" / "results.json", work)]
    lines = []
    for row in rows:
        met_open = row["glance_s"] < TARGET_OPEN_S
        met_size = row["md_bytes"] < SUMMARY_LIMIT
        lines.append(f"| {row['name']} | {row['cells']} | {row['load_s']:.2f} s | "
                     f"{row['glance_s']:.2f} s ({'met' if met_open else 'MISSED'}) | "
                     f"{row['html_bytes'] / 1024:.0f} KiB | {row['md_bytes'] / 1024:.0f} KiB "
                     f"({'met' if met_size else 'MISSED'}) | "
                     f"{'yes' if row['glance_first'] else 'NO'} | {row['render_s']:.1f} s |")
        print(lines[-1])
    if args.write:
        text = [
            "# Report benchmark",
            "",
            f"Measured {date.today().isoformat()} by `nox -s bench_report` (bench/report.py), "
            "Debian's Chromium, pages opened from disk, median of five loads. The nightly "
            "row is the nightly tier's every cell, each holding a real cell's record "
            "(bench/report.py says how).",
            "",
            f"| report | cells | page load event | glance visible (< {TARGET_OPEN_S:.0f} s) "
            "| report.html | COMPATIBILITY.md (< 1 MiB) | glance first | `cudamatrix report` |",
            "|---|---|---|---|---|---|---|---|",
            *lines,
            "",
        ]
        (REPO / "bench" / "REPORT.md").write_text("\n".join(text))


if __name__ == "__main__":
    main()
