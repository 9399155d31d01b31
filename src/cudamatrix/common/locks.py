"""The locks a run takes: one per folder of the cache that a run fills once (a toolkit's
wheels, Debian's unpacked nvcc, a downloaded sdist, a clone), which shards of one machine
or two test workers share, so the second to arrive waits for the first's folder rather
than unpacking its own over it; and one on a run's --out folder, which a second run may
not share at all. Both say who holds them: the pid the kernel lists as holding the file
(/proc/locks); a lock file's own record of its holder's pid and host only for a holder on
another host."""

from __future__ import annotations

import errno
import fcntl
import os
import platform
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import EnvironmentUnavailable, UserError
from .log_line import say

# How long a run waits for another process's folder (a toolkit's install takes minutes;
# an hour is a process that hangs, not one that works).
LOCK_TIMEOUT_S = 3600.0
# The run's end (seconds since the epoch, as --run-timeout set it), which every process
# the run starts inherits: no wait for a lock outlasts it.
RUN_DEADLINE_ENV = "CUDAMATRIX_RUN_DEADLINE"


def _within_the_run(timeout_s: float) -> tuple[float, str]:
    """The wait a lock may take: `timeout_s`, or less where the run's --run-timeout ends
    first; and what ends it, for the message."""
    said = os.environ.get(RUN_DEADLINE_ENV, "")
    try:
        left = float(said) - time.time()
    except ValueError:
        return timeout_s, f"{timeout_s:.0f} s"
    if left < timeout_s:
        return max(0.0, left), "the run's --run-timeout"
    return timeout_s, f"{timeout_s:.0f} s"


def set_run_deadline(seconds: float | None) -> None:
    """The run's --run-timeout, for every lock wait of this process and those it starts."""
    if seconds:
        os.environ[RUN_DEADLINE_ENV] = f"{time.time() + seconds:.3f}"
_POLL_S = 0.2


# Where Linux lists every lock held: "1: FLOCK  ADVISORY  WRITE <pid> <maj>:<min>:<inode>
# 0 EOF" (a waiter's line has "->"). Read within a bound: it is one line a lock.
PROC_LOCKS = Path("/proc/locks")
_PROC_LOCKS_BYTES = 8 << 20


def _real_holder(handle: IO[str]) -> int | None:
    """The pid holding a lock on `handle`'s file, as the kernel says (by its device and
    inode in /proc/locks), never this process; None where none is listed, the holder is
    in another pid namespace (pid 0 or -1), or /proc/locks cannot be read."""
    info = os.fstat(handle.fileno())
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with PROC_LOCKS.open("rb") as listing:
            text = listing.read(_PROC_LOCKS_BYTES).decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        words = line.split()
        if len(words) < 6 or "->" in words or words[5] != key:
            continue
        if words[4].isdigit() and int(words[4]) > 0 and int(words[4]) != os.getpid():
            return int(words[4])
    return None


def _holder(handle: IO[str]) -> str:
    """Who holds the lock: the pid the kernel says holds it (another tool's flock writes
    nothing into the file, and a file's pid may be stale or forged: `pid 1`); where the
    kernel names none, the file's record only for another host (a shared cache, whose
    holder this machine cannot see), else nobody by name."""
    real = _real_holder(handle)
    if real is not None:
        return f"pid {real} on {platform.node()}"
    handle.seek(0)
    said = handle.read(200).strip()
    words = said.split()
    if len(words) == 4 and words[0] == "pid" and words[1].isdigit() and words[2] == "on":
        if words[3] != platform.node():
            return f"pid {words[1]} on {words[3]} (as its lock file says)"
        try:
            os.kill(int(words[1]), 0)
        except ProcessLookupError:
            return f"another process (its lock file names pid {words[1]}, not running)"
        except PermissionError:
            pass
        if PROC_LOCKS.is_file():
            return f"another process (its lock file names pid {words[1]}, not the holder)"
        return f"pid {words[1]} on {words[3]}"
    return "another process"


def _open_lock(path: Path) -> IO[str]:
    """A lock file opened for the lock, never through a link and never anything but a
    regular file (a FIFO or a device there would block or be truncated): refused in one
    line naming it."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                             | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        kind = "a link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise UserError(f"{path}: cannot be used as a lock file ({kind})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UserError(f"{path}: not a regular file; cudamatrix keeps its lock there "
                        "(remove it)")
    return os.fdopen(descriptor, "a+")


def _claim(handle: IO[str]) -> None:
    """Write this process into the lock file, for whoever waits next."""
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {platform.node()}")
    handle.flush()


def _say(text: str) -> None:
    say(text, stderr=True)


# One lock a folder within this process, keyed by its path: two threads of one run.
_IN_THIS_PROCESS: dict[Path, threading.Lock] = {}
_IN_THIS_PROCESS_GUARD = threading.Lock()


def _this_process_lock(target: Path) -> threading.Lock:
    with _IN_THIS_PROCESS_GUARD:
        return _IN_THIS_PROCESS.setdefault(target.absolute(), threading.Lock())


@contextmanager
def folder_lock(target: Path, timeout_s: float = LOCK_TIMEOUT_S,
                say: Callable[[str], None] = _say) -> Iterator[None]:
    """Hold ``<target>.lock`` (beside `target`, so removing the folder keeps the lock) while
    `target` is checked and, if need be, made. A holder is waited for, said once ("waiting
    for ... held by pid N"), and for at most `timeout_s`. The lock goes with the process,
    even on a kill, so a run that dies mid-way never leaves the next one waiting."""
    target.parent.mkdir(parents=True, exist_ok=True)
    timeout_s, limit = _within_the_run(timeout_s)
    # Two threads of this run first wait for each other here, and silently: a folder two
    # of the run's environments share (one install for cutlass_python and cutlass_torch)
    # was said to be held by "another process", this one.
    ours = _this_process_lock(target)
    if not ours.acquire(timeout=timeout_s):
        raise EnvironmentUnavailable(f"{target}: this run's own preparation of it held it "
                                     f"past {limit}")
    try:
        with _held_by_this_process(target, timeout_s, limit, say):
            yield
    finally:
        ours.release()


@contextmanager
def _held_by_this_process(target: Path, timeout_s: float, limit: str,
                          say: Callable[[str], None]) -> Iterator[None]:
    """The folder's lock file, held against other processes (shards of one machine, two
    test workers), waiting for one at most `timeout_s`."""
    with _open_lock(target.with_name(target.name + ".lock")) as handle:
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
                if time.monotonic() - started >= timeout_s:
                    raise EnvironmentUnavailable(
                        f"{target}: {_holder(handle)} held it past {limit} "
                        "(stop that process to go on: removing the lock file would let "
                        "another run prepare the folder beside it)") from None
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
    handle = _open_lock(path)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(handle)
        handle.close()
        raise LockHeld(holder) from None
    _claim(handle)
    return handle
