"""The fourth shard of the published run: CuPy 14.2.0's two Jitify variants on CUDA 13.0
(6 cells), taken from the 2026-11-22 run's results.json (git show 05c84c2:reports/results.json).
Their one-time Jitify warm-up took 789 s on the H100, longer than one device call (600 s).

    python3 reports/seed-h100/old_jitify.py OLD_RESULTS_JSON OUT_FOLDER
"""
import json
import re
import sys
from pathlib import Path

old, out = Path(sys.argv[1]), Path(sys.argv[2])
record = json.loads(old.read_text())
record["cells"] = [c for c in record["cells"]
                   if re.match(r"wmma-jitify/cupy-jitify[a-z-]*/13\.0/", c["id"])]
record["run"]["command"] = "the 2026-11-22 run, CuPy 14.2.0 Jitify cells only"
out.mkdir(parents=True, exist_ok=True)
(out / "results.json").write_text(json.dumps(record, indent=1))
print(len(record["cells"]), "cells")
