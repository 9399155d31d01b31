"""The GPUs of this machine, servers for each (stages/runtime/gpu_server.py), and which cell
goes to which.

Every GPU the driver sees, as `CUDA_VISIBLE_DEVICES` names them, gets servers that each own
a context of it, one to start with and more while cells wait (a PTX load's JIT is CPU work
in the server's process: with one server, 54 JIT loads of a cold run went one at a time
while 15 cores waited); a cell's load and run stages go to a free one, preferring a GPU on
which the cell's own arch runs natively (its SASS, not a JIT of its PTX), so a machine
with an H100 and an A100 sends sm_90a cells to the H100 and sm_80 cells to either. A GPU
that cannot start a server (busy, broken) is said once and left out. A server that ended
(a sticky fault, a crash, a cell past its limit) is started again for the next cell.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...common.versions import Arch, sass_runs_on
from ...stages.cell.cell_environment import CellEnvironment, cell_environment
from ...stages.cell.job import Job
from ...stages.cell.result import StageResult
from ...stages.process.hang import stage_entered
from ...stages.process.hermetic import JIT_CACHE_ENV
from ...stages.process.limits import read_bounded
from ...stages.runtime.gpu_server import GPU_OUTPUT_FILE
from ..gpu import initialised_driver
from .outcome import timed_out, with_process_output

# A server gets this long past a cell's limit to answer (it writes the cell's stack at the
# limit itself); then its process group is killed.
SERVER_GRACE_S = 3.0
START_TIMEOUT_S = 120.0
# What one more server may take of its GPU's memory (its context is a few hundred MiB, the
# buffers of the cell it serves more), and the share of the GPU's free memory left to the
# cells that run GPU work in their own processes (CuPy, a build's test) and to the driver.
SLOT_BYTES = 1 << 30
MEMORY_MARGIN = 0.25
# A wait for a GPU server shorter than this is not said (a lock taken, no queue).
GPU_WAIT_SAID_S = 0.05


@dataclass(frozen=True)
class Gpu:
    """One GPU as the driver names it: its index among the visible ones, its UUID (what
    CUDA_VISIBLE_DEVICES takes), its name and arch."""

    index: int
    uuid: str
    name: str
    arch: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "uuid": self.uuid, "name": self.name, "arch": self.arch}


def visible_gpus() -> list[Gpu]:
    """The GPUs this process may use, in CUDA's order (CUDA_VISIBLE_DEVICES honoured)."""
    cu, _ = initialised_driver()
    if cu is None:
        return []
    status, count = cu.cuDeviceGetCount()
    if status != cu.CUresult.CUDA_SUCCESS:
        return []
    found = []
    attribute = cu.CUdevice_attribute
    for index in range(count):
        _, device = cu.cuDeviceGet(index)
        _, raw = cu.cuDeviceGetName(96, device)
        _, uuid = cu.cuDeviceGetUuid(device)
        _, major = cu.cuDeviceGetAttribute(
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
        _, minor = cu.cuDeviceGetAttribute(
            attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
        text = bytes(uuid.bytes).hex()
        found.append(Gpu(index, "GPU-" + "-".join((text[:8], text[8:12], text[12:16],
                                                    text[16:20], text[20:])),
                         raw.split(b"\0")[0].decode(), f"sm_{major}{minor}"))
    return found


class GpuServer:
    """One GPU's server process, started on first use and again after it ended."""

    # Whether this server reads what its own process holds on the GPU (NVML's per-process
    # figure, the ready line's held_bytes >= 0); None until it has started once.
    own_memory: bool | None = None

    def __init__(self, gpu: Gpu, folder: Path, env: CellEnvironment,
                 jit_cache: Path | None = None, slot: int = 0) -> None:
        # The workers' cell environment, and what this server adds to it.
        self.gpu, self.env = gpu, env
        self.variables = {"CUDA_VISIBLE_DEVICES": gpu.uuid}
        if jit_cache is not None:  # the driver's PTX JIT, kept per GPU kind
            kind = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{gpu.name}-{gpu.arch}")
            self.variables[JIT_CACHE_ENV] = str(jit_cache / kind)
        self.socket_path = str(folder / (f"gpu-{gpu.index}.sock" if not slot
                                         else f"gpu-{gpu.index}-{slot}.sock"))
        self.process: subprocess.Popen[str] | None = None
        self.started = 0
        # The GPU's free memory as this server first started (None: not yet started).
        self.free_bytes: int | None = None

    def command(self) -> list[str]:
        """The server's process: this package's GPU server on this server's socket (apart
        from `ensure`, so that the rule of when one is started is run, in the unit lane, on
        a process that answers as the server does without a GPU)."""
        return [sys.executable, "-m", "cudamatrix.stages.runtime.gpu_server", self.socket_path]

    def ensure(self) -> None:
        """The server's process, started where it has none or the one it had ended (a
        crash, a sticky fault, a cell that replaced it); one that runs is kept."""
        if self.process is not None and self.process.poll() is None:
            return
        self.process = subprocess.Popen(
            self.command(),
            env=cell_environment(self.variables, inherited=self.env), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        try:
            said = json.loads(line)
        except ValueError:
            said = {}
        if not said.get("ready"):
            self.stop()
            raise RuntimeError(f"GPU {self.gpu.index} ({self.gpu.name}): its server did not "
                               f"start: {line}")
        self.started += 1
        self.said_ready(said)

    def said_ready(self, said: dict[str, Any]) -> None:
        """What the server's ready line tells the pool: its GPU's free memory as it first
        started (how many servers the GPU may have), and whether it reads what its own
        process holds (held_bytes >= 0; -1 where NVML cannot say)."""
        if self.free_bytes is None and isinstance(said.get("free_bytes"), int):
            self.free_bytes = said["free_bytes"]
        if self.own_memory is None and isinstance(said.get("held_bytes"), int):
            self.own_memory = said["held_bytes"] >= 0

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def how_it_ended(self) -> str:
        assert self.process is not None
        code = self.process.wait()
        self.process = None
        return (f"was killed by {signal.Signals(-code).name}" if code < 0
                else f"exited with status {code}")

    def run(self, job: Job, ptx: Path | None, cubin: Path | None) -> list[StageResult]:
        """The cell's load and run stages, from this GPU's server; a server that ran past
        the cell's limit is killed and the cell timed out, one that ended without an
        answer crashed the cell, as its own process would have."""
        self.ensure()
        request = {"job": job.to_json(), "ptx": str(ptx) if ptx else "",
                   "cubin": str(cubin) if cubin else "", "timeout": job.timeout}
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(job.timeout + SERVER_GRACE_S)
        answer = b""
        try:
            connection.connect(self.socket_path)
            connection.sendall(json.dumps(request).encode() + b"\n")
            while not answer.endswith(b"\n"):
                chunk = connection.recv(1 << 16)
                if not chunk:
                    break
                answer += chunk
        except TimeoutError:
            self.stop()
            return [self._named(timed_out(job, read_bounded(job.work / GPU_OUTPUT_FILE).strip()),
                                "it ran past the cell's limit")]
        except OSError as exc:  # its socket gone or refusing: the server died, not the disk
            self.stop()
            why = f"the GPU's server could not be reached ({exc.strerror or exc})"
            return [self._named(StageResult(stage_entered(job.work, "load"), "crashed", why,
                                            read_bounded(job.work / GPU_OUTPUT_FILE).strip()),
                                why)]
        finally:
            connection.close()
        output = read_bounded(job.work / GPU_OUTPUT_FILE).strip()
        if not answer.endswith(b"\n"):
            how = self.how_it_ended()
            return [self._named(StageResult(stage_entered(job.work, "load"), "crashed",
                                            f"the GPU's server {how}", output[-20_000:]), how)]
        said = json.loads(answer)
        if said["ended"]:  # it exits after answering: a fresh one for the next cell
            with contextlib.suppress(subprocess.TimeoutExpired):
                assert self.process is not None
                self.process.wait(timeout=30)
            self.stop()
        stages = [StageResult.from_dict(s) for s in said["stages"]]
        stages[0] = self._named(stages[0], said["ended"])
        return _with_output(stages, output)

    def _named(self, stage: StageResult, replaced: str = "") -> StageResult:
        """The stage with the GPU it ran on, and why its server was replaced if it was: a
        kernel that hung or crashed a server is first asked about by which GPU it was on."""
        details: dict[str, Any] = {"gpu": self.gpu.to_dict()}
        if replaced:
            details["server_replaced"] = replaced
        return replace(stage, details={**stage.details, **details})


def _with_output(stages: list[StageResult], output: str) -> list[StageResult]:
    """Device printf belongs to the last stage's story, as a cell's own process tells it."""
    return with_process_output(stages, output)


def _with_wait(stages: list[StageResult], waited: float) -> list[StageResult]:
    """The stages, the first saying how long the cell waited for a server of its GPU
    (`gpu_wait_s`): a cell's seconds count that wait, its recorded cost must not (a timed
    cell that waited out a hang was recorded at 25 s and started first the next run)."""
    if not stages or waited < GPU_WAIT_SAID_S:
        return stages
    first = stages[0]
    return [replace(first, details={**first.details, "gpu_wait_s": round(waited, 2)}),
            *stages[1:]]


def usable_cores() -> int:
    """The cores this process may run on (a CI runner's cgroup or taskset leaves fewer than
    the machine has)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def slots_per_gpu(width: int, gpus: int, free_bytes: int | None) -> int:
    """How many servers one GPU is given. A PTX load's JIT is the driver compiling in the
    calling process, one module at a time per process (threads of one context are
    serialised): side by side only in processes of their own. So no more servers than the
    run's cells at once and its cores (`width`, shared by the GPUs), and no more contexts
    than the GPU's free memory holds beside a margin; one until that memory is known (the
    GPU's first server reads it as it starts)."""
    by_cores = max(1, width // max(1, gpus))
    if free_bytes is None or free_bytes < 0:
        return 1
    by_memory = int(free_bytes * (1 - MEMORY_MARGIN)) // SLOT_BYTES
    return max(1, min(by_cores, by_memory))


class GpuPool:
    """Servers per visible GPU; a cell's GPU stages on a free one, its own arch's first.

    A GPU starts with one server and is given another, up to slots_per_gpu, when a cell
    finds every one of its servers busy, so the loads that JIT-compile PTX run side by side
    while a warm run with little to load keeps one. A timed cell has its GPU alone: it
    waits for a moment when the GPU's servers and the cells that borrow it are all idle,
    and no cell starts there until its timing is over. While it waits, other cells go on
    starting there: a hang's limit (20 s) is then waited out by the timed cells alone, not
    by every worker of the run (holding the GPU from the moment a timed cell asked stalled
    a cold run's 16 workers behind one hang). A run's cells are finite, so a timed cell
    waits at most until its GPU's other work is done."""

    def __init__(self, gpus: Sequence[Gpu], folder: Path, env: CellEnvironment,
                 say: Callable[[str], None] = lambda text: None,
                 jit_cache: Path | None = None, width: int = 1) -> None:
        self.folder, self.env, self.jit_cache, self.width = folder, env, jit_cache, width
        self.servers = [GpuServer(gpu, folder, env, jit_cache) for gpu in gpus]
        self.free = list(self.servers)
        self.condition = threading.Condition()
        self.say = say
        # Cells running GPU work in their own processes, per GPU (its UUID), and the GPUs
        # a timed cell holds or waits to hold: the two never overlap on one GPU.
        self.borrowers: dict[str, int] = {}
        self.timing: set[str] = set()
        # A GPU whose next server would not start (its memory, say): no more than it has.
        self.capped: dict[str, int] = {}
        self.made = len(self.servers)

    def new_server(self, gpu: Gpu, slot: int) -> GpuServer:
        """Another server for `gpu`, started by its first cell."""
        return GpuServer(gpu, self.folder, self.env, self.jit_cache, slot)

    def _gpus(self) -> list[Gpu]:
        return list({s.gpu.uuid: s.gpu for s in self.servers}.values())

    def _of(self, uuid: str) -> list[GpuServer]:
        return [s for s in self.servers if s.gpu.uuid == uuid]

    def _busy(self, uuid: str) -> int:
        return sum(1 for s in self._of(uuid) if s not in self.free)

    def slots(self, gpu: Gpu) -> int:
        """How many servers `gpu` may have now (slots_per_gpu, with its free memory as its
        first server read it)."""
        # A server that cannot read what its own process holds (no nvidia-ml-py, a container
        # whose process ids are not the host's) tells memory gone missing by the GPU's free
        # memory alone, which a second server's context and cells take too: its GPU keeps
        # one server, so that check stays true (its JIT loads then go one at a time).
        if any(s.own_memory is False for s in self._of(gpu.uuid)):
            return 1
        read = [s.free_bytes for s in self._of(gpu.uuid) if s.free_bytes is not None]
        count = slots_per_gpu(self.width, len(self._gpus()), max(read) if read else None)
        return min(count, self.capped.get(gpu.uuid, count))

    @contextlib.contextmanager
    def lent(self, arch: str) -> Iterator[Gpu]:
        """A GPU for a cell that runs GPU work in its own process (CuPy, a host entry, a
        build's test): of its arch where the machine has one, the least busy, never one
        a timed cell holds or waits for (it waits for that to end). Many such cells may
        share a GPU; a timed cell waits until none is on its GPU."""
        with self.condition:
            while True:
                open_ = [g for g in self._candidates(arch) if g.uuid not in self.timing]
                if open_:
                    gpu = min(open_, key=lambda g: self.borrowers.get(g.uuid, 0))
                    self.borrowers[gpu.uuid] = self.borrowers.get(gpu.uuid, 0) + 1
                    break
                self.condition.wait()
        try:
            yield gpu
        finally:
            with self.condition:
                self.borrowers[gpu.uuid] -= 1
                self.condition.notify_all()

    def _candidates(self, arch: str) -> list[Gpu]:
        """The GPUs where `arch`'s SASS runs natively, where the machine has one, else
        every GPU (the caller holds the condition)."""
        gpus = self._gpus()
        if not gpus:
            raise RuntimeError("no GPU of this machine could start a server")
        target = Arch.parse(arch)
        native = [g for g in gpus if sass_runs_on(target, Arch.parse(g.arch))]
        return native or gpus

    def _untimed(self, gpus: Sequence[Gpu]) -> GpuServer | None:
        """An idle server of the least busy of `gpus` that no timed cell holds, else a new
        one where a GPU has room for it; None: wait."""
        open_ = {g.uuid for g in gpus if g.uuid not in self.timing}
        idle = [s for s in self.free if s.gpu.uuid in open_]
        if idle:
            server = min(idle, key=lambda s: self._busy(s.gpu.uuid))
            self.free.remove(server)
            return server
        room = [g for g in gpus if g.uuid in open_ and len(self._of(g.uuid)) < self.slots(g)]
        if not room:
            return None
        gpu = min(room, key=lambda g: self._busy(g.uuid))
        server = self.new_server(gpu, self.made)
        self.made += 1
        self.servers.append(server)
        return server

    def _take(self, arch: str, timed: bool = False) -> GpuServer:
        """A free server: of a GPU where `arch`'s SASS runs natively, where the machine has
        one (the cell waits for it), else of any GPU. A timed cell waits, holding nothing,
        until one of those GPUs is idle (no busy server, no borrower, no other timing),
        then holds it: no new cell starts there until its timing is over."""
        with self.condition:
            while True:
                gpus = self._candidates(arch)
                if not timed:
                    found = self._untimed(gpus)
                    if found is not None:
                        return found
                else:
                    idle = [g for g in gpus if self._idle(g.uuid)]
                    if idle:
                        held = idle[0].uuid
                        self.timing.add(held)
                        server = next(s for s in self.free if s.gpu.uuid == held)
                        self.free.remove(server)
                        return server
                self.condition.wait()

    def _idle(self, uuid: str) -> bool:
        """Whether a timed cell may hold the GPU now: a server of it free, none busy, no
        cell borrowing it and no other timed cell holding it (the caller holds the
        condition)."""
        return (uuid not in self.timing and not self._busy(uuid)
                and not self.borrowers.get(uuid, 0)
                and any(s.gpu.uuid == uuid for s in self.free))

    def _give(self, server: GpuServer, timed: bool = False) -> None:
        with self.condition:
            self.free.append(server)
            if timed:
                self.timing.discard(server.gpu.uuid)
            self.condition.notify_all()

    def _drop(self, server: GpuServer, why: str, timed: bool = False) -> None:
        """A server that would not start: the GPU keeps the servers it has (its memory or
        the driver allows no more), or, where it had no other, is left out."""
        with self.condition:
            self.servers.remove(server)
            if timed:
                self.timing.discard(server.gpu.uuid)
            others = len(self._of(server.gpu.uuid))
            if others:
                self.capped[server.gpu.uuid] = others
            self.condition.notify_all()
        if not others:
            self.say(f"warning: GPU {server.gpu.index} ({server.gpu.name}, {server.gpu.uuid}) "
                     f"left out: {why}")

    def run(self, job: Job, ptx: Path | None, cubin: Path | None) -> list[StageResult]:
        """The cell's load and run on a server of its GPU; a timed cell's ([variant.time],
        its budgets on time with it) with the GPU to itself, so that its figures are its
        kernel's alone."""
        timed = job.time is not None
        waited = 0.0
        while True:
            asked = time.monotonic()
            server = self._take(job.arch, timed)
            waited += time.monotonic() - asked
            try:
                started = server.started
                server.ensure()
                if server.started != started:  # cells waiting learn its GPU's memory
                    with self.condition:
                        self.condition.notify_all()
                stages = server.run(job, ptx, cubin)
            except RuntimeError as exc:  # it would not start: busy, broken, out of memory
                self._drop(server, str(exc), timed)
                continue
            except BaseException:
                self._give(server, timed)
                raise
            self._give(server, timed)
            return _with_wait(stages, waited)

    def close(self) -> None:
        for server in self.servers:
            server.stop()
