"""The locks a run takes: one per folder of the cache that a run fills once (a toolkit's
wheels, Debian's unpacked nvcc, a downloaded sdist, a clone), which shards of one machine
or two test workers share, so the second to arrive waits for the first's folder rather
than unpacking its own over it; and one on a run's --out folder, which a second run may
not share at all. Both say who holds them: a lock file holds its holder's pid and host."""

from __future__ import annotations

import fcntl
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import EnvironmentUnavailable

# How long a run waits for another process's folder (a toolkit's install takes minutes;
# an hour is a process that hangs, not one that works).
LOCK_TIMEOUT_S = 3600.0
_POLL_S = 0.2


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    return handle.read().strip() or "another process"


def _claim(handle: IO[str]) -> None:
    """Write this process into the lock file, for whoever waits next."""
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {platform.node()}")
    handle.flush()


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextmanager
def folder_lock(target: Path, timeout_s: float = LOCK_TIMEOUT_S,
                say: Callable[[str], None] = _say) -> Iterator[None]:
    """Hold ``<target>.lock`` (beside `target`, so removing the folder keeps the lock) while
    `target` is checked and, if need be, made. A holder is waited for, said once ("waiting
    for ... held by pid N"), and for at most `timeout_s`. The lock goes with the process,
    even on a kill, so a run that dies mid-way never leaves the next one waiting."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.with_name(target.name + ".lock").open("a+") as handle:
        started = time.monotonic()
        said = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    say(f"waiting for {target}: {_holder(handle)} is preparing it")
                    said = True
                if time.monotonic() - started > timeout_s:
                    raise EnvironmentUnavailable(
                        f"{target}: {_holder(handle)} has held it for over {timeout_s:.0f} s "
                        "(remove the process, or its lock file, to go on)") from None
                time.sleep(_POLL_S)
        _claim(handle)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class LockHeld(Exception):
    """Another process holds the lock; the message names it (pid, host)."""


def exclusive_lock(path: Path) -> IO[str]:
    """Hold `path` (a lock file) for this process alone, or raise LockHeld at once naming
    who holds it; the caller closes the handle to let go."""
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(handle)
        handle.close()
        raise LockHeld(holder) from None
    _claim(handle)
    return handle
