"""The host compiler nvcc gets: the newest GCC installed that the release accepts.

nvcc refuses a GCC newer than it knows (``unsupported GNU version! gcc versions later
than 11 are not supported!`` from 11.8); the matrix says each release's newest
(`gcc_max`). Of the ``g++-N`` and ``g++`` on PATH, the newest within it is chosen and
passed with ``-ccbin``; when none fits, nvcc cells of that toolkit are skips that say so.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess


def _major(program: str) -> int | None:
    try:
        done = subprocess.run([program, "-dumpversion"], capture_output=True, text=True,
                              timeout=30, check=False)
    except OSError:
        return None
    found = re.match(r"(\d+)", done.stdout.strip())
    return int(found.group(1)) if done.returncode == 0 and found else None


def installed_gcc() -> dict[int, str]:
    """GCC majors on PATH and the program for each (the caller watches each program: a
    choice among them rests on every one)."""
    found: dict[int, str] = {}
    for name in ["g++", *(f"g++-{n}" for n in range(6, 16))]:
        path = shutil.which(name)
        major = _major(path) if path else None
        if path and major is not None:
            found.setdefault(major, path)
    return found


def choose_gcc(toolkit: str, gcc_max: int, found: dict[int, str]) -> tuple[str | None, str | None]:
    """(program, None) for the newest GCC <= gcc_max of those `found` (installed_gcc), or
    (None, why none fits)."""
    fitting = [major for major in found if major <= gcc_max]
    if fitting:
        return found[max(fitting)], None
    have = ", ".join(f"g++ {m}" for m in sorted(found)) or "no g++"
    return None, (f"toolkit {toolkit}'s nvcc accepts GCC up to {gcc_max} as host compiler; "
                  f"this machine has {have} (apt-get install g++-{gcc_max})")


@functools.cache
def installed_compiler(name: str) -> tuple[str, str] | None:
    """A host compiler a case names (``g++-12``): its path and full version, or None (the
    caller watches the program: the answer is kept for the process's life)."""
    path = shutil.which(name)
    if path is None:
        return None
    try:
        done = subprocess.run([path, "-dumpfullversion", "-dumpversion"], capture_output=True,
                              text=True, timeout=30, check=False)
    except OSError:
        return None
    return path, done.stdout.strip() or "unknown"
