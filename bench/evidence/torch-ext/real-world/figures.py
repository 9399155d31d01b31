"""Every resource figure of a run's cells against ptxas run by hand (issue 69, point 4):
each arch's figures parsed from a plain nvcc's own `--ptxas-options=-v` output, compared
kernel by kernel with what the tool recorded for the cell of that arch.

    python figures.py RESULTS_JSON HAND_LOG_FOLDER

HAND_LOG_FOLDER/<variant>/ holds the whole output of plain nvccs of that variant's cells
(`*.log`: one arch alone, or one nvcc of every arch, as the variant's own compile ran);
each kernel's arch is the one its "Compiling entry function ... for 'sm_XX'" line names.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
USED = re.compile(r"Used (\d+) registers")
SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def by_hand(log: str) -> dict[tuple[str, str], dict[str, int]]:
    """(kernel, arch) -> registers, stack and spills, as ptxas printed them."""
    found: dict[tuple[str, str], dict[str, int]] = {}
    current: tuple[str, str] | None = None
    for line in log.splitlines():
        entry = ENTRY.search(line)
        if entry:
            current = (entry.group(1), entry.group(2))
            found[current] = {}
            continue
        if current is None:
            continue
        spill = SPILL.search(line)
        if spill:
            found[current].update(stack_bytes=int(spill.group(1)),
                                  spill_store_bytes=int(spill.group(2)),
                                  spill_load_bytes=int(spill.group(3)))
        used = USED.search(line)
        if used:
            found[current]["registers"] = int(used.group(1))
    return found


def main() -> int:
    results, hand_folder = Path(sys.argv[1]), Path(sys.argv[2])
    hands: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
    for log in sorted(hand_folder.glob("*/*.log")):
        hands.setdefault(log.parent.name, {}).update(by_hand(log.read_text(errors="replace")))
    wrong = 0
    for cell in json.loads(results.read_text())["cells"]:
        if cell["variant"] not in hands:
            continue
        hand, arch = hands[cell["variant"]], cell["arch"]
        mine = {r["kernel"]: r for r in cell.get("resources") or [] if r.get("arch") == arch}
        theirs = {k: v for (k, a), v in hand.items() if a == arch}
        differ = [k for k, fig in theirs.items() if k in mine
                  and any(mine[k].get(key, 0) != value for key, value in fig.items())]
        missing = sorted(set(theirs) - set(mine))
        extra = sorted(set(mine) - set(theirs))
        figures = sum(len(v) for v in theirs.values())
        print(f"{cell['id']}: {cell['outcome']}; {len(mine)} kernels recorded, ptxas by hand "
              f"{len(theirs)} kernels ({figures} figures); differ {len(differ)}, missing "
              f"{len(missing)}, not by hand {len(extra)}")
        for kernel in differ[:3]:
            print(f"  {kernel[:90]}: tool {mine[kernel]} hand {theirs[kernel]}")
        wrong += len(differ) + len(missing) + len(extra) + (0 if theirs else 1)
    print(f"cells' figures against ptxas by hand: {'all equal' if not wrong else f'{wrong} wrong'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
