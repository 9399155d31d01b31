"""Running a compiler the way a shared machine needs: bounded in time, memory and output,
and leaving nothing behind.

A compile is the user's code at work (a template recursion, ``#include "/dev/zero"``),
so every tool runs in a session of its own under a memory limit, writes its
output to a file rather than a pipe (a helper that keeps the pipe open cannot turn a
finished compile into a timeout; 200 MB of output costs no memory), and has its whole
process group killed when it ends or its time runs out (no orphaned ``cicc`` compiling
on at 3 GB). What the cell keeps of the output is its head and tail, with the cut said.

Whether a failure is the compiler's verdict on its inputs or an accident (a signal, the
memory limit) is decided here, from how the process ended and how much memory it took:
only verdicts are worth caching.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from ..cell.cell_environment import CellEnvironment, cell_environment
from ..cell.files import TOOL_OUTPUT_PREFIXES

# What a cell keeps of one tool's output: this much of its beginning and of its end.
KEPT_OUTPUT_BYTES = 256 * 1024
# A compiler writes a cubin, not gigabytes: a file past this ends it (SIGXFSZ).
MAX_FILE_BYTES = 4 << 30
# A compiler driver's own words for a tool it ran that a signal ended (nvcc: "'cicc' died
# due to signal 9"; gcc: "Killed signal terminated program cc1plus"): an accident too.
_SUBTOOL_KILLED = re.compile(r"died due to signal|signal terminated program")
# How the tools say an allocation failed (gcc: "out of memory allocating N bytes"; a C++
# tool: "std::bad_alloc"; Python: MemoryError): under the cell's limit, that limit, not
# the code, decided.
_OUT_OF_MEMORY = re.compile(r"out of memory|std::bad_alloc|Cannot allocate memory|MemoryError",
                            re.IGNORECASE)
# A compiler that came this close to its memory limit was stopped by it, not by the code.
_NEAR_LIMIT = 0.8


# The line that stands where a tool's output was cut (_bounded_text), and how it is found.
_CUT_LINE = "[... {} bytes of output cut ...]"
_CUT = re.compile(r"^\[\.\.\. (\d+) bytes of output cut \.\.\.\]$", re.MULTILINE)
# A line longer than this is handed to a reader in pieces: a tool printing gigabytes with
# no newline must not be held whole in memory.
_READ_LINE_BYTES = 1 << 20


class LineReader(Protocol):
    """What reads a tool's whole output, line by line, before only its head and tail are
    kept: a figure whose meaning depends on lines far before it (ptxas's resource lines
    under the step and kernel they belong to) must be read where nothing is cut yet."""

    def feed(self, line: str) -> None: ...


def decode(data: bytes) -> str:
    """Tool output as text whatever its encoding: an undecodable byte is shown, not fatal.
    Here, below every stage, since the inspect stage reads cuobjdump's output with it and
    the compile stage's parts may not be imported by inspect (compile uses its names)."""
    return data.decode("utf-8", errors="replace")


def cut_bytes(text: str) -> int:
    """How many bytes of a tool's output `text` (as a cell keeps it) lacks: 0 when whole."""
    return sum(int(found.group(1)) for found in _CUT.finditer(text))


@dataclass(frozen=True)
class ToolRun:
    """How one tool run ended: its status, its (bounded) output, and why its failure, if
    any, is not the compiler's verdict on the code (None when it is)."""

    code: int
    output: str
    accident: str | None = None


def _bounded_text(handle: IO[bytes], keep: int) -> str:
    """An open file's text, or its first and last `keep` bytes with how much was cut."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    if size <= 2 * keep:
        return handle.read().decode("utf-8", errors="replace")
    head = handle.read(keep)
    handle.seek(size - keep)
    return (head.decode("utf-8", errors="replace")
            + "\n" + _CUT_LINE.format(size - 2 * keep) + "\n"
            + handle.read().decode("utf-8", errors="replace"))


def _read_whole(handle: IO[bytes], reader: LineReader) -> None:
    """Every line of an open file, from its start, handed to `reader` (decoded leniently)."""
    handle.seek(0)
    while raw := handle.readline(_READ_LINE_BYTES):
        reader.feed(raw.decode("utf-8", errors="replace").rstrip("\r\n"))


# What a stopped cell's record keeps of each tool's output it left, and of how many.
LEFT_OUTPUT_BYTES = 16 * 1024
LEFT_OUTPUT_FILES = 8


def left_output(folders: Iterable[Path]) -> str:
    """What the tools of a worker killed from outside had printed: the output files they
    left in `folders` (run_tool streams to them), oldest first, each bounded, named."""
    found = [path for folder in folders for prefix in TOOL_OUTPUT_PREFIXES
             for path in folder.glob(f"{prefix}*") if path.is_file()]
    found.sort(key=lambda path: path.stat().st_mtime)
    said = [f"--- {path.name} ---\n{read_bounded(path, LEFT_OUTPUT_BYTES).strip()}"
            for path in found[-LEFT_OUTPUT_FILES:]]
    return "\n".join(said)


def read_bounded(path: Path, keep: int = KEPT_OUTPUT_BYTES) -> str:
    """A file's text, bounded as a tool's output is; empty when there is no file."""
    try:
        with path.open("rb") as handle:
            return _bounded_text(handle, keep)
    except FileNotFoundError:
        return ""


# The cell's memory limit is RLIMIT_DATA, the memory a process writes (its heap and its
# private writable mappings), never RLIMIT_AS, the address space it reserves: every CUDA
# process reserves far more than it uses, and torch 2.11 with CUDA 13.0 could not count its
# GPUs under a 7.9 GiB RLIMIT_AS on a lent H200 ("Error 2: out of memory") while under the
# same RLIMIT_DATA it ran and a 12 GiB bytearray was refused
# (bench/evidence/torch-ext/rlimit-h200.txt). A compiler's runaway growth is written memory.
_MEMORY = resource.RLIMIT_DATA


def _limit_child(memory_bytes: int | None) -> None:
    """In the tool's process, before exec: its own limits (it is already in its own session)."""
    if memory_bytes:
        resource.setrlimit(_MEMORY, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))


