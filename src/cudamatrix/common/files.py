"""A file written whole or not at all: another process (a run sharing the cache, a reader
of the reports, a CI step uploading them) never sees half of one, and a write that fails
leaves the old file and no stray one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from . import recorded

_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file beside it, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        # mkstemp makes owner-only files; reports are for publishing (Pages, artifacts).
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_marker(path: Path) -> Any:
    """A marker or record the tool wrote (JSON), or None where there is none or it is
    damaged (a run killed as it wrote one, a hand's edit): the folder it stands for is made
    again, never a traceback on every later run (recorded.read_cache, the one reader)."""
    return recorded.read_cache(path)


def remove_leftovers(target: Path) -> None:
    """The ``<target>.partial-<pid>`` stagings and ``.<name>.*`` temporaries of processes no
    longer running (a run SIGKILLed mid-download), beside `target`: each is an unfinished
    copy nothing will finish."""
    import shutil

    for leftover in target.parent.glob(f"{target.name}.partial-*"):
        pid = leftover.name.rpartition("-")[2]
        if pid.isdigit() and not _running(int(pid)):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
