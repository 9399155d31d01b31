"""The runs of run.sh side by side: per run, its cells' GPU stages (load and run seconds,
summed and per cell, and the contexts made); then, cell by cell, any difference in
outcome, stage or message between a context per cell and the GPU server.

    python bench/evidence/gpu-server-h100/compare.py OUT
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_NUMBERS = re.compile(r"\d+\.\d+ s|\d+ MiB")


def _cells(folder: Path) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads((folder / "results.json").read_text())["cells"]}


def main() -> int:
    out = Path(sys.argv[1])
    runs = sorted(p for p in out.iterdir() if p.is_dir() and "-" in p.name
                  and not p.name.startswith("cold"))
    for run in runs:
        cells = _cells(run)
        gpu = [s for c in cells.values() for s in c["stages"] if s["stage"] in ("load", "run")]
        loads = [s for s in gpu if s["stage"] == "load"]
        seconds = sum(s["seconds"] for s in gpu)
        replaced = sum(1 for s in loads if s["details"].get("server_replaced"))
        print(f"{run.name}: {len(cells)} cells, {len(loads)} loaded, GPU stages {seconds:.2f} s "
              f"({seconds / max(1, len(loads)):.3f} s a cell that loaded), servers replaced "
              f"{replaced}")
    differ = 0
    for what in ("lib", "faults"):
        base = _cells(out / f"{what}-per-cell-16")
        for other in ("per-cell-1", "server-16", "server-1"):
            cells = _cells(out / f"{what}-{other}")
            for cell_id in sorted(set(base) | set(cells)):
                one, two = base.get(cell_id), cells.get(cell_id)
                said = [(c["outcome"], c["stage"], _NUMBERS.sub("#", c["message"]))
                        if c else None for c in (one, two)]
                if said[0] != said[1]:
                    differ += 1
                    print(f"DIFFERS {what} per-cell-16 vs {other}: {cell_id}: {said[0]} | "
                          f"{said[1]}")
    print(f"{differ} differences in outcome, stage or message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
