"""Runs a Python case script with its library folders as site directories.

``pip install --target`` folders can carry ``.pth`` files (the CuTe DSL's does),
which Python honours only for site directories, not for PYTHONPATH entries.
"""

from __future__ import annotations

import os
import runpy
import site
import sys


def main() -> None:
    for folder in filter(None, os.environ.get("CUDAMATRIX_SITE_DIRS", "").split(os.pathsep)):
        site.addsitedir(folder)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
