"""The one check of a folder the tool will write into (`--out` of every command, the
cache): made where it is missing, and written once, so a file, a device, a FIFO, a
dangling link, `file/sub` or `/proc/self` is one line naming it (exit status 2) before any
work is done, never a traceback after it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
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


# What marks a folder the tool writes: a run's --out holds its lock, the cache its
# CACHEDIR.TAG (the convention backup tools skip by, too).
RUN_LOCK = ".cudamatrix.lock"
CACHE_TAG = "CACHEDIR.TAG"
_CACHE_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                   "# The cudamatrix cache: toolkits, libraries and compiled cells, made again "
                   "when removed.\n")


def tag_cache(folder: Path) -> None:
    """Mark `folder` as cudamatrix's cache (a CACHEDIR.TAG), once."""
    tag = folder / CACHE_TAG
    if not tag.exists():
        with contextlib.suppress(OSError):  # a read-only shared cache: only ever read
            tag.write_text(_CACHE_TAG_TEXT)


def written_by_the_tool(folder: str) -> bool:
    """Whether `folder` is one the tool writes (a run's --out, a cache): never an input of
    a compile key or of the up-to-date record, even inside a tree a case reads (a [paths]
    tree at the project's root holds --out: every run changed what the next one read)."""
    return os.path.isfile(os.path.join(folder, RUN_LOCK)) or os.path.isfile(
        os.path.join(folder, CACHE_TAG))


# How deep a folder the tool walks (a case folder, a source tree, a compile's include
# folders): a real project is a few dozen folders deep; 1,100 nested folders were a
# RecursionError in os.walk, and a deeper tree is a hostile one, not a project.
MAX_FOLDER_DEPTH = 128


def walk(folder: Path | str, what: str = "folder") -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk's (root, dirs, names), top down (prune `dirs` in place to skip one), links
    never followed, made with a stack rather than recursion: a folder nested deeper than
    MAX_FOLDER_DEPTH is one line naming it (`what` says whose it is: "case folder"), never
    a RecursionError."""
    top = os.fspath(folder)
    stack: list[tuple[str, int]] = [(top, 0)]
    while stack:
        root, depth = stack.pop()
        if depth > MAX_FOLDER_DEPTH:
            below = os.path.relpath(root, top)
            raise UserError(f"{top!a}: the {what} is nested more than {MAX_FOLDER_DEPTH} "
                            f"folders deep ({below[:60]!a}...); no project is, so it is "
                            "refused")
        dirs: list[str] = []
        names: list[str] = []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    (dirs if is_dir else names).append(entry.name)
        except OSError:
            continue  # as os.walk: a folder that cannot be listed holds nothing to read
        yield root, dirs, names
        stack.extend((os.path.join(root, name), depth + 1) for name in reversed(dirs))
