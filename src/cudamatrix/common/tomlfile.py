"""Reading TOML files with errors that name the file and the line."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["load_toml", "tomllib"]


# The largest TOML file read (a case.toml, cudamatrix.toml, matrix.toml is a few KiB).
MAX_TOML_BYTES = 16 << 20


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a table; any file it cannot be (missing, unreadable, not UTF-8, not
    TOML) is a UserError naming it."""
    try:
        info = os.stat(path)
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_TOML_BYTES:
            raise UserError(f"{path}: {info.st_size} bytes, over the {MAX_TOML_BYTES >> 20} MiB "
                            "a configuration or case file may have")
        if not stat.S_ISDIR(info.st_mode) and not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: not a regular file (a device or a FIFO is never read)")
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except RecursionError:
        raise UserError(f"{path}: nested too deep to be a configuration") from None
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except OSError as exc:  # a folder, no permission
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message carries "(at line N, column M)".
        raise UserError(f"{path}: malformed TOML: {exc}") from None
