"""One lock per folder of the cache that a run fills once (a toolkit's wheels, Debian's
unpacked nvcc, a downloaded sdist, a clone): shards of one machine, or two test workers,
share a cache, and the second to arrive must wait for the first's folder, not unpack its
own over it."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def folder_lock(target: Path) -> Iterator[None]:
    """Hold ``<target>.lock`` (beside `target`, so removing the folder keeps the lock) while
    `target` is checked and, if need be, made. The lock goes with the process, even on a
    kill, so a run that dies mid-way never leaves the next one waiting."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.with_name(target.name + ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
