"""A confined path: a name someone else wrote (a case's `source`, a path its flags or its
frontend's options name, a header a compiler's message names, a file a preprocessor's
line marker names) resolved inside the folders it may name, and nothing else.

Every such name is made a path here and only here (tests/unit/test_confined_paths.py walks
the package for a module that does it around this one): each capability that once made
its own (`source` and `flags` in the case reader, torch-extension's `sources` and
`cxx_flags`, the since-which-arch search's headers, the since-which-release look-up's
header names) let through what another refused, so a case read /dev/zero, compiled
../../outside.cpp, or had the run's own process test /etc/hostname.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

# The kinds of a path-valued case key or frontend option (declarations.Key.path,
# Frontend.path_options), each held to its check here: a file or folder of the case
# (PATHS: `confined` inside the corpus or a [paths] tree), compiler flags whose path
# options name such files (FLAGS), globs inside a build's project (PATTERNS:
# `plain_relative`).
PATHS, FLAGS, PATTERNS = "paths", "flags", "patterns"
# The longest file name and path Linux takes (NAME_MAX, PATH_MAX): a longer one is no file
# (asking for it raises ENAMETOOLONG, not "no such file").
NAME_MAX, PATH_MAX = 255, 4096


class Outside(ValueError):
    """Why a name is refused, said after the name (its reader names the file and key)."""


def case_path(path: str, case_dir: str) -> str:
    """What a path a case writes means: absolute as given, else from the case folder
    (never from the source's folder, nor from where the tool was started). Only after
    `confined` let it through does a stage join it so."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(case_dir, path))


def inside(path: str | Path, folders: Iterable[str | Path]) -> bool:
    """Whether `path`, its links followed, lies in one of `folders` (theirs followed too)."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(folder)) for folder in folders)


def confined(name: str, base: str | Path, folders: Iterable[str | Path],
             called: str = "") -> Path:
    """`name`, relative to `base`, as the path it names, its links followed; Outside where
    it is absolute, longer than a name or path can be, or leads out of every one of
    `folders` (``../..``, a link out), said as `called` names them ("the corpus folder")."""
    if os.path.isabs(name):
        raise Outside("is an absolute path")
    if "\0" in name:
        raise Outside("holds a NUL byte, which no path can")
    if any(len(part.encode(errors="surrogateescape")) > NAME_MAX
           for part in PurePosixPath(name).parts) or len(name) > PATH_MAX:
        raise Outside(f"is longer than a file's name or path can be ({NAME_MAX} bytes a "
                      f"name, {PATH_MAX} a path)")
    kept = [Path(os.path.realpath(folder)) for folder in folders]
    resolved = Path(os.path.realpath(case_path(name, str(base))))
    if not any(resolved.is_relative_to(folder) for folder in kept):
        shown = kept[0] if len(kept) == 1 else ", ".join(map(str, kept))
        raise Outside(f"leads outside {called + ' ' if called else ''}{shown} (to {resolved})")
    return resolved


def plain_relative(name: str) -> bool:
    """Whether `name` is a relative name that climbs nowhere (no ``..``, no absolute part,
    no NUL): what a name read off a compiler's message must be before any folder is
    asked for it, whatever folder that is."""
    if not name or "\0" in name or os.path.isabs(name) or len(name) > PATH_MAX:
        return False
    return ".." not in PurePosixPath(name).parts
