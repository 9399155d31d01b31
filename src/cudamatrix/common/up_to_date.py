"""Whether a run's results already stand: nothing it read has changed since the last run
into the same --out, and that run asked no compiler, driver or kernel anything.

A warm re-run of the nightly tier (2,329 cells, every compile from the compile cache)
still redoes each cell's bookkeeping: its job and compile key, the cache entry read,
hash-checked and written into the cell's folder, its verdict and record, then the four
reports; about 4 s here, most of it the filesystem creating and removing files. When
none of its inputs changed, every one of those files would come out as it is. So, as
make and ninja do, a run keeps a record beside its reports of everything its results
were made from, as it found it, and a later run with the same record answers at once:

- the command: its arguments and folder, every environment variable but the shell's own
  bookkeeping (``PWD``, ``SHLVL``...), the options they made, Python, the host, the GPU
  probe's answer and the commit;
- the files and folders it read: the tool's own package (its data too), every other
  module the run imported (a dependency upgraded, a frontend plugin edited), the corpus,
  the matrix, the project file, the baseline and history, every folder a compile key
  hashed (a case's include folders), each environment its cells used by its install's
  marker (a toolkit installed again; not the rest of the cache, which other runs share:
  their toolkits, and compile cache entries, which are what their keys say), each folder
  of ``PATH`` and every program found there (a host compiler installed or upgraded),
  Docker's socket;
- what it wrote: every file under --out.

Each path is compared by its stat (inode, size, mtime and ctime, so a `touch`, an edit
that keeps the size, a file replaced under the same name all count); a folder by that of
every file and folder under it (``__pycache__`` and ``.git`` left out). Two kinds are
compared otherwise, where a stat would change with nothing changed: the tool's code and
the modules it imported by their bytes (``nox -s matrix`` reinstalls the tool each time),
and PATH's folders by the names in them (pip rewrites its own scripts there; a program
installed or removed changes the names, and each program found is watched by its stat).
A change anywhere runs the run; the answer says what changed. Only a run that a re-run
would repeat without asking anything new records itself: one whose every compile either
came from the compile cache or was kept there (a re-run takes each from the cache as it
is, so a cold run's verdicts stand as well as a warm one's). A compile the cache does not
keep (a timeout, a crash, the memory limit; a build, a CuPy compile), a GPU stage, an
environment that failed, a cell the time limit never started, --prebuilt, containers
(their images are not watched) or a disabled compile cache leave no record.
``--always-run`` ignores the record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from . import recorded
from .files import write_atomic
from .folders import written_by_the_tool

RECORD = ".cudamatrix-run.json"
# Where a Docker engine answers by default ($DOCKER_HOST, when set, is in the environment).
DOCKER_SOCKET = "/var/run/docker.sock"
RECORD_FORMAT = 1
EVERYTHING = -1  # a watch's depth: every file and folder under it
# A folder by the names in it alone: a folder of PATH, where a program installed or removed
# counts and pip rewriting its own scripts does not (each program found is watched itself).
NAMES = -2
# A file, or every file under a folder, by its bytes: the tool's own code and the modules
# it imported, which a reinstall (`nox -s matrix` installs the tool each time) rewrites
# byte for byte.
CONTENT = -3
_BY_KIND = (NAMES, CONTENT)
# The shell's bookkeeping, which differs from one prompt to the next and decides nothing.
VOLATILE_ENV = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES"})
_SKIPPED_FOLDERS = frozenset({"__pycache__", ".git"})
# What a run keeps in --out besides its results: the lock, a removal in progress.
_NOT_OUTPUTS = frozenset({RECORD, ".cudamatrix.lock", ".removing", ".write-test"})


class InputLedger:
    """What one run read besides its command line, and why a re-run could not answer from
    its record (it asked a compiler, a driver or a kernel something). The run command makes
    one per run and hands it down: to the runner, to the environments and through
    `ProviderSetting` to its toolkit provider, each watching what decided something."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.watched: dict[str, int] = {}
        self.refusals: list[str] = []
        # Programs found on PATH: their probes are remembered for the process's life
        # (functools.cache), so every later run of the process rests on them too.
        self.programs: dict[str, int] = {}

    def start(self) -> None:
        """A new run: nothing read yet."""
        with self._lock:
            self.watched, self.refusals = {}, []

    def watch(self, path: str | os.PathLike[str], depth: int = EVERYTHING) -> None:
        """`path` decided something in this run: the file, or a folder to `depth` levels."""
        with self._lock:
            _deepest(self.watched, os.path.abspath(path), depth)

    def watch_program(self, path: str) -> None:
        """A program found on PATH: each link on the way to it and the file itself."""
        current = os.path.abspath(path)
        with self._lock:
            for _ in range(40):
                _deepest(self.programs, current, 0)
                if not os.path.islink(current):
                    return
                current = os.path.join(os.path.dirname(current), os.readlink(current))

    def inputs(self) -> dict[str, int]:
        """Every path this run rests on, with how deep to look."""
        with self._lock:
            merged = dict(self.programs)
            for path, depth in self.watched.items():
                _deepest(merged, path, depth)
            return merged

    def refuse(self, reason: str) -> None:
        """A re-run would have to ask again (a compile, a GPU stage): no record."""
        with self._lock:
            if len(self.refusals) < 20:
                self.refusals.append(reason)


