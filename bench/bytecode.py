"""A warm `nox -R -s matrix` re-run with and without `PYTHONDONTWRITEBYTECODE=1` (issue 84).

Many CI images and Dockerfiles set that variable. The matrix session installs the package
without pip's byte-compiling, so before issue 84 Python could never keep what it compiled
there and every run compiled the tool's ~400 modules from source again. This measures, in
one sitting and on one machine, the warm re-run of an earlier `nox -s matrix` in four
states: the noxfile of this checkout (the modules a run imports compiled at install, the
package's changed ones at each start) and the noxfile of `--before REV` with the session's
bytecode removed (as `pip install --no-compile` left it, where the variable keeps it from
ever being written), each with the variable set and unset; and the same with every cell
taken from the compile cache again (`--always-run`), which imports the stages too.

    python bench/bytecode.py --before dc25370 -- --toolkit 13.0 --arch sm_75 --arch sm_90a

The run's arguments follow `--`; an earlier `nox -s matrix` with them must have run (its
record is what the warm re-run answers from). Prints a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_WARM_S = 3.0


def _pycaches(root: Path) -> list[Path]:
    return [p for p in root.rglob("__pycache__") if p.is_dir()]


def remove_bytecode() -> int:
    """The matrix session's environment and the package's sources without bytecode, as
    `pip install --no-compile` left them before issue 84: the number of folders removed."""
    folders = _pycaches(REPO / ".nox" / "matrix") + _pycaches(REPO / "src" / "cudamatrix")
    for folder in folders:
        shutil.rmtree(folder)
    return len(folders)


def compile_as_installed() -> None:
    """The bytecode `nox -s matrix` now leaves at install (the noxfile's own step)."""
    sys.path.insert(0, str(REPO))
    import noxfile  # the session's own step, not a copy of it

    python = REPO / ".nox" / "matrix" / "bin" / "python"
    subprocess.run([str(python), "-c", noxfile._IMPORT_EVERY_MODULE], cwd=REPO, check=True,
                   capture_output=True)


def warm_seconds(noxfile: str, args: list[str], dont_write: bool, times: int
                 ) -> tuple[float, float]:
    """The median wall time and CPU seconds (nox and every process it waited for) of
    `nox -f NOXFILE -R -s matrix -- ARGS` with the variable set or unset: the CPU seconds
    hold on a loaded machine, where the wall moves with the load."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if dont_write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    seconds, cpu = [], []
    for _ in range(times):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "nox", "-f", noxfile, "-R", "-s", "matrix",
                               "--", *args],
                              cwd=REPO, env=env, capture_output=True, text=True, check=False)
        seconds.append(time.monotonic() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
        if done.returncode not in (0, 1):
            sys.exit(f"nox -R -s matrix failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return statistics.median(seconds), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=3, help="runs per state (the median)")
    parser.add_argument("--before", required=True,
                        help="the revision whose noxfile is the state before (dc25370)")
    parser.add_argument("run_args", nargs="*", help="the run's arguments, after --")
    options = parser.parse_args()
    before = REPO / ".bench-noxfile-before.py"  # beside the noxfile: the same .nox/
    before.write_text(subprocess.run(["git", "show", f"{options.before}:noxfile.py"], cwd=REPO,
                                     capture_output=True, text=True, check=True).stdout)
    try:
        rows = measure(options.run_args, options.times, before.name)
    finally:
        before.unlink()
    print(f"| warm `nox -R -s matrix` | bytecode | PYTHONDONTWRITEBYTECODE | wall (median of "
          f"{options.times}) | CPU |\n|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\ntarget: the up-to-date re-run under {TARGET_WARM_S:.0f} s with the variable set")


def measure(run_args: list[str], times: int, before: str) -> list[str]:
    """A table row per state, the states alternated so that the machine's load falls on
    both sides alike."""
    rows = []
    for always in (False, True):
        args = [*run_args, *(["--always-run"] if always else [])]
        what = "every cell from the compile cache again" if always else "up to date"
        for dont_write in (True, False):
            for state in ("before (no bytecode kept)", "after (compiled at install)"):
                if state.startswith("before"):
                    remove_bytecode()
                    noxfile = before
                else:
                    compile_as_installed()
                    noxfile = "noxfile.py"
                seconds, cpu = warm_seconds(noxfile, args, dont_write, times)
                variable = "set" if dont_write else "unset"
                rows.append(f"| {what} | {state} | {variable} | {seconds:.2f} s | {cpu:.2f} s |")
    return rows


if __name__ == "__main__":
    main()
