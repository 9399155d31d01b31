"""What each cell of the shipped corpus costs on the reference machine, kept in
src/cudamatrix/config/data/cell-costs.json so a first run anywhere starts its longest
cells first (orchestrator/cell_timings.py). Run by ``nox -s cell_costs``:

    python bench/cell_costs.py RESULTS_JSON --write   # the table from a cold run
    python bench/cell_costs.py RESULTS_JSON --check   # exit 1 where a cell drifted 2x

A cold run is one without the compile cache (``--no-compile-cache --always-run``): a cell
served from the cache says nothing of what it costs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "src" / "cudamatrix" / "config" / "data" / \
    "cell-costs.json"
# Drift is judged where a cell costs this much at least: a second's noise is no drift.
DRIFT_FROM_S = 5.0
DRIFT_RATIO = 2.0


def measured(results: Path) -> dict[str, float]:
    """Each cell's seconds in a cold run's results.json (cells served from the compile
    cache left out)."""
    cells = json.loads(results.read_text())["cells"]
    found = {}
    for cell in cells:
        first = cell["stages"][0] if cell.get("stages") else {}
        if (first.get("details") or {}).get("cache") == "hit":
            continue
        found[cell["id"].split("@")[0]] = round(float(cell.get("seconds", 0.0)), 1)
    return found


def drifted(table: dict[str, float], now: dict[str, float]) -> list[str]:
    """The cells whose cost now is more than DRIFT_RATIO times off the table's, either
    way, where either figure is at least DRIFT_FROM_S."""
    lines = []
    for cell, seconds in sorted(now.items()):
        before = table.get(cell)
        if before is None or max(before, seconds) < DRIFT_FROM_S:
            continue
        ratio = max(before, seconds) / max(min(before, seconds), 0.1)
        if ratio > DRIFT_RATIO:
            lines.append(f"{cell}: {seconds:.1f} s now, {before:.1f} s in the table "
                         f"({ratio:.1f}x)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    now = measured(args.results)
    if args.write:
        provider = json.loads(args.results.read_text())["run"].get("provider", "?")
        machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}, {provider} provider, no GPU")
        TABLE.write_text(json.dumps({"reference": machine, "from": str(args.results),
                                     "seconds": dict(sorted(now.items()))}, indent=1) + "\n")
        print(f"{TABLE}: {len(now)} cells")
    if args.check:
        table = json.loads(TABLE.read_text())["seconds"]
        lines = drifted(table, now)
        missing = sorted(set(now) - set(table))
        for line in lines:
            print(f"drifted: {line}")
        for cell in missing:
            print(f"not in the table: {cell}")
        print(f"{len(now)} cells measured, {len(lines)} drifted past {DRIFT_RATIO}x, "
              f"{len(missing)} not in the table")
        return 1 if lines or missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