def _deepest(watched: dict[str, int], path: str, depth: int) -> None:
    """Keep the strictest watch of `path`: a stat walk over one by names or content, the
    deeper of two walks."""
    known = watched.get(path)
    if known is None or (known in _BY_KIND and depth not in _BY_KIND):
        watched[path] = depth
    elif depth in _BY_KIND or known in _BY_KIND:
        return
    elif known != EVERYTHING and (depth == EVERYTHING or depth > known):
        watched[path] = depth



def _entry_line(path: str, info: os.stat_result) -> str:
    line = (f"{path}\0{info.st_mode:o}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"
            f"\0{info.st_ctime_ns}")
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            line += "\0" + os.readlink(path)
    return line


def _walk(path: str, depth: int, lines: list[str], skip: frozenset[str] = frozenset()) -> None:
    """Every entry under the folder `path` (not the folder's own times: a folder a run
    made inside it, a __pycache__, changes those and nothing else)."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        lines.append(f"{path}\0unreadable {exc.errno}")
        return
    for entry in entries:
        if entry.name in skip or entry.name in _SKIPPED_FOLDERS:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and written_by_the_tool(entry.path):
            continue  # a run's --out or a cache inside a watched tree: the tool's own
        lines.append(_entry_line(entry.path, info))
        if depth != 1 and stat.S_ISDIR(info.st_mode):
            _walk(entry.path, depth - 1 if depth > 0 else EVERYTHING, lines)


def path_lines(path: str, depth: int) -> list[str]:
    """The stat of `path` (a file, a link, or a folder and what is under it to `depth`),
    a line per entry."""
    lines: list[str] = []
    try:
        info = os.lstat(path)
    except OSError:
        lines.append(f"{path}\0absent")
    else:
        if depth == NAMES and stat.S_ISDIR(info.st_mode):
            lines.append(f"{path}\0names")
            with contextlib.suppress(OSError):
                lines.extend(os.path.join(path, name) for name in sorted(os.listdir(path)))
        elif depth == CONTENT:
            _contents(path, lines)
        elif stat.S_ISLNK(info.st_mode) and depth != 0 and os.path.isdir(path):
            # A folder by link (a cache sharing another's downloads): the link and the
            # folder it names.
            lines.append(_entry_line(path, info))
            lines.extend(path_lines(os.path.realpath(path), depth)[1:])
        elif stat.S_ISDIR(info.st_mode) and depth != 0:
            lines.append(f"{path}\0folder {info.st_ino}")
            _walk(path, depth, lines)
        else:
            lines.append(_entry_line(path, info))
    return lines


def _contents(path: str, lines: list[str]) -> None:
    """A file by its bytes (a link by where it points), a folder by every file under it."""
    if os.path.islink(path):
        lines.append(f"{path}\0link {os.readlink(path)}")
    elif os.path.isdir(path):
        lines.append(f"{path}\0folder")
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            lines.append(f"{path}\0unreadable {exc.errno}")
            return
        for name in names:
            inner = os.path.join(path, name)
            if name not in _SKIPPED_FOLDERS and not (os.path.isdir(inner)
                                                     and written_by_the_tool(inner)):
                _contents(inner, lines)
    else:
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):  # a device or a FIFO: read forever, or block
                lines.append(f"{path}\0special {info.st_mode:o} {info.st_rdev}")
                return
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            lines.append(f"{path}\0{digest.hexdigest()}")
        except OSError as exc:
            lines.append(f"{path}\0unreadable {exc.errno}")


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _first_change(before: list[str], now: list[str]) -> str:
    """The first path whose entry differs between two listings of one folder (a file,
    rather than the folder whose times its creation changed)."""
    old, new = set(before), set(now)
    changed = sorted({line.split("\0", 1)[0] for line in old ^ new})
    inner = [p for p in changed if not any(q.startswith(p + os.sep) for q in changed)]
    return inner[0] if inner else ""


def outputs_digest(out: Path) -> str:
    """Every file and folder the run left in `out` (not the record, the lock)."""
    lines: list[str] = []
    _walk(str(out), EVERYTHING, lines, _NOT_OUTPUTS)
    return _digest(lines)


def loaded_module_files() -> list[str]:
    """The file of every module this process imported from outside Python's own library:
    the tool's dependencies and any frontend plugin; their code made the results."""
    stdlib = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}
    files = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        real = os.path.realpath(file)
        if any(real.startswith(root + os.sep + "lib" + os.sep + "python") and
               "site-packages" not in real for root in stdlib):
            continue
        files.append(file)
    return sorted(set(files))


