"""Each timed cell's figures from the runs' results.json, and how far its median moved
from one run to the next (the runs of run.sh)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def timed(folder: Path) -> dict[str, tuple[str, dict[str, object]]]:
    cells = json.loads((folder / "results.json").read_text())["cells"]
    found = {}
    for cell in cells:
        for stage in cell["stages"]:
            if stage["stage"] == "run" and "timing" in stage["details"]:
                found[cell["id"]] = (cell["outcome"], stage["details"]["timing"])
            elif stage["stage"] == "run":
                found[cell["id"]] = (cell["outcome"], {"message": cell["message"]})
    return found


runs = [timed(Path(a)) for a in sys.argv[1:]]
# The runs in pairs (a run, then the same run again); a last run without its pair alone.
pairs = [(runs[i], runs[i + 1] if i + 1 < len(runs) else {}) for i in range(0, len(runs), 2)]
for first, second in pairs:
    for cell, (outcome, figure) in first.items():
        again = second.get(cell, ("", {}))[1]
        if "median_us" not in figure:
            print(f"{cell}: {outcome}: {figure.get('message')}")
            continue
        moved = ""
        if "median_us" in again:
            moved = f", run 2 {again['median_us']:.2f} us " \
                    f"({(again['median_us'] / figure['median_us'] - 1):+.1%})"
        print(f"{cell}: {outcome}: median {figure['median_us']:.2f} us, min "
              f"{figure['min_us']:.2f}, noise {figure['noise']:.2%}, {figure['samples']} "
              f"samples, converged {figure['converged']}, SM clock "
              f"{figure.get('sm_clock_mhz')}/{figure.get('max_sm_clock_mhz')} MHz, reasons "
              f"{figure.get('clock_event_reasons')}{moved}")
