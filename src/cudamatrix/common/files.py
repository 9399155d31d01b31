"""A file written whole or not at all: another process (a run sharing the cache, a reader
of the reports, a CI step uploading them) never sees half of one, and a write that fails
leaves the old file and no stray one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