def command_parts(arguments: str, options: str, device: Mapping[str, object],
                  revision: str) -> dict[str, str]:
    """The run's command as digests by part, so an answer can say which part changed."""
    environment = {k: v for k, v in os.environ.items() if k not in VOLATILE_ENV}
    parts: dict[str, object] = {
        "command line": [os.getcwd(), arguments],
        "environment": sorted(environment.items()),
        "options": options,
        "Python and host": [sys.version, sys.executable, os.uname().nodename, os.cpu_count()],
        "GPU": sorted((k, str(v)) for k, v in device.items()),
        "commit": revision,
    }
    return {name: hashlib.sha256(json.dumps(value).encode()).hexdigest()
            for name, value in parts.items()}


@dataclass(frozen=True)
class RunRecord:
    """What a run was made from (by digest) and what it said, kept in --out."""

    command: dict[str, str]
    inputs: dict[str, str]  # watched path -> its digest
    depths: dict[str, int]
    listings: dict[str, list[str]]  # a watched folder's entries, to say which one changed
    outputs: str
    status: int
    said: str  # what the run printed after its cells: the summary, the reports
    finished: str
    cells: int

    def to_dict(self) -> dict[str, object]:
        return {"format": RECORD_FORMAT, **asdict(self)}


def forget(out: Path) -> None:
    """A run begins writing `out`: the record of the last one no longer holds."""
    with contextlib.suppress(FileNotFoundError):
        (out / RECORD).unlink()


def record_run(out: Path, command: dict[str, str], watched: Mapping[str, int], status: int,
               said: str, finished: str, cells: int) -> RunRecord:
    """Keep what the finished run was made from and said, for the next run to compare."""
    listed = {p: path_lines(p, d) for p, d in sorted(watched.items())}
    record = RunRecord(command=command,
                       inputs={p: _digest(lines) for p, lines in listed.items()},
                       depths=dict(sorted(watched.items())),
                       listings={p: lines for p, lines in listed.items() if len(lines) > 1},
                       outputs=outputs_digest(out),
                       status=status, said=said, finished=finished, cells=cells)
    write_atomic(out / RECORD, json.dumps(record.to_dict()))
    return record


def record_refusals(out: Path, reasons: Sequence[str]) -> None:
    """Keep why the finished run cannot stand for the next one (a GPU stage, a compile not
    kept, a container): the next run says so on its first line, not silently runs."""
    write_atomic(out / RECORD, json.dumps({"format": RECORD_FORMAT,
                                           "refused": [str(r)[:200] for r in reasons[:20]]}))


def refusals(out: Path) -> list[str]:
    """Why the last run into `out` could not stand for this one (record_refusals); empty
    where it left a record or none."""
    try:
        data = recorded.read_json(out / RECORD, 1 << 20)
    except (ValueError, TypeError, OSError):
        return []
    said = data.get("refused") if isinstance(data, dict) else None
    return [r for r in said if isinstance(r, str)] if isinstance(said, list) else []


def _read(out: Path) -> RunRecord | None:
    """The last run's record, read by type as every record is; one that does not read (a
    damaged file, another format, a field of another type, no inputs at all) is ignored:
    the run runs, it is never trusted."""
    try:
        data = recorded.read_json(out / RECORD, 256 << 20)
        if not isinstance(data, dict) or data.pop("format", None) != RECORD_FORMAT:
            return None
        record = RunRecord(
            command=_strings(data["command"]), inputs=_strings(data["inputs"]),
            depths=_whole_numbers(data["depths"]),
            listings={str(k): _texts(v) for k, v in _table(data["listings"]).items()},
            outputs=recorded.text(data, "outputs"), status=int(recorded.number(data, "status")),
            said=recorded.text(data, "said"), finished=recorded.text(data, "finished"),
            cells=int(recorded.number(data, "cells")))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not record.inputs or record.status not in (0, 1) or record.cells < 0 \
            or not set(record.depths) <= set(record.inputs):
        return None
    return record


def _table(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    return value


def _strings(value: object) -> dict[str, str]:
    table = _table(value)
    if not all(isinstance(v, str) for v in table.values()):
        raise TypeError("expected strings")
    return {str(k): str(v) for k, v in table.items()}


def _whole_numbers(value: object) -> dict[str, int]:
    table = _table(value)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in table.values()):
        raise TypeError("expected whole numbers")
    return {str(k): int(v) for k, v in table.items()}  # type: ignore[call-overload]


def _texts(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return list(value)


def standing_record(out: Path, command: Mapping[str, str]) -> tuple[RunRecord | None, str]:
    """The last run's record where everything it was made from is as it was, or why not
    (None and "" where there is no record)."""
    record = _read(out)
    if record is None:
        return None, ""
    changed = [name for name, digest in command.items() if record.command.get(name) != digest]
    if changed or set(record.command) != set(command):
        return None, f"its {' and '.join(changed) or 'command'} changed"
    for path, digest in record.inputs.items():
        lines = path_lines(path, record.depths.get(path, EVERYTHING))
        if _digest(lines) != digest:
            return None, f"{_first_change(record.listings.get(path, []), lines) or path} changed"
    if outputs_digest(out) != record.outputs:
        return None, f"a file in {out} changed"
    return record, ""
