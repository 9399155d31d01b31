"""Cells as processes of this machine, forked from a warm server per environment."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ...stages.cell.cell_environment import CellEnvironment, cell_environment
from ...stages.cell.environment import Environment
from ...stages.cell.files import JOB_FILE
from ...stages.cell.job import Job
from ...stages.cell.result import StageResult
from ...stages.process.hermetic import HERMETIC_ENVIRONMENT
from ...stages.process.limits import read_bounded
from ...stages.runtime.forkserver import OUTPUT_FILE
from ...stages.runtime.pipeline import run_gpu_steps, served_by_gpu_server
from ...stages.runtime.worker import PARENT_ENV
from .gpus import GpuPool, usable_cores, visible_gpus
from .outcome import collect_stages, timed_out

# How long past a cell's limit its worker is given before it is stopped from outside: a
# compiler past the limit is killed by the worker itself (SIGKILL, at the limit), which
# then writes what it found in well under a second; a cell stuck in its own process
# (NVRTC, a frontend's Python) is only stopped from here. It was 15 s: every hang cost
# 15 s more than the limit the case or the run had set.
WORKER_GRACE_S = 3.0


class ForkServer:
    """One warm worker parent for one worker environment (see stages/runtime/forkserver.py)."""

    def __init__(self, env: CellEnvironment, folder: Path, number: int) -> None:
        self.socket_path = str(folder / f"server-{number}.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cudamatrix.stages.runtime.forkserver", self.socket_path],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            self.stop()
            raise RuntimeError(f"cell worker server did not start: {ready}"
                               f"{self.process.stdout.read()[-2000:]}")

    def start_cell(self, job_file: Path) -> tuple[socket.socket, _Lines, int]:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(60)
        connection.connect(self.socket_path)
        connection.sendall(f"{job_file}\n".encode())
        lines = _Lines(connection)
        return connection, lines, int(lines.read())

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


class _Lines:
    """The lines a cell's server sends (the worker's pid, then its exit status). A fast
    worker's two lines can arrive in one read: what follows the first is kept for the next."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection, self._pending = connection, b""

    def read(self) -> str:
        while b"\n" not in self._pending:
            chunk = self.connection.recv(64)
            if not chunk:
                raise ConnectionError("cell worker server closed the connection")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode().strip()


class LocalExecutor:
    """Cell worker processes: each cell a process of its own, in a process group of its own
    (so a timeout kills its compilers), forked from a warm server per environment; with
    `gpu_server`, a cell's load and run stages go to its GPU's servers (gpus.py), each of
    which holds one context for the run, instead of a context of the cell's own; as many
    servers as `jobs` and the cores allow, so the driver's PTX JIT runs side by side."""

    def __init__(self, gpu_server: bool = False,
                 say: Callable[[str], None] = lambda text: None,
                 jit_cache: Path | None = None, jobs: int = 1) -> None:
        self._running: set[int] = set()
        self._servers: dict[tuple[str, str], ForkServer] = {}
        self._lock = threading.Lock()
        # UNIX socket paths must stay under ~100 bytes: a long $TMPDIR falls back to /tmp.
        folder = tempfile.mkdtemp(prefix="cudamatrix-workers-")
        if len(folder) > 80 and os.path.isdir("/tmp"):
            shutil.rmtree(folder, ignore_errors=True)
            folder = tempfile.mkdtemp(prefix="cm-", dir="/tmp")
        self._folder = Path(folder)
        self.stopping = False
        self.gpus: GpuPool | None = None
        if gpu_server:
            found = visible_gpus()
            if found:
                self.gpus = GpuPool(found, self._folder, worker_env(None), say, jit_cache,
                                    width=min(jobs, usable_cores()))

    def _server(self, env: CellEnvironment) -> ForkServer:
        key = (env.get("LD_LIBRARY_PATH", ""), env.get("CUDAMATRIX_PRELOAD", ""))
        with self._lock:
            if self.stopping:
                raise KeyboardInterrupt
            if key not in self._servers:
                self._servers[key] = ForkServer(env, self._folder, len(self._servers))
            return self._servers[key]

    def run(self, job: Job) -> list[StageResult]:
        """The cell's stages: its own process's, then, where a GPU's server takes them, its
        load and run stages from there (the pipeline's GPU steps, placed on the server)."""
        served = self.gpus is not None and job.gpu_stages and served_by_gpu_server(job)
        if self.gpus is not None and job.gpu_stages and not served:
            # GPU work of its own (CuPy, a host entry, a build's test): on a GPU lent to it
            # alone, never beside a cell a server is timing there.
            with self.gpus.lent(job.arch) as gpu:
                return self._run_worker(replace(job, gpu=gpu.uuid))
        if not served:
            return self._run_worker(job)
        stages = self._run_worker(replace(job, gpu_stages=False))
        return run_gpu_steps(job, stages, self._on_server)

    def _on_server(self, job: Job, ptx: Path | None, cubin: Path | None,
                   library: Path | None) -> list[StageResult]:
        """A cell's load and run on a GPU's server (a served cell has no library of its
        own: a host entry keeps its own process)."""
        assert self.gpus is not None
        try:
            return self.gpus.run(job, ptx, cubin)
        except RuntimeError as exc:  # no GPU of the machine could start its server
            return [StageResult("load", "error", str(exc))]

    def _run_worker(self, job: Job) -> list[StageResult]:
        if self.stopping:
            raise KeyboardInterrupt
        env = worker_env(job.env)
        job_file = job.work / JOB_FILE
        job_file.write_text(job.to_json())
        connection, lines, pid = self._server(env).start_cell(job_file)
        with self._lock:
            self._running.add(pid)
        try:
            connection.settimeout(job.timeout + WORKER_GRACE_S)
            try:
                code = int(lines.read())
                killed = False
            except TimeoutError:
                self._kill(pid)
                connection.settimeout(30)
                code, killed = int(lines.read()), True
        finally:
            connection.close()
            with self._lock:
                self._running.discard(pid)
        output_file = job.work / OUTPUT_FILE
        output = read_bounded(output_file).strip()
        if killed:
            return [timed_out(job, output)]
        if code != 0 and self.stopping:
            raise KeyboardInterrupt
        how = (f"killed by {signal.Signals(-code).name}" if code < 0
               else f"exited with status {code}")
        return collect_stages(job, code, how, output)

    @staticmethod
    def _kill(pid: int) -> None:
        """Stop a cell: SIGTERM lets its worker end the compilers it runs (each in a group
        of its own); whatever is left of its group is killed a moment later."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

    def stop(self) -> None:
        self.stopping = True
        with self._lock:
            for pid in list(self._running):
                self._kill(pid)

    def close(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop()
        if self.gpus is not None:
            self.gpus.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def worker_env(env: Environment | None) -> CellEnvironment:
    """A cell worker's environment (its fork server's, a GPU's server's): the cell
    environment, hermetic, told its parent, the toolkit's NVRTC to preload and its
    libraries' folders before any the run's environment named."""
    inherited = cell_environment()
    variables = {**HERMETIC_ENVIRONMENT, PARENT_ENV: str(os.getpid())}
    if env is not None and env.nvrtc:  # loaded once by the warm server, not per cell
        variables["CUDAMATRIX_PRELOAD"] = env.nvrtc
    folders = list(env.library_dirs if env else ())
    if inherited.get("LD_LIBRARY_PATH"):
        folders.append(inherited["LD_LIBRARY_PATH"])
    if folders:
        variables["LD_LIBRARY_PATH"] = os.pathsep.join(folders)
    return cell_environment(variables)
