"""A CUDA-installation-shaped folder of links over a wheel toolkit.

Tools that were written for a classic install look for ``<root>/include``, ``<root>/bin``,
``<root>/nvvm`` and ``<root>/lib64``: clang's ``--cuda-path``, and CuPy 13, which adds
``-I$CUDA_PATH/include`` to every NVRTC compile (and, left alone, picks
``/usr/local/cuda``: another toolkit's headers under this toolkit's NVRTC). The wheels lay
the same files out per package, so the cache gets a folder of links in the classic
layout, made once per purpose and toolkit.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path


def linked_cuda_root(root: Path, include_folders: Sequence[Path],
                     links: Mapping[str, Path], library_folders: Sequence[Path] = ()) -> Path:
    """``root`` with ``include/`` merged from ``include_folders`` (the first folder that has
    a name wins, as ``-I`` order would), ``lib64/`` likewise from ``library_folders`` when
    given, and each of ``links`` (``bin/ptxas``, ``lib64``) pointing at its file or folder.
    Made once: a finished root is returned as it is."""
    if (root / "include").is_dir():
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
                if not link.exists() and not link.is_symlink() and entry.name != "__init__.py":
                    link.symlink_to(entry)
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(target)
    try:
        root.rename(final)
    except OSError:  # another run made it first
        shutil.rmtree(root, ignore_errors=True)
    return final
