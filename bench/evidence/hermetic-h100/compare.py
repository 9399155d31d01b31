"""Every cell's outcome, stage and message across runs of one corpus (paths and times
aside): python compare.py RUN_DIR... ; prints each difference, exits 1 if any."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# What differs between runs and says nothing about the verdict: folders and times.
_NOISE = [(re.compile(r"/tmp/[^\s:'\"]+"), "<tmp>"),
          (re.compile(r"\d+(\.\d+)? ?(s|ms|us)\b"), "<time>"),
          # A timing's spread, sample by sample (a budget's message says it).
          (re.compile(r"noise \d+(\.\d+)?%"), "noise <spread>"),
          (re.compile(r"cell-[0-9a-f]+|-[0-9a-f]{12}\b"), "<id>"),
          # A device assert's first thread to report: the GPU's choice, run by run.
          (re.compile(r"block: \[[\d,]+\], thread: \[[\d,]+\]"), "<first thread>")]


def verdicts(folder: Path) -> dict[str, tuple[str, str, str]]:
    cells = json.loads((folder / "results.json").read_text())["cells"]
    found = {}
    for cell in cells:
        message = cell.get("message", "")
        for pattern, word in _NOISE:
            message = pattern.sub(word, message)
        found[cell["id"]] = (cell["outcome"], cell.get("stage") or "", message)
    return found


def main() -> int:
    runs = [(Path(a).name, verdicts(Path(a))) for a in sys.argv[1:]]
    first_name, first = runs[0]
    differences = 0
    for name, other in runs[1:]:
        for cell in sorted(set(first) | set(other)):
            if first.get(cell) != other.get(cell):
                differences += 1
                print(f"{cell}: {first_name} {first.get(cell)} != {name} {other.get(cell)}")
    counts: dict[str, int] = {}
    for outcome, _, _ in first.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    print(f"{len(runs)} runs of {len(first)} cells ({counts}): {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
