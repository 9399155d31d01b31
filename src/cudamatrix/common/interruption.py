"""A run stopped by Ctrl-C or a cancelled CI job, as each of its threads sees it, and the
processes that prepare its environments, which the run stops itself.

A terminal's Ctrl-C, `timeout`, and a CI runner cancelling a job signal the run's whole
process group. pip, dpkg-deb or git preparing an environment died of it while the run's
main thread was still on its way to the interrupt, and its exit was taken for the
environment's failure: every cell waiting for that environment was saved as an error
("pip could not install ...: Installing collected packages") that `--resume` then kept.
Here a preparation's process runs in a session of its own, so the signal reaches the run
alone; the run marks itself interrupted, then stops those processes, and a preparation
that ends once the run is interrupted raises KeyboardInterrupt, never a failure.

The run's --run-timeout stops them the same way: with an index that never answers, pip
preparing a toolkit and the since-which-release look-up of a failed compile each ran on for
minutes past a 20 s limit, and the run wrote no results.json before CI cancelled its job.
At the run's deadline each preparation still running is stopped, none starts after it, one
that ends after it raises RunOutOfTime, and a request the run makes itself waits no longer
than the time left (`time_left`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RunOutOfTime

_interrupted = False
_running: set[subprocess.Popen[Any]] = set()
_running_lock = threading.Lock()
# The run's --run-timeout: its length and when it ends (time.monotonic), and the timer that
# stops the preparations then; None outside a run with a limit.
_limit_s: float | None = None
_deadline: float | None = None
_timer: threading.Timer | None = None

# What a preparation runs first: it dies with the run (SIGKILL when the thread that started
# it, which waits for it, is gone: the run killed, its terminal hung up), as a cell's worker
# does, since the run's group signal no longer reaches it; then it becomes the command.
_WITH_THE_RUN = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL\n"
    "except (OSError, AttributeError):\n"
    "    pass  # not Linux: the run's own stop is all there is\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)  # the run died before the signal was set\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:  # as the shell says it\n"
    "    sys.stderr.write(f'{sys.argv[2]}: {exc.strerror}\\n')\n"
    "    os._exit(127)\n")


def interrupt() -> None:
    """The run is interrupted: said from a signal handler, so a flag and nothing that takes
    a lock (the handler runs between two bytecodes of a main thread that may hold it)."""
    global _interrupted
    _interrupted = True


def interrupted() -> bool:
    return _interrupted


def start_run(run_timeout: float | None = None, started: float | None = None) -> None:
    """A run starts uninterrupted (a process may make several runs: the tests do); with a
    `run_timeout`, its preparations are stopped that many seconds after `started`
    (time.monotonic, default now), as an interrupt stops them."""
    global _interrupted, _limit_s, _deadline, _timer
    _interrupted = False
    end_run()
    if run_timeout:
        begun = time.monotonic() if started is None else started
        _limit_s, _deadline = run_timeout, begun + run_timeout
        _timer = threading.Timer(max(0.0, _deadline - time.monotonic()), stop_preparations)
        _timer.daemon = True
        _timer.name = "run-timeout"
        _timer.start()


def end_run() -> None:
    """The run is over: its deadline no longer stops anything this process does."""
    global _limit_s, _deadline, _timer
    if _timer is not None:
        _timer.cancel()
    _limit_s = _deadline = _timer = None


def out_of_time() -> bool:
    """Whether the run's --run-timeout is spent."""
    return _deadline is not None and time.monotonic() >= _deadline


def time_left(timeout: float) -> float:
    """`timeout`, cut to what is left of the run's --run-timeout; RunOutOfTime where
    nothing is: a request the run makes (an index page, a wheel's bytes) ends with it."""
    if _deadline is None or _limit_s is None:
        return timeout
    left = _deadline - time.monotonic()
    if left <= 0:
        raise RunOutOfTime(_limit_s)
    return min(timeout, left)


def stop_if_out_of_time() -> None:
    """RunOutOfTime where the run's limit is spent: what a preparation ending now did is
    the limit's doing (it was stopped), never its environment's failure."""
    if out_of_time() and _limit_s is not None:
        raise RunOutOfTime(_limit_s)


def stop_preparations() -> None:
    """Each preparation process still running, stopped with its group (pip's own
    children too): the run was interrupted, and a download must not hold its exit."""
    with _running_lock:
        running = list(_running)
    for process in running:
        signal_group(process, signal.SIGTERM)


def signal_group(process: subprocess.Popen[Any], signum: int) -> None:
    """`signum` to a preparation's whole group (its session: pip's own children too), where
    it still runs."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


@contextlib.contextmanager
def preparation_process(command: Sequence[str], **options: Any
                        ) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(command, **options)` for an environment's preparation, in a session
    of its own and known to `stop_preparations`. None starts once the run is interrupted
    or its --run-timeout is spent, and one that ends after raises KeyboardInterrupt or
    RunOutOfTime: its exit is the interrupt's or the limit's."""
    if _interrupted:
        raise KeyboardInterrupt
    stop_if_out_of_time()
    with subprocess.Popen([sys.executable, "-c", _WITH_THE_RUN, str(os.getpid()), *command],
                          start_new_session=True, **options) as process:
        with _running_lock:
            _running.add(process)
        try:
            if interrupted() or out_of_time():  # after stop_preparations had looked
                signal_group(process, signal.SIGTERM)
            yield process
        finally:
            with _running_lock:
                _running.discard(process)
            if process.poll() is None:  # left running by an error of the caller's
                signal_group(process, signal.SIGKILL)
    if _interrupted:
        raise KeyboardInterrupt
    stop_if_out_of_time()


def run_preparation(command: Sequence[str], *, timeout: float | None = None,
                    env: Mapping[str, str] | None = None, cwd: Path | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(command, capture_output=True, text=True)` for a preparation (see
    `preparation_process`); past `timeout`, its group is killed and TimeoutExpired raised."""
    with preparation_process(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(env) if env is not None else None,
                             cwd=cwd) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.communicate()
            raise
    return subprocess.CompletedProcess(list(command), process.returncode, out, err)
