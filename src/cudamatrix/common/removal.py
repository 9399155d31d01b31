"""Folders a run replaces, moved aside at once and removed while the run goes on; and
the one check that an --out is the tool's to clear.

A run clears its --out's cells/ and artifacts/ and writes its reports over the same names:
`run --out .` in a project removed the project's own artifacts/ and cells/ and overwrote
its report.html. So a folder is cleared only where an earlier run wrote it (its lock, or a
results.json the tool wrote) or where it is empty; any other is refused in one line
before anything is written (`claimed_out`).

A run starts by clearing its --out folder's cells and artifacts from the run before.
Removing a file that holds data is the slow part of a warm run on ext4 (about 0.1 ms a
file, the journal freeing its blocks): 2,329 cell records and 1,013 cells' artifacts took
1.3 s before the first cell began. A rename takes the old folder out of the way in one
step; a thread removes it beside the cells (the kernel's work, not Python's, so it runs
on another core), and the run waits for it only at the end. A folder left there by a run
that was killed is removed by the next.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
import uuid
from pathlib import Path

from ..errors import UserError
from .folders import RUN_LOCK

# Under --out, so a rename never crosses file systems; hidden from artifact uploads.
TRASH = ".removing"
# The record every run, report and merge writes into its --out (record/results.py's
# document, reports/formats.py's file), known by its schema name near its start.
RESULTS_FILE = "results.json"
_OWN_RESULTS = re.compile(rb'"schema"\s*:\s*"cudamatrix-results"')
_RESULTS_HEAD_BYTES = 4096
# What a run leaves in a folder before it writes anything of its own (writable_folder's
# probe, a removal a killed run left): such a folder is still an empty one.
_BOOKKEEPING = (RUN_LOCK, TRASH, ".write-test-")


def earlier_record(out: Path) -> bool:
    """Whether an earlier run of the tool wrote `out`: its lock (every run takes it before
    writing anything) or a results.json whose first bytes name the tool's schema."""
    if (out / RUN_LOCK).is_file():
        return True
    try:
        with (out / RESULTS_FILE).open("rb") as results:
            return _OWN_RESULTS.search(results.read(_RESULTS_HEAD_BYTES)) is not None
    except OSError:
        return False


def others_in(out: Path) -> list[str]:
    """The names in `out` no run of the tool put there, sorted; empty where `out` holds
    only the tool's bookkeeping or is missing."""
    try:
        names = [entry.name for entry in os.scandir(out)]
    except OSError:
        return []
    return sorted(n for n in names if not n.startswith(_BOOKKEEPING))


def claimed_out(out: Path) -> None:
    """Refuse `out` as a run's --out where it holds anything and no earlier run's record:
    the run would remove its cells/ and artifacts/ and write reports over its files. One
    line naming the folder and what is in it (exit status 2); nothing is touched."""
    if earlier_record(out):
        return
    others = others_in(out)
    if others:
        shown = ", ".join(repr(n[:40]) for n in others[:3]) + (
            f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise UserError(f"{out}: the output folder (--out) is not empty ({shown}) and holds "
                        "no earlier cudamatrix run's record; a run clears its cells/ and "
                        "artifacts/ and writes its reports there, so give a new or empty "
                        "folder")


def removed(folder: Path) -> None:
    """`folder` gone, with what it holds; a link or a file there unlinked, never followed;
    nothing there is nothing to do."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink(missing_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def emptied(folder: Path) -> None:
    """`folder` made anew and empty, where a run writes one of its own under --out (a
    cell's folder in artifacts/, a group's shared compile, CuPy's warm-up): whatever was
    there removed first (`removed`). With FolderRemoval, the one way the tool removes what
    is under an --out, so what it removes is always its own folder's."""
    removed(folder)
    folder.mkdir(parents=True)


class FolderRemoval:
    """Removes folders of `out`, a background thread each; `wait()` before the run ends."""

    def __init__(self, out: Path) -> None:
        self.trash = out / TRASH
        self._threads: list[threading.Thread] = []
        if self.trash.is_dir():  # what a killed run left
            for left in self.trash.iterdir():
                self._remove_in_background(left)

    def discard(self, folder: Path) -> None:
        """Take `folder` out of the way now (it no longer exists when this returns) and
        remove its contents in the background; a missing folder is nothing to do."""
        if not folder.is_dir() or folder.is_symlink():  # a link is unlinked, never followed
            folder.unlink(missing_ok=True)
            return
        self.trash.mkdir(exist_ok=True)
        aside = self.trash / f"{folder.name}-{uuid.uuid4().hex[:12]}"
        try:
            os.rename(folder, aside)
        except OSError:  # another file system (a mount): removed here, as before
            shutil.rmtree(folder, ignore_errors=True)
            return
        self._remove_in_background(aside)

    def _remove_in_background(self, folder: Path) -> None:
        thread = threading.Thread(target=shutil.rmtree, args=(folder,),
                                  kwargs={"ignore_errors": True},
                                  name=f"remove {folder.name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def wait(self) -> None:
        """Wait until everything discarded is gone, and the trash folder with it."""
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        with contextlib.suppress(OSError):  # a killed run's leftovers still going
            self.trash.rmdir()
