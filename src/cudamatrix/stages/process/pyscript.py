"""Runs a Python case script with its library folders as site directories.

``pip install --target`` folders can carry ``.pth`` files (the CuTe DSL's does),
which Python honours only for site directories, not for PYTHONPATH entries. A script
that hangs writes its own stack just before the cell's limit (CUDAMATRIX_STACK_FILE),
so its time-out says where it was.
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import sys

from cudamatrix.stages.process.library_path import library_first


def main() -> None:
    stack_file = os.environ.get("CUDAMATRIX_STACK_FILE")
    after = os.environ.get("CUDAMATRIX_STACK_AFTER")
    if stack_file and after:  # faulthandler keeps the file open for the watchdog
        faulthandler.dump_traceback_later(float(after), file=open(stack_file, "w"))  # noqa: SIM115
    folders = [f for f in os.environ.get("CUDAMATRIX_SITE_DIRS", "").split(os.pathsep) if f]
    library_first(folders, isolated=False)  # the library's own versions win
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
