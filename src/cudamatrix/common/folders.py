"""The one check of a folder the tool will write into (`--out` of every command, the
cache): made where it is missing, and written once, so a file, a device, a FIFO, a
dangling link, `file/sub` or `/proc/self` is one line naming it (exit status 2) before any
work is done, never a traceback after it."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserError


def writable_folder(path: Path, what: str, hint: str = "") -> None:
    """Make `path` a folder this process can write into, or refuse it in one line: `what`
    names it (`--out`), `hint` says what to do instead."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(20, "not a folder")
        probe = path / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        said = exc.strerror or type(exc).__name__
        raise UserError(f"{path}: {what} is not writable ({said})"
                        + (f"; {hint}" if hint else "")) from None
