"""The figures of bench/evidence/cold-path/run.sh (issue 72).

    python summary.py cells RUN_FOLDER     # each cell's verdict and compile, as JSON
    python summary.py table OUT JOBS       # every run against its floor, the verdicts

A run's floor is max(the longest single-arch compile, the run's compile work / cores):
no schedule ends sooner than its longest compile, nor than its work spread over every
core. The longest single-arch compile is the slowest arch of sgemm_sm80 compiled by
itself, one after another (alone.json); the work, each compile's CPU seconds as the worker
measured them (`compiler_cpu_s`: the group's, shared among its cells). Which strategy built a
cell is its compile stage's `compile_strategy` (grouped, threads), a compile of its own
arch where there is none.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any


def cells(run: Path) -> list[dict[str, Any]]:
    """Each cell of a run's results.json: its verdict and what its compile stage says."""
    found = []
    for cell in json.loads((run / "results.json").read_text())["cells"]:
        stages = cell.get("stages") or [{}]
        compile_stage = stages[0] if stages[0].get("stage") == "compile" else {}
        details = compile_stage.get("details", {})
        built_with = details.get("built_with") or []
        found.append({
            "id": cell["id"], "outcome": cell["outcome"], "stage": cell.get("stage"),
            "seconds": cell.get("seconds", 0.0),
            "compile_s": compile_stage.get("seconds", 0.0),
            "compiler_cpu_s": details.get("compiler_cpu_s", 0.0),
            "built_with": built_with,
            "together_s": details.get("together_seconds"),
            "strategy": details.get("compile_strategy")
            or ("grouped" if len(built_with) > 1 else "alone"),
            "threads": details.get("nvcc_threads", 1),
            "threads_fallback": details.get("threads_fallback", ""),
        })
    return found


def table(out: Path, jobs: int) -> str:
    walls = dict(re.findall(r"^(\S+): rc=\d+ wall ([\d.]+) s",
                            (out / "walls.txt").read_text(), re.M))
    runs = {name: json.loads((out / f"cells-{name}.json").read_text()) for name in walls
            if (out / f"cells-{name}.json").is_file()}
    alone_file = out / "alone.json"
    alone = json.loads(alone_file.read_text()) if alone_file.is_file() else []
    single = max((c["compile_s"] for c in alone), default=0.0)
    said_single = "sgemm_sm80's slowest arch alone (alone.json)"
    if not single and "apart" in runs:  # no alone run: the apart run's own compiles
        single = max(c["compile_s"] for c in runs["apart"] if c["strategy"] == "alone")
        said_single = "the apart run's longest compile"
    single_cpu = max((c["compiler_cpu_s"] for c in alone), default=0.0)
    if single_cpu:  # a loaded machine stretches the wall, not the CPU seconds
        said_single += f"; {single_cpu:.1f} CPU s"
    lines = [f"cores (-j): {jobs}; longest single-arch compile: {single:.1f} s ({said_single})",
             "", "| strategy | cells | wall | compile work (CPU s) | work / cores | floor | "
             "wall / floor | longest compile in the run | built: alone / grouped / threads "
             "(fell back) |", "|---|---|---|---|---|---|---|---|---|"]
    for name, found in runs.items():
        wall = float(walls[name])
        work = sum(c["compiler_cpu_s"] for c in found)
        floor = max(single, work / jobs)
        longest = max((c["together_s"] or c["compile_s"] for c in found), default=0.0)
        built = {s: sum(1 for c in found if c["strategy"] == s)
                 for s in ("alone", "grouped", "threads")}
        fell = sum(1 for c in found if c["threads_fallback"])
        lines.append(f"| {name} | {len(found)} | {wall:.1f} s | {work:.1f} | "
                     f"{work / jobs:.1f} s | {floor:.1f} s | **{wall / floor:.2f}x** | "
                     f"{longest:.1f} s | {built['alone']} / {built['grouped']} / "
                     f"{built['threads']} ({fell}) |")
    lines += ["", verdicts(runs)]
    return "\n".join(lines)


def verdicts(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Each cell's outcome and stage against the first run's: the differences, named."""
    if not runs:
        return "no runs"
    first_name, first = next(iter(runs.items()))
    base = {c["id"]: (c["outcome"], c["stage"]) for c in first}
    said = []
    for name, found in runs.items():
        mine = {c["id"]: (c["outcome"], c["stage"]) for c in found}
        differ = sorted(i for i in base.keys() | mine.keys() if base.get(i) != mine.get(i))
        said.append(f"{name}: {len(mine)} cells, {len(differ)} differ from {first_name}"
                    + "".join(f"\n  {i}: {base.get(i)} -> {mine.get(i)}" for i in differ[:20]))
    outcomes: dict[str, int] = {}
    for c in first:
        outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
    return "outcome and stage of every cell:\n" + "\n".join(said) + \
        f"\n{first_name}'s outcomes: {dict(sorted(outcomes.items()))}"


def main() -> int:
    if sys.argv[1:2] == ["cells"] and len(sys.argv) == 3:
        print(json.dumps(cells(Path(sys.argv[2])), indent=1))
    elif sys.argv[1:2] == ["table"] and len(sys.argv) == 4:
        print(table(Path(sys.argv[2]), int(sys.argv[3])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
