"""A shard made of some cells of a run's results.json, for `cudamatrix merge`: those whose
id matches a pattern (or, with --except, those that do not). How the published run's
shards were cut where a device call could not run every cell (README.md here).

    python3 bench/evidence/seed-h100/cells_of.py RESULTS_JSON OUT_FOLDER PATTERN [--except] [--said TEXT]
"""
import json
import re
import sys
from pathlib import Path

source, out, pattern = Path(sys.argv[1]), Path(sys.argv[2]), re.compile(sys.argv[3])
keep_matching = "--except" not in sys.argv
record = json.loads(source.read_text())
record["cells"] = [c for c in record["cells"] if bool(pattern.match(c["id"])) == keep_matching]
if "--said" in sys.argv:
    record["run"]["command"] = sys.argv[sys.argv.index("--said") + 1]
out.mkdir(parents=True, exist_ok=True)
(out / "results.json").write_text(json.dumps(record, indent=1))
print(len(record["cells"]), "cells")
