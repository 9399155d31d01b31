"""Keep a real cell's decisive stage as a diagnosis test sample.

    python tests/data/logs/collect.py RESULTS_JSON CELL_ID RULE "where it was captured"

writes tests/data/logs/<RULE>[-N].json with the cell's message and the stage the
runner diagnoses (the first stage that did not succeed), log included, as it was, with
the findings a diagnosis rule reads from its details (`detail` in rules.toml).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
# The details of a stage that diagnosis rules read (their `detail`).
FINDINGS = ("since_arch", "since_release", "since_release_unknown")


def main() -> None:
    results, cell_id, rule, origin = sys.argv[1:5]
    cells = {c["id"]: c for c in json.loads(Path(results).read_text())["cells"]}
    cell = cells[cell_id]
    stage = next((s for s in cell["stages"] if s["status"] != "ok"), cell["stages"][-1])
    sample = {"rule": rule, "cell": cell_id, "captured": origin, "message": cell["message"],
              "stage": {k: stage[k] for k in ("stage", "status", "message", "log")}}
    findings = {k: v for k, v in stage.get("details", {}).items() if k in FINDINGS}
    if findings:
        sample["stage"]["details"] = findings
    target = HERE / f"{rule}.json"
    number = 2
    while target.exists():
        target = HERE / f"{rule}-{number}.json"
        number += 1
    target.write_text(json.dumps(sample, indent=1) + "\n")
    print(target)


if __name__ == "__main__":
    main()
