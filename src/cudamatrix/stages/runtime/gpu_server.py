"""One GPU's server: ``python -m cudamatrix.stages.runtime.gpu_server SOCKET``.

A CUDA context costs 0.25 s to make, and the driver makes them one after another: with a
process per cell, every GPU stage of a run paid for one (a warm re-run of 60 cells, 15 s
of contexts). This process holds its GPU's primary context for the run (the driver
bindings and NumPy imported once) and performs the load and run stages of the cells it
is handed, one at a time, with the code a cell's own process runs (device.py): load the
module, prepare the inputs, launch, compare, then unload the module and free every
allocation.

Faults still cost one cell. After each cell it asks the context whether it still works
(a synchronize and an allocation: an illegal address, a trap, a device assert leave it
unusable for good) and whether device memory went missing since it started beyond what
the driver reserves once for itself (what this process holds, as NVML counts it: the GPU's
other servers take its free memory too); either, and it answers, then exits: the run starts a
fresh one for the next cell; so does a cell whose module used the device heap (what
a kernel's malloc took stays taken) or changed a limit that will not go back. Whatever a
cell's values raise ends that cell alone, with the exception's last line: the server goes
on. A cell cannot run code of its own here (a library's host
entry keeps its own process), and its module is unloaded and every allocation freed. A
kernel that never returns is stopped from outside at the cell's limit (the server's group is
killed), with every thread's stack written to the cell's folder just before, as a cell's
own process does. Device printf goes to the cell's own output file. The run owns the
server: it dies with the run (PR_SET_PDEATHSIG), even on a SIGKILL of the run.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import socket
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

from ..cell.job import Job
from ..cell.result import StageResult
from ..process.hang import arm_stack_dump
from ..process.hermetic import JIT_CACHE_ENV, keep_the_driver_jit, make_this_process_hermetic
from .worker import die_with_parent

# Device memory the driver may take for itself over a server's life before the server is
# replaced (what it reserves once a module needs it: a printf buffer, local memory).
DRIVER_RESERVES_BYTES = 1 << 30
# Where a cell's device printf lands, in its folder (its own process's output is apart).
GPU_OUTPUT_FILE = "gpu-output.txt"


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr (where device printf lands) into the cell's file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def serve(socket_path: str) -> None:
    from ..device.load_run import GpuSession, load_and_run, raised, uses_device_heap

    session = GpuSession()
    session.warm_up()
    free_at_start = session.free_bytes()
    held_at_start = session.held_bytes()
    limits_at_start = session.limits()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)
    listener.bind(socket_path)
    listener.listen(1)
    # Its GPU's free memory as it starts: what bounds how many servers the GPU is given;
    # what this process holds (-1: NVML cannot say, and the GPU keeps this one server).
    print(json.dumps({"ready": True, "free_bytes": free_at_start, "held_bytes": held_at_start,
                      **session.identity()}),
          flush=True)
    while True:
        connection, _ = listener.accept()
        with connection:
            request = json.loads(_read_line(connection))
            job = Job.from_json(request["job"])
            ptx, cubin = (Path(p) if p else None for p in (request["ptx"], request["cubin"]))
            try:
                with _output_to(job.work / GPU_OUTPUT_FILE), \
                        arm_stack_dump(job.work, float(request["timeout"])):
                    stages = load_and_run(job, ptx, cubin, session=session)
                    faulthandler.cancel_dump_traceback_later()
            except Exception as exc:  # the cell's alone: the server goes on
                faulthandler.cancel_dump_traceback_later()
                stages = [StageResult("load", "error", raised(exc),
                                      traceback.format_exc()[-20_000:])]
            why = session.unusable(free_at_start, DRIVER_RESERVES_BYTES, held_at_start) \
                or session.restore_limits(limits_at_start) \
                or ("the cell used the device heap (malloc, new): what it took stays taken"
                    if uses_device_heap(ptx, cubin) else "")
            connection.sendall(json.dumps({"stages": [s.to_dict() for s in stages],
                                           "ended": why}).encode() + b"\n")
        if why:  # the next cell gets a fresh context, in a fresh process
            os._exit(0)


def main() -> None:
    die_with_parent()
    make_this_process_hermetic()
    keep_the_driver_jit(os.environ.get(JIT_CACHE_ENV))
    serve(sys.argv[1])


if __name__ == "__main__":
    main()
