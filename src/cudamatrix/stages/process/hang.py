"""Where a cell was when its time ran out: the stage it had entered and its Python stack.

A hang is evidence like any other (CuPy's Jitify warm-up, a kernel that never returns),
so a stopped cell must say more than "timeout". The worker notes each stage as it enters
it, and arms faulthandler's watchdog to write every thread's Python stack just before the
limit: the watchdog is a C thread, so it writes even while the main thread is stuck
inside a C library that holds no GIL (NVRTC, the driver). The orchestrator, which
stops the cell, reads both back from the cell's folder.
"""

from __future__ import annotations

import faulthandler
import re
from pathlib import Path
from typing import IO

from ..cell.files import SCRIPT_STACK_FILE, STACK_FILE, STAGE_FILE
from ..cell.result import STAGE_NAMES, Stage, StageResult
from .limits import read_bounded

# A case script runs in a process of its own (pyscript.py): it writes its own stack here.
# The watchdog fires this long before the cell's limit, so the stack is written before
# any executor stops the process (a container's exec ends at the limit itself).
STACK_LEAD_S = 2.0
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def enter_stage(work: Path, stage: str) -> None:
    """Note the stage the cell is entering (compile, inspect, load, run)."""
    (work / STAGE_FILE).write_text(stage)


def arm_stack_dump(work: Path, timeout_s: float) -> IO[str]:
    """Have every thread's stack written to the cell's folder just before its limit.
    The returned file must stay open for as long as the cell runs."""
    handle = (work / STACK_FILE).open("w")
    faulthandler.dump_traceback_later(max(1.0, timeout_s - STACK_LEAD_S), file=handle)
    return handle


def stage_entered(work: Path, default: Stage = "compile") -> Stage:
    try:
        stage = (work / STAGE_FILE).read_text().strip()
    except OSError:
        return default
    return next((s for s in STAGE_NAMES if s == stage), default)


def innermost_frame(stack: str) -> str:
    """``file:line in function`` of the thread that ran the cell, most recent call first:
    the thread whose frames reach the worker's entry point, else the first thread shown."""
    threads: list[list[str]] = []
    for line in stack.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            threads.append([])
        elif threads and _FRAME.match(line):
            threads[-1].append(line)
    if not threads:
        return ""
    worker = next((t for t in threads if any("run_job_file" in f for f in t)), threads[0])
    if not worker:
        return ""
    match = _FRAME.match(worker[0])
    assert match is not None
    return f"{Path(match['file']).name}:{match['line']} in {match['func']}"


def stack_of(work: Path) -> str:
    return read_bounded(work / STACK_FILE).strip()


# What a stopped cell's message says raises its limit: a limit met with no way out named
# sent a user to the source (a torch extension's 300 s, met on a loaded laptop).
RAISE_LIMIT = "--cell-timeout, or the case's `timeout`, raises it"


def tool_timed_out(work: Path, timeout_s: float, printed: str = "",
                   seconds: float = 0.0) -> StageResult:
    """A compiler or case script the worker ran went past the cell's limit: where a
    script was, from the stack its own watchdog wrote (compilers have no Python stack),
    what the tool had printed by then (`printed`, its command line first: the last file it
    compiled is where it was) and how long the stage ran (it said 0.0 s and an empty log before)."""
    stack = read_bounded(work / SCRIPT_STACK_FILE).strip()
    where = innermost_frame(stack)
    message = f"compiler ran past the cell's {timeout_s:.0f} s limit ({RAISE_LIMIT})"
    if where:
        message += f"; it was in {where}"
    log = "\n".join(part for part in (printed.strip(), stack) if part)
    return StageResult(stage_entered(work), "timeout", message, log, round(seconds, 3),
                       details={"limit_s": round(timeout_s, 1),
                                **({"stopped_in": where} if where else {})})
