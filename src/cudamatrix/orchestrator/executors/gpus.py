"""The GPUs of this machine, a server each (stages/runtime/gpu_server.py), and which cell goes
to which.

Every GPU the driver sees, as `CUDA_VISIBLE_DEVICES` names them, gets a server that owns
its primary context; a cell's load and run stages go to a free one, preferring a GPU on
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
from .outcome import timed_out, with_process_output

# A server gets this long past a cell's limit to answer (it writes the cell's stack at the
# limit itself); then its process group is killed.
SERVER_GRACE_S = 3.0
START_TIMEOUT_S = 120.0


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
    from cuda.bindings import driver as cu

    (status,) = cu.cuInit(0)
    if status != cu.CUresult.CUDA_SUCCESS:
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

    def __init__(self, gpu: Gpu, folder: Path, env: CellEnvironment,
                 jit_cache: Path | None = None) -> None:
        # The workers' cell environment, and what this server adds to it.
        self.gpu, self.env = gpu, env
        self.variables = {"CUDA_VISIBLE_DEVICES": gpu.uuid}
        if jit_cache is not None:  # the driver's PTX JIT, kept per GPU kind
            kind = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{gpu.name}-{gpu.arch}")
            self.variables[JIT_CACHE_ENV] = str(jit_cache / kind)
        self.socket_path = str(folder / f"gpu-{gpu.index}.sock")
        self.process: subprocess.Popen[str] | None = None
        self.started = 0

    def ensure(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cudamatrix.stages.runtime.gpu_server", self.socket_path],
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


class GpuPool:
    """A server per visible GPU; a cell's GPU stages on a free one, its own arch's first."""

    def __init__(self, gpus: Sequence[Gpu], folder: Path, env: CellEnvironment,
                 say: Callable[[str], None] = lambda text: None,
                 jit_cache: Path | None = None) -> None:
        self.servers = [GpuServer(gpu, folder, env, jit_cache) for gpu in gpus]
        self.free = list(self.servers)
        self.condition = threading.Condition()
        self.say = say
        # Cells running GPU work in their own processes, per GPU (its UUID), and the GPUs
        # whose server is timing a cell: the two never overlap on one GPU.
        self.borrowers: dict[str, int] = {}
        self.timing: set[str] = set()

    @contextlib.contextmanager
    def lent(self, arch: str) -> Iterator[Gpu]:
        """A GPU for a cell that runs GPU work in its own process (CuPy, a host entry, a
        build's test): of its arch where the machine has one, the least busy, never one
        whose server is timing a cell (it waits for that to end). Many such cells may
        share a GPU; a timed cell waits until none is on its GPU."""
        target = Arch.parse(arch)
        with self.condition:
            while True:
                gpus = [s.gpu for s in self.servers]
                if not gpus:
                    raise RuntimeError("no GPU of this machine could start a server")
                native = [g for g in gpus if sass_runs_on(target, Arch.parse(g.arch))]
                open_ = [g for g in (native or gpus) if g.uuid not in self.timing]
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

    @contextlib.contextmanager
    def timed_alone(self, server: GpuServer, job: Job) -> Iterator[None]:
        """A timed cell's GPU to itself: no cell's own process does GPU work there while
        its kernel is timed (their launches would be timed as its own)."""
        if job.time is None:
            yield
            return
        uuid = server.gpu.uuid
        with self.condition:
            self.timing.add(uuid)
            while self.borrowers.get(uuid, 0):
                self.condition.wait()
        try:
            yield
        finally:
            with self.condition:
                self.timing.discard(uuid)
                self.condition.notify_all()

    def _take(self, arch: str) -> GpuServer:
        """A free server: of a GPU where `arch`'s SASS runs natively, where the machine has
        one (the cell waits for it), else of any GPU."""
        target = Arch.parse(arch)

        def native(server: GpuServer) -> bool:
            return sass_runs_on(target, Arch.parse(server.gpu.arch))

        with self.condition:
            while True:
                if not self.servers:
                    raise RuntimeError("no GPU of this machine could start a server")
                wanted = native if any(native(s) for s in self.servers) else None
                found = [s for s in self.free if wanted is None or wanted(s)]
                if found:
                    self.free.remove(found[0])
                    return found[0]
                self.condition.wait()

    def _give(self, server: GpuServer) -> None:
        with self.condition:
            self.free.append(server)
            self.condition.notify_all()

    def _drop(self, server: GpuServer, why: str) -> None:
        with self.condition:
            self.servers.remove(server)
            self.condition.notify_all()
        self.say(f"warning: GPU {server.gpu.index} ({server.gpu.name}, {server.gpu.uuid}) "
                 f"left out: {why}")

    def run(self, job: Job, ptx: Path | None, cubin: Path | None) -> list[StageResult]:
        while True:
            server = self._take(job.arch)
            try:
                with self.timed_alone(server, job):
                    stages = server.run(job, ptx, cubin)
            except RuntimeError as exc:  # it would not start: busy or broken
                self._drop(server, str(exc))
                continue
            except BaseException:
                self._give(server)
                raise
            self._give(server)
            return stages

    def close(self) -> None:
        for server in self.servers:
            server.stop()
