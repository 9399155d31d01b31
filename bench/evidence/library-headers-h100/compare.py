"""Set a run on the embedded default (--provider wheels, no GPU) against the H100's full
CUDA 13.0 (--provider host), cell by cell: what the compiler said (the compile stage's
status and decisive message, paths cut to file names) and the outcome, where a cell's
verdict is the compiler's. The GPU stages exist on the H100 only and are said apart.

    python bench/evidence/library-headers-h100/compare.py WHEELS_RESULTS HOST_RESULTS
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_PATH = re.compile(r"(?<![\w.])/(?:[^\s/:()'\"]+/)+(?=[^\s/:()'\"]+)")


def _compiled(path: Path) -> dict[str, tuple[str, str, str]]:
    cells = json.loads(path.read_text())["cells"]
    found = {}
    for cell in cells:
        compile_stage = next(s for s in cell["stages"] if s["stage"] == "compile")
        # A cell that reached the GPU passed every stage before it: on this side, a pass.
        decided = cell["outcome"] if cell["stage"] in ("compile", "inspect") else "pass"
        found[cell["id"]] = (compile_stage["status"], decided,
                             _PATH.sub("", compile_stage["message"] or cell["message"]))
    return found


def main() -> int:
    wheels, host = (_compiled(Path(p)) for p in sys.argv[1:3])
    gpu = {c["id"]: f"{c['outcome']} at {c['stage']}"
           for c in json.loads(Path(sys.argv[2]).read_text())["cells"]}
    differ = 0
    for cell in sorted(set(wheels) | set(host)):
        one, other = wheels.get(cell), host.get(cell)
        same = one == other
        differ += not same
        print(f"{'same' if same else 'DIFFERS'}  {cell}: wheels {one}; host {other}; "
              f"on the GPU: {gpu.get(cell, '-')}")
    print(f"{len(set(wheels) | set(host))} cells, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
