"""README's main command as a new user runs it, timed (issue 52): a fresh clone of this
repository and a fresh HOME (no pip cache, no cudamatrix cache), `python3 -m pip install
nox && python3 -m nox -s matrix`, then the same again; with or without a Docker engine.

    python bench/first_run.py                 # the engine as it is (auto picks docker where
                                              # it answers and has the base image)
    python bench/first_run.py --no-docker     # DOCKER_HOST at a socket nobody serves

Prints the rows bench/RESULTS.md's first-run section keeps: the whole first run, its
longest cell, their ratio, the cells' own seconds over the cores, the run against its
floor (issue 72: max(its longest single-arch compile, its compilers' CPU seconds / the
cores), what no schedule can beat), the second run and `cudamatrix run` alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
README_COMMAND = "python3 -m pip install -q nox && python3 -m nox -s matrix"


def _timed(command: str, cwd: Path, env: dict[str, str], log: Path | None = None
           ) -> tuple[float, int, str]:
    """The command's wall seconds, exit status and output; each line of it written to
    `log` with the second it came at, so a run's timeline (which environment was prepared
    when, which cell ran beside which) can be read afterwards."""
    started = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as running:
        assert running.stdout is not None
        for line in running.stdout:
            lines.append(f"{time.monotonic() - started:8.1f} {line}")
    if log is not None:
        log.write_text("".join(lines))
    said = "".join(line[9:] for line in lines)
    return time.monotonic() - started, running.returncode, said


def _children_cpu() -> float:
    """The CPU seconds of every process this one waited for and theirs, recursively:
    what the first run cost the cores, against which its wall is CPU-bound or idle."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def compile_floor(cells: list[dict[str, Any]], cores: int) -> tuple[float, float, str]:
    """(The longest single-arch compile, the compilers' CPU seconds, that compile's cell):
    a compile one nvcc made for several archs (built_with) counts its share, a lower bound
    of its arch's compile alone, so the floor is never set too high."""
    longest, work, named = 0.0, 0.0, ""
    for cell in cells:
        stage = (cell.get("stages") or [{}])[0]
        if stage.get("stage") != "compile" or stage.get("details", {}).get("cache") == "hit":
            continue
        details = stage.get("details", {})
        work += float(details.get("compiler_cpu_s", 0.0))
        seconds = float(stage.get("seconds", 0.0))
        if seconds > longest:
            longest, named = seconds, cell["id"]
    return longest, work, named


def jit_floor(cells: list[dict[str, Any]], cores: int, jit_work: float | None = None
              ) -> tuple[float, float, float, float, str]:
    """(The floor, the longest single-arch compile with its own load, the compilers' CPU
    seconds, the JIT's, that cell) of a cold run on a GPU (issue 81): a cell below the
    GPU's arch loads its PTX through the driver's JIT, CPU work in its server's process
    that follows its compile, so no schedule beats max(the longest compile + its load,
    (compile work + JIT work) / cores). `jit_work`: the JIT's seconds measured apart (its
    PTX loaded one after another, the driver's cache off); else the run's JIT loads'."""
    path, work, jit, named = 0.0, 0.0, 0.0, ""
    for cell in cells:
        stages = {s.get("stage"): s for s in cell.get("stages") or []}
        compiled = stages.get("compile") or {}
        load = stages.get("load") or {}
        fresh = compiled and compiled.get("details", {}).get("cache") != "hit"
        if fresh:
            work += float(compiled.get("details", {}).get("compiler_cpu_s", 0.0))
        if (load.get("details") or {}).get("via") == "ptx-jit":
            jit += float(load.get("seconds", 0.0))
        seconds = (float(compiled.get("seconds", 0.0)) if fresh else 0.0) \
            + float(load.get("seconds", 0.0))
        if seconds > path:
            path, named = seconds, cell["id"]
    jit = jit if jit_work is None else jit_work
    return max(path, (work + jit) / cores), path, work, jit, named


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-docker", action="store_true",
                        help="no engine answers (DOCKER_HOST at a dead socket)")
    parser.add_argument("--keep", type=Path, help="do it in this folder and keep it")
    parser.add_argument("--revision", default="HEAD",
                        help="the commit the clone is at (an earlier one: its before)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="cudamatrix-first-run-"))
    clone, home = work / "clone", work / "home"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", args.revision], check=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDAMATRIX_", "NOX_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    if args.no_docker:
        env["DOCKER_HOST"] = f"unix://{work}/no-engine.sock"
    spent = _children_cpu()
    first, code, said = _timed(README_COMMAND, clone, env, work / "first-run.log")
    spent = _children_cpu() - spent
    results = json.loads((clone / "reports" / "latest" / "results.json").read_text())
    cells = results["cells"]
    longest = max(cells, key=lambda c: c.get("seconds", 0.0))
    own = sum(c.get("seconds", 0.0) for c in cells)
    cores = os.cpu_count() or 1
    provider = results["run"].get("provider", "?")
    single, work, single_cell = compile_floor(cells, cores)
    floor = max(single, work / cores)
    second, code2, _ = _timed(README_COMMAND, clone, env)
    alone, _, _ = _timed(f"{clone}/.nox/matrix/bin/cudamatrix run", clone, env)
    summary = " ".join(f"{k} {v}" for k, v in results["summary"].items() if v)
    print(f"exit status {code} then {code2}; provider {provider}; {said.splitlines()[-1]}",
          file=sys.stderr)
    rows = [
        ("first run, whole", f"{first:.1f} s ({len(cells)} cells: {summary})"),
        (f"its longest cell (`{longest['id']}`)", f"{longest['seconds']:.1f} s"),
        ("first run / its longest cell", f"{first / longest['seconds']:.2f}x"),
        (f"the cells' own seconds over {cores} cores", f"{own / cores:.1f} s = "
                                                       f"{own / cores / longest['seconds']:.2f}x"),
        (f"its longest single-arch compile (`{single_cell}`)", f"{single:.1f} s"),
        (f"its compilers' CPU seconds over {cores} cores", f"{work / cores:.1f} s"),
        (f"every process's CPU seconds over {cores} cores (nox, pip, environments, cells)",
         f"{spent / cores:.1f} s = {spent / cores / floor:.2f}x the floor" if floor else "-"),
        ("first run / its floor (max of the two)", f"{first / floor:.2f}x ({first:.1f} s / "
                                                   f"{floor:.1f} s)" if floor else "-"),
        ("second run, whole (up to date)", f"{second:.2f} s"),
        ("`cudamatrix run` alone, again", f"{alone:.2f} s"),
    ]
    print(f"provider: {provider}")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0 if code in (0, 1) and code2 in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
