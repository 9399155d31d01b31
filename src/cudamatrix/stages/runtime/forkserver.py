"""A warm cell-worker parent: ``python -m cudamatrix.stages.runtime.forkserver SOCKET``.

Starting Python, importing the stages and loading a toolkit's NVRTC cost more than
a small kernel's whole compile; over a tier of cells that is most of the tool's
overhead. This server does that once per toolkit environment and forks one child
per cell. Each child is still a process of its own, in a process group of its own,
so a crash, a hang or a kill costs that cell alone, exactly as with a fresh worker.

Protocol, one UNIX-socket connection per cell: the run sends the job file's path and
a newline; the server answers ``<pid>\\n`` once the child exists and ``<status>\\n`` when
it has ended (a negative status is the signal that ended it). The child writes its
stages to the cell's folder like any worker, and its stdout and stderr to
``output.log`` there.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import selectors
import signal
import socket
import sys
import traceback
from pathlib import Path

from ..frontends import registered
from ..process.limits import MAX_FILE_BYTES
from . import worker

OUTPUT_FILE = "output.log"


def _child(job_file: str, server: int) -> int:
    """The cell, in the forked child: own group, output to a file, stages to its folder."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    worker.die_with_parent(server)  # the server is this cell's parent
    # Device printf and library chatter go to a file: a bounded one.
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    folder = Path(job_file).parent
    log = os.open(folder / OUTPUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        worker.run_job_file(job_file)
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _preload() -> None:
    """Load the toolkit's NVRTC (named by the environment) before forking."""
    library = os.environ.get("CUDAMATRIX_PRELOAD")
    if library:
        with contextlib.suppress(OSError):
            ctypes.CDLL(library)


def serve(path: str) -> None:
    worker.die_with_parent()
    _preload()
    registered()  # every frontend's entry point loaded once, not in every forked cell
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    reaper_r, reaper_w = os.pipe()
    os.set_blocking(reaper_w, False)
    signal.set_wakeup_fd(reaper_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector.register(reaper_r, selectors.EVENT_READ)
    server_pid = os.getpid()
    print("ready", flush=True)
    while True:
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is server:
                connection, _ = server.accept()
                job_file = connection.makefile("r").readline().strip()
                pid = os.fork()
                if pid == 0:
                    server.close()
                    connection.close()
                    os._exit(_child(job_file, server_pid))
                children[pid] = connection
                connection.sendall(f"{pid}\n".encode())
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(reaper_r, 512)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            ended = children.pop(pid, None)
            if ended is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) \
                    else os.WEXITSTATUS(status)
                with contextlib.suppress(OSError):
                    ended.sendall(f"{code}\n".encode())
                ended.close()


if __name__ == "__main__":
    serve(sys.argv[1])
