"""The files a compile can read through its ``#include`` lines, found before it runs.

The compile cache keys a compile by every file it could read. A case's folder and the
folders its ``-I`` flags name are hashed whole, and the toolkit's and a library's
folders are stood for by their package versions; but a source reaches further than
those folders as C++ lets it: ``#include "../common/h.h"``, a folder reached through a
link, a header found beside another header that was itself found elsewhere. Missing
one of those, an edit there was served the verdict the old header got.

So each include line is followed the way the compilers search (the including file's own
folder first for ``"..."``, then every ``-I`` folder, the case folder as NVRTC is given
it, the toolkit's and the library's folders) and every file found outside the toolkit
and library folders is read for its own include lines, transitively. The search is wider
than any one compiler's: every folder that holds the name counts, not only the first, and
lines under an ``#if`` that is false count too; a wider key recompiles more often, never
serves a stale verdict. A quoted name found nowhere is kept as a name: the file appearing
later changes the key. What no reading of the text can follow (``#include MACRO``) is
what the case folder and its ``-I`` folders, hashed whole, are for.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

# `#include "x"`, `#include <x>` and GCC's `#include_next`, as a preprocessor line.
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include(?:_next)?[ \t]*([<"])([^>"\r\n]+)[>"]',
                      re.MULTILINE)
# A header larger than this is read for its first bytes only (generated tables).
_MAX_SCANNED_BYTES = 8 << 20
# How many files one compile's scan follows at most: a runaway tree is still bounded.
_MAX_FILES = 20_000


@functools.lru_cache(maxsize=65536)
def _include_lines(path: str, identity: tuple[int, int, int]) -> tuple[tuple[bool, str], ...]:
    """The include lines of a file as (quoted, name), remembered while its stat holds."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(_MAX_SCANNED_BYTES)
    except OSError:
        return ()
    return tuple((kind == b'"', name.decode("utf-8", "replace").strip())
                 for kind, name in _INCLUDE.findall(text))


def _lines_of(path: str) -> tuple[tuple[bool, str], ...]:
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return _include_lines(path, (info.st_ino, info.st_size, info.st_mtime_ns))


@dataclass(frozen=True)
class IncludedFiles:
    """What a compile's include lines reach: `files`, the real path of every file outside
    the toolkit and library folders; `unresolved`, each quoted name found nowhere, and
    `absent`, the paths where it was looked for (one appearing there changes the compile)."""

    files: tuple[str, ...]
    unresolved: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def included_files(sources: Sequence[str], search: Sequence[str],
                   stood_for: Sequence[str]) -> IncludedFiles:
    """Follow the include lines of `sources` through `search` (the ``-I`` folders in
    order, then the toolkit's and library's); files under `stood_for` (the toolkit's and
    library's folders, known by their versions) end the walk there and are not listed."""
    fixed = [os.path.realpath(f) for f in stood_for]
    folders = [f for f in dict.fromkeys(search) if os.path.isdir(f)]
    found: dict[str, None] = {}
    unresolved: dict[str, None] = {}
    absent: dict[str, None] = {}
    todo = [os.path.abspath(s) for s in sources]
    seen: set[str] = set()
    while todo and len(seen) < _MAX_FILES:
        current = todo.pop()
        real = os.path.realpath(current)
        if real in seen:
            continue
        seen.add(real)
        if _under(real, fixed):
            continue
        found[real] = None
        here = os.path.dirname(current)  # as the compiler opened it: a link's own folder
        for quoted, name in _lines_of(current):
            candidates = [os.path.join(here, name)] if quoted else []
            candidates += [os.path.join(folder, name) for folder in folders]
            hits = [c for c in candidates if os.path.isfile(c)]
            if not hits and quoted:
                unresolved[name] = None
                absent.update(dict.fromkeys(os.path.abspath(c) for c in candidates))
            todo.extend(hits)
    return IncludedFiles(tuple(sorted(found)), tuple(sorted(unresolved)), tuple(sorted(absent)))
