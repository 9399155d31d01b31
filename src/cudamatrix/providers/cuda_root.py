"""A CUDA-installation-shaped folder of links over a wheel toolkit.

Tools that were written for a classic install look for ``<root>/include``, ``<root>/bin``,
``<root>/nvvm`` and ``<root>/lib64``: clang's ``--cuda-path``, and CuPy 13, which adds
``-I$CUDA_PATH/include`` to every NVRTC compile (and, left alone, picks
``/usr/local/cuda``: another toolkit's headers under this toolkit's NVRTC). The wheels lay
the same files out per package, so the cache gets a folder of links in the classic
layout, made once per purpose and toolkit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

# What makes a wheel's include/ a Python package: not a header, never linked into a root.
_PACKAGE_MARKER = "__init__.py"


def _intact(root: Path, include_folders: Sequence[Path], links: Mapping[str, Path]) -> bool:
    """A finished root that still points where this run wants it to and at what exists: a
    root made through another path to the cache (a test's own cache, linked to the shared
    downloads) can outlive that path, and its dangling links would fail every compile."""
    if not (root / "include").is_dir():
        return False
    for name, target in links.items():
        made = root / name
        if not made.exists() or made.resolve() != target.resolve():
            return False
    # Each folder's first entry, as the maker links them: a wheel's __init__.py never is.
    entries = [next((e for e in sorted(f.iterdir()) if e.name != _PACKAGE_MARKER), None)
               for f in include_folders if f.is_dir()]
    return all((root / "include" / e.name).exists() for e in entries if e is not None)


def linked_cuda_root(root: Path, include_folders: Sequence[Path],
                     links: Mapping[str, Path], library_folders: Sequence[Path] = ()) -> Path:
    """``root`` with ``include/`` merged from ``include_folders`` (the first folder that has
    a name wins, as ``-I`` order would), ``lib64/`` likewise from ``library_folders`` when
    given, and each of ``links`` (``bin/ptxas``, ``lib64``) pointing at its file or folder.
    Links point at resolved paths, so the root does not depend on the path through which
    the cache was reached. Made once: a finished root is returned as it is while it is
    intact, and made again when it is not."""
    if _intact(root, include_folders, links):
        return root
    # A folder of this process and thread's own: two makers never share a half-made one.
    final = root
    root = root.with_name(f"{root.name}.partial-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(root, ignore_errors=True)
    (root / "include").mkdir(parents=True)
    merged = {"include": include_folders, "lib64": library_folders}
    for name, folders in merged.items():
        if folders:
            (root / name).mkdir(exist_ok=True)
        for folder in folders:
            for entry in sorted(folder.iterdir()):
                link = root / name / entry.name
                if not link.exists() and not link.is_symlink() and entry.name != _PACKAGE_MARKER:
                    link.symlink_to(entry.resolve())
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(target.resolve())
    if final.exists() and not _intact(final, include_folders, links):
        # A stale root (dangling or foreign links): moved aside first, then removed, so a
        # maker that finished it meanwhile is never half-deleted under a reader.
        stale = final.with_name(f"{final.name}.stale-{os.getpid()}-{threading.get_ident()}")
        with contextlib.suppress(OSError):
            final.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
    try:
        root.rename(final)
    except OSError:  # another run made it first
        shutil.rmtree(root, ignore_errors=True)
    return final