# The process groups of the tools this process is running now: a cell being stopped
# (SIGTERM from its run) takes them down with it, as they are not in its own group.
_RUNNING: set[int] = set()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_running_tools() -> None:
    """End every tool this process started and all their descendants."""
    for pid in list(_RUNNING):
        _kill_group(pid)


def _peak_rss_bytes() -> int:
    """The largest resident size any waited-for descendant of this process reached."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def run_tool(command: Sequence[str], timeout: float, *, memory_bytes: int | None = None,
             env: CellEnvironment | None = None, cwd: Path | None = None,
             reader: LineReader | None = None) -> ToolRun:
    """Run one compiler; past `timeout` its whole process group is killed and
    TimeoutExpired raised, its `output` the command line and what the tool had printed
    (head and tail). Output is read as bytes and decoded leniently: a compiler
    quoting a Latin-1 source line is still a compiler's verdict. `reader` is handed every
    line of the whole output (stdout's, then stderr's) before it is cut to its head and tail.
    Its environment is `env`, else the cell environment (never the run's whole)."""
    folder = cwd if cwd is not None else Path(tempfile.gettempdir())
    # stdout, then stderr, as separate files: where a tool's own last word is (a script's
    # sys.exit reason on stderr) must not depend on how the two streams were buffered.
    # Named, in the working folder: a worker killed from outside leaves them for its
    # cell's record (left_output); removed when the tool ends.
    stdout_prefix, stderr_prefix = TOOL_OUTPUT_PREFIXES
    with tempfile.NamedTemporaryFile(dir=folder, prefix=stdout_prefix) as out, \
            tempfile.NamedTemporaryFile(dir=folder, prefix=stderr_prefix) as err:
        process = subprocess.Popen(
            list(command), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            env=env if env is not None else cell_environment(), cwd=cwd,
            start_new_session=True,
            # The cell worker runs no threads, so a pre-exec hook is safe here.
            preexec_fn=lambda: _limit_child(memory_bytes))
        _RUNNING.add(process.pid)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            process.wait()
            # What it printed before the limit is where it was (a torch extension's last
            # file compiled): kept, bounded, on the exception the stage is made from.
            printed = (_bounded_text(out, KEPT_OUTPUT_BYTES) + "\n"
                       + _bounded_text(err, KEPT_OUTPUT_BYTES)).strip()
            said = f"$ {shlex.join(command)}\n{printed}".strip()
            raise subprocess.TimeoutExpired(list(command), timeout, output=said) from None
        finally:
            _kill_group(process.pid)  # helpers it left running die with it
            _RUNNING.discard(process.pid)
        if reader is not None:
            _read_whole(out, reader)
            _read_whole(err, reader)
        output = (_bounded_text(out, KEPT_OUTPUT_BYTES) + "\n"
                  + _bounded_text(err, KEPT_OUTPUT_BYTES)).strip()
    accident = None
    if code < 0:  # a crash prints nothing of its own: say which signal ended it
        name = signal.Signals(-code).name
        accident = f"{Path(command[0]).name} was killed by {name}"
        output += f"\nerror: {accident}"
    elif code != 0 and _SUBTOOL_KILLED.search(output):
        accident = f"a tool {Path(command[0]).name} ran was ended by a signal"
    elif code != 0 and memory_bytes and (_OUT_OF_MEMORY.search(output)
                                         or _peak_rss_bytes() >= _NEAR_LIMIT * memory_bytes):
        accident = (f"{Path(command[0]).name} reached the cell's memory limit "
                    f"({memory_bytes / (1 << 30):.1f} GiB)")
        output += f"\nerror: {accident}"
    return ToolRun(code, output.strip(), accident)


def _written_bytes() -> int:
    """What this process has written so far, as RLIMIT_DATA counts it (VmData)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def memory_limit(memory_bytes: int | None) -> Iterator[None]:
    """Bound this process's own growth while an in-process compiler (NVRTC) runs in it:
    `memory_bytes` more than it has written already.

    Only the soft limit moves, and it moves back: the GPU stages after the compile are
    the cell's own to bound as any tool's (_MEMORY says why it is written memory).
    """
    if not memory_bytes:
        yield
        return
    soft, hard = resource.getrlimit(_MEMORY)
    wanted = _written_bytes() + memory_bytes
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(_MEMORY, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(_MEMORY, (soft, hard))
