"""The progress bar's ETA against the truth, as a newcomer sees it (issue 82, item 2).

    python bench/eta.py [--cache DIR] [--jobs 2]

Runs 42 cells of a starter project (`cudamatrix init`: its NVRTC saxpy, the same through
nvcc, its CMake build case and two copies of it that build apart) beside two cases of the
known-bugs corpus (a host compiler range, a CuTe DSL case), toolkits 13.0 and 12.8, sm_75,
sm_80, sm_86 and sm_90, on this machine in a terminal (a pseudo-terminal, so the bar is the one a
person sees), twice:

- ``first``: no recorded cell costs (a newcomer's first run, the environments prepared);
- ``recorded``: the costs the first run recorded kept, every compile done again
  (``--no-compile-cache``: a pull request that touches a common header).

Each frame the bar draws is read with the time it was read; the truth at a frame is the
time left until the bar's last frame (every cell done). Prints, for a third, a half and two
thirds of each run, what the bar said, the truth and the error; the target is within 25%
from a third on, and never ``0:00`` while cells still run. Exit status 1 on a miss.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SELECTION = (
    "--known-bugs", "--case", "saxpy", "--case", "saxpy-nvcc", "--case", "saxpy-build",
    "--case", "saxpy-build2", "--case", "saxpy-build3", "--case", "host-compiler-range",
    "--case", "cute-dsl-cache", "--toolkit", "13.0", "--toolkit", "12.8",
    "--arch", "sm_75", "--arch", "sm_80", "--arch", "sm_86", "--arch", "sm_90",
)
CASES = "cudamatrix-cases"
FRACTIONS = (1 / 3, 1 / 2, 2 / 3)
TARGET = 0.25
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FRAME = re.compile(r"(\d+)/(\d+) (\d+):(\d\d):(\d\d) eta (?:(\d+):)?(\d+):(\d\d)")


@dataclass(frozen=True)
class Frame:
    """One bar the run drew: when it was read, cells done of all, the ETA it said (s)."""

    at: float
    done: int
    total: int
    eta: int


def _frames(text: str, at: float) -> list[Frame]:
    found = []
    for match in _FRAME.finditer(_ANSI.sub("", text)):
        done, total, *_, hours, minutes, seconds = match.groups()
        eta = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
        found.append(Frame(at, int(done), int(total), eta))
    return found


def run_in_terminal(args: list[str], cwd: Path) -> tuple[float, list[Frame], int]:
    """Run cudamatrix on a pseudo-terminal; its start, every bar frame read, exit status."""
    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS="140", LINES="40", TERM="xterm-256color")
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "cudamatrix", *args], cwd=cwd,
                               stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    frames: list[Frame] = []
    pending = ""
    while True:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536).decode("utf-8", "replace")
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            cut = pending.rfind("\r")
            if cut >= 0:
                frames += _frames(pending[:cut], time.monotonic() - started)
                pending = pending[cut:]
        elif process.poll() is not None:
            break
    os.close(leader)
    frames += _frames(pending, time.monotonic() - started)
    return started, frames, process.wait()


def judge(name: str, frames: list[Frame]) -> bool:
    """Print the ETA at each fraction of the run against the truth; whether all are met."""
    total = frames[-1].total if frames else 0
    ends = [f.at for f in frames if f.done == total and total]
    starts = [f.at for f in frames if f.done > 0 or f.eta > 0]
    if not ends or not starts:
        print(f"{name}: no complete run read from the bar")
        return False
    end, begin = ends[0], starts[0]
    print(f"{name}: {total} cells, cells ran {end - begin:.1f} s "
          f"({end:.1f} s from the command's start)")
    met = True
    for fraction in FRACTIONS:
        moment = begin + fraction * (end - begin)
        frame = min((f for f in frames if f.at <= end), key=lambda f: abs(f.at - moment))
        truth = end - frame.at
        error = (frame.eta - truth) / truth if truth > 0 else 0.0
        ok = abs(error) <= TARGET
        met &= ok
        print(f"  at {fraction:.2f} ({frame.at:6.1f} s, {frame.done}/{frame.total}): "
              f"eta {frame.eta // 60}:{frame.eta % 60:02d}, truth {truth:5.1f} s, "
              f"{error:+.0%}{'' if ok else '  MISSED'}")
    zero = [f for f in frames if f.eta == 0 and f.done < f.total and f.at < end - 1.0]
    if zero:
        print(f"  MISSED: eta 0:00 with {end - zero[0].at:.1f} s left")
        met = False
    return met


def make_project(folder: Path) -> None:
    """The starter project, its NVRTC case once more through nvcc, its build case twice more
    (each copy its own build: a define and a comment of its own)."""
    subprocess.run([sys.executable, "-m", "cudamatrix", "init"], cwd=folder, check=True,
                   capture_output=True)
    cases = folder / CASES
    nvcc = cases / "saxpy-nvcc"
    shutil.copytree(cases / "saxpy", nvcc)
    toml = (nvcc / "case.toml").read_text()
    (nvcc / "case.toml").write_text(toml.replace('"nvrtc"', '"nvcc"'))
    for copy in (2, 3):
        build = cases / f"saxpy-build{copy}"
        shutil.copytree(cases / "saxpy-build", build)
        toml = (build / "case.toml").read_text()
        (build / "case.toml").write_text(
            toml.replace("-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_BUILD_TYPE=Release -DCOPY={copy}"))
        with (build / "saxpy_check.cu").open("a") as source:
            source.write(f"// copy {copy}\n")


def print_frames(frames: list[Frame]) -> None:
    """Each second's last frame: done/total, what the bar said and the time left."""
    end = max((f.at for f in frames if f.done == f.total), default=frames[-1].at)
    shown = -1.0
    for frame in frames:
        if frame.at - shown >= 1.0:
            shown = frame.at
            print(f"    {frame.at:6.1f} s {frame.done:3d}/{frame.total} eta {frame.eta:4d} s, "
                  f"truth {end - frame.at:5.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="the cudamatrix cache (a new one if unset)")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--frames", action="store_true",
                        help="also print every second's frame (what the bar said, the truth)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cudamatrix-eta-"))
    make_project(work)
    cache = args.cache or work / "cache"
    common = [*SELECTION, "-j", args.jobs, "--cache", str(cache)]
    prep = subprocess.run([sys.executable, "-m", "cudamatrix", "run", *common, "--out",
                           str(work / "prep"), "--no-compile-cache"], cwd=work,
                          capture_output=True, text=True, check=False)
    if prep.returncode not in (0, 1):
        print((prep.stdout + prep.stderr)[-2000:])
        return 2
    (cache / "cell-timings.json").unlink(missing_ok=True)
    met = True
    for name, more in (("first", ["--no-compile-cache"]),
                       ("recorded", ["--no-compile-cache"])):
        _, frames, status = run_in_terminal(["run", *common, *more, "--out",
                                             str(work / name)], work)
        print(f"{name}: exit status {status} (--out {work / name})")
        if args.frames:
            print_frames(frames)
        met &= judge(name, frames)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
