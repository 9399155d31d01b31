"""Where a cell's Python finds a library environment's packages.

A library installed for the matrix (``pip install --target``, with its dependencies)
must be what the cell imports: its folders go first. For a cell that imports the library
in the worker itself (CuPy), this Python's own site-packages then go away altogether:
otherwise a package the library did not ask for is found beside the versions it pinned
and breaks its import. CuPy 13 pins NumPy 1.x, and its ``cupyx`` imports SciPy when one
is importable: a GPU image's SciPy, built for NumPy 2, fails there with
``AttributeError: module 'numpy' has no attribute 'long'``.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Sequence


def _host_site_packages() -> set[str]:
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return {os.path.realpath(f) for f in folders}


def library_first(folders: Sequence[str], *, isolated: bool) -> None:
    """Put the library's folders (as site directories: their .pth files count) before
    everything else on sys.path; with ``isolated``, drop this Python's site-packages.
    Modules already imported (the tool's own) stay loaded either way."""
    if not folders:
        return
    before = list(sys.path)
    for folder in folders:
        site.addsitedir(folder)
    added = [p for p in sys.path if p not in before]
    host = _host_site_packages() if isolated else set()
    sys.path[:] = added + [p for p in before if os.path.realpath(p) not in host]
