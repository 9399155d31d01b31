"""A run with a build case, then the same run again (issue 61, point 4): the starter
project `cudamatrix init` writes (an NVRTC case and a CMake build case), one toolkit and
arch, into one --out; the second run must answer from the first's record, in under 2 s.

    python bench/build_rerun.py [--toolkit 13.0] [--arch sm_80]

Prints each run's wall seconds, what its first line said, and their ratio.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(folder: Path, *args: str) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cudamatrix", *args], cwd=folder,
                          capture_output=True, text=True, check=False)
    first = (done.stdout + done.stderr).splitlines()[:1]
    return time.monotonic() - started, first[0] if first else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolkit", default="13.0")
    parser.add_argument("--arch", default="sm_80")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cudamatrix-build-rerun-"))
    _run(folder, "init")
    run = ("run", "--toolkit", args.toolkit, "--arch", args.arch, "--out", "out")
    first, _ = _run(folder, *run)
    second, said = _run(folder, *run)
    print(f"first run: {first:.2f} s")
    print(f"second run: {second:.2f} s ({said[:90]})")
    print(f"first / second: {first / second:.1f}x; second under 2 s: {second < 2.0}")
    return 0 if second < 2.0 and said.startswith("up to date") else 1


if __name__ == "__main__":
    raise SystemExit(main())
