"""The plain nvcc commands that check a run's figures by hand (figures.py): each cell's own
compile line from its log, run again outside the tool with its whole output kept; a
variant built as one nvcc of every arch (the nvcc frontend, grouped) is run once, as it
ran. Writes HAND/<variant>/<arch or "all">.sh.

    python by_hand.py RESULTS_JSON HAND
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

DROPPED_WITH_VALUE = ("-MF", "-o", "--keep-dir", "-keep-dir")
DROPPED = ("-MD", "--keep", "-keep")


def plain(words: list[str], out: str) -> list[str]:
    """The command without its dependency file and kept files, writing `out`."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in DROPPED_WITH_VALUE:
            skip = True
            continue
        if word not in DROPPED:
            kept.append(word)
    return [*kept, "-o", out]


def main() -> int:
    results, hand = Path(sys.argv[1]), Path(sys.argv[2])
    written: set[tuple[str, str]] = set()
    for cell in json.loads(results.read_text())["cells"]:
        log = cell["stages"][0]["log"] if cell["stages"] else ""
        line = next((ln[2:] for ln in log.splitlines() if ln.startswith("$ ")
                     and "nvcc" in ln[2:].split()[0]), None)
        if line is None:
            continue
        words = shlex.split(line)
        grouped = sum(w.startswith("-gencode") for w in words) > 1
        name = "all" if grouped else cell["arch"]
        if (cell["variant"], name) in written:
            continue
        written.add((cell["variant"], name))
        folder = hand / cell["variant"]
        folder.mkdir(parents=True, exist_ok=True)
        command = plain(words, f"/tmp/hand-{cell['variant']}-{name}.o")
        (folder / f"{name}.sh").write_text(shlex.join(command) + "\n")
    print(f"{len(written)} plain nvcc commands in {hand}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
