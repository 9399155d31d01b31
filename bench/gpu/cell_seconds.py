"""Where a run's seconds went, cell by cell: python cell_seconds.py OUT_DIR [OUT_DIR...]
prints each run's cells' seconds (sum and mean), each stage's sum, and its ten slowest
cells with their stages, so a warm re-run's cost can be told apart from its cold run's."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def main() -> None:
    for folder in map(Path, sys.argv[1:]):
        cells = json.loads((folder / "results.json").read_text())["cells"]
        stages: Counter[str] = Counter()
        for cell in cells:
            for stage in cell["stages"]:
                stages[stage["stage"]] += stage.get("seconds", 0.0)
        total = sum(c["seconds"] for c in cells)
        print(f"{folder.name}: {len(cells)} cells, {total:.2f} s of cells "
              f"({total / max(1, len(cells)):.3f} s a cell); stages: "
              + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages.items()))
        for cell in sorted(cells, key=lambda c: -c["seconds"])[:10]:
            said = ", ".join(f"{s['stage']} {s.get('seconds', 0):.2f}" for s in cell["stages"])
            print(f"  {cell['seconds']:6.2f} s {cell['id']}: {said}")


if __name__ == "__main__":
    main()
