"""Where a cell's worker runs: a process of its own here, or a `docker exec` in its
toolkit's container. Either way the worker writes its stages to the cell's folder and
the run reads them back, so a crash, a hang or an interrupted run costs one cell.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .errors import EnvironmentUnavailable
from .providers.docker import (
    CELL_UID,
    CUDA_COMPAT_IN_IMAGE,
    PYTHON_IN_IMAGE,
    WORK_IN_IMAGE,
    ContainerPool,
    Mount,
    translate,
)
from .providers.environment import Environment
from .stages.cell_files import JOB_FILE, RESULT_FILE
from .stages.forkserver import OUTPUT_FILE
from .stages.hang import innermost_frame, stack_of, stage_entered
from .stages.job import Job
from .stages.limits import read_bounded
from .stages.logs import error_lines
from .stages.result import StageResult
from .stages.worker import PARENT_ENV


class ForkServer:
    """One warm worker parent for one worker environment (see stages/forkserver.py)."""

    def __init__(self, env: dict[str, str], folder: Path, number: int) -> None:
        self.socket_path = str(folder / f"server-{number}.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cudamatrix.stages.forkserver", self.socket_path],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            self.stop()
            raise RuntimeError(f"cell worker server did not start: {ready}"
                               f"{self.process.stdout.read()[-2000:]}")

    def start_cell(self, job_file: Path) -> tuple[socket.socket, int]:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(60)
        connection.connect(self.socket_path)
        connection.sendall(f"{job_file}\n".encode())
        return connection, int(_read_line(connection))

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _read_line(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(64)
        if not chunk:
            raise ConnectionError("cell worker server closed the connection")
        data += chunk
    return data.decode().strip()


class Workers:
    """Cell worker processes: each cell a process of its own, in a process group of its own
    (so a timeout kills its compilers), forked from a warm server per environment."""

    def __init__(self) -> None:
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

    def _server(self, env: dict[str, str]) -> ForkServer:
        key = (env.get("LD_LIBRARY_PATH", ""), env.get("CUDAMATRIX_PRELOAD", ""))
        with self._lock:
            if self.stopping:
                raise KeyboardInterrupt
            if key not in self._servers:
                self._servers[key] = ForkServer(env, self._folder, len(self._servers))
            return self._servers[key]

    def run(self, job: Job, env: dict[str, str]) -> list[StageResult]:
        if self.stopping:
            raise KeyboardInterrupt
        job_file = job.work / JOB_FILE
        job_file.write_text(job.to_json())
        connection, pid = self._server(env).start_cell(job_file)
        with self._lock:
            self._running.add(pid)
        try:
            connection.settimeout(job.timeout + 15)
            try:
                code = int(_read_line(connection))
                killed = False
            except TimeoutError:
                self._kill(pid)
                connection.settimeout(30)
                code, killed = int(_read_line(connection)), True
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

    def stop_all(self) -> None:
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
        shutil.rmtree(self._folder, ignore_errors=True)


def timed_out(job: Job, output: str = "") -> StageResult:
    """The stopped cell's result: the stage it was in and where its Python stack was."""
    stack = stack_of(job.work)
    where = innermost_frame(stack)
    message = f"cell ran past its {job.timeout:.0f} s limit and was killed"
    if where:
        message += f"; it was in {where}"
    log = stack
    if output:  # what it said before it was stopped is a clue too
        log = f"{log}\n--- process output ---\n{output[-20_000:]}".strip()
    return StageResult(stage_entered(job.work), "timeout", message, log,
                       details={"limit_s": round(job.timeout, 1),
                                **({"stopped_in": where} if where else {})})


def collect_stages(job: Job, code: int, how: str, output: str) -> list[StageResult]:
    """The stages a finished worker left in its folder, or why it left none."""
    result_file = job.work / RESULT_FILE
    if code != 0 or not result_file.exists():
        return [StageResult("compile", "crashed", f"cell worker {how}", output[-20_000:])]
    stages = [StageResult.from_dict(s) for s in json.loads(result_file.read_text())]
    if output:  # device printf and library chatter belong to the last stage's story
        last = stages[-1]
        said = error_lines(output)
        message = last.message
        if last.status != "ok" and said and said[0] not in message:
            message = f"{message} (process output: {said[0][:200]})"
        stages[-1] = replace(last, message=message,
                             log=f"{last.log}\n--- process output ---\n"
                                 f"{output[-20_000:]}".strip())
    return stages


# Distinct uids for the cells running at once in one run's containers.
MAX_CELL_UIDS = 256


class DockerCells:
    """Runs cell workers inside the run's toolkit containers (the docker provider)."""

    def __init__(self, client: Any, *, out: Path, cache: Path, corpus: Sequence[Path],
                 base_image: Callable[[], str | None], gpu: bool, lifetime_s: float,
                 compat: bool) -> None:
        package = Path(__file__).resolve().parent  # the cudamatrix package, mounted read-only
        artifacts = (out / "artifacts").resolve()
        artifacts.mkdir(parents=True, exist_ok=True)
        libraries = (cache / "libraries").resolve()
        libraries.mkdir(parents=True, exist_ok=True)
        tools = (cache / "tools").resolve()  # cuobjdump for SASS checks
        tools.mkdir(parents=True, exist_ok=True)
        mounts = [Mount(str(package), f"{PYTHON_IN_IMAGE}/cudamatrix"),
                  Mount(str(artifacts), f"{WORK_IN_IMAGE}/out", writable=True),
                  Mount(str(libraries), f"{WORK_IN_IMAGE}/libraries"),
                  Mount(str(tools), f"{WORK_IN_IMAGE}/tools")]
        for number, folder in enumerate(dict.fromkeys(p.resolve() for p in corpus)):
            mounts.append(Mount(str(folder), f"{WORK_IN_IMAGE}/corpus/{number}"))
        self.mounts = mounts
        self.base_image = base_image
        self.stopping = False
        self.compat = compat
        # Cells of one toolkit share its container: each running cell gets a uid of its
        # own (the container's capabilities are dropped), so no cell can signal another
        # or the container's own process. Only a root orchestrator can hand its folder over.
        self._free_uids = list(range(CELL_UID + 1, CELL_UID + 1 + MAX_CELL_UIDS))
        self._uid_lock = threading.Lock()
        self.pool = ContainerPool(client, mounts, f"{os.getpid()}-{int(time.time())}", gpu=gpu,
                                  lifetime_s=lifetime_s)

    def run(self, job: Job) -> list[StageResult]:
        if self.stopping:
            raise KeyboardInterrupt
        image = job.env.image if job.env and job.env.image else self.base_image()
        if image is None:
            return [StageResult("compile", "error", "no base image for cells without a toolkit")]
        try:
            container = self.pool.get(image)
        except EnvironmentUnavailable as exc:
            if self.stopping:
                raise KeyboardInterrupt from None
            return [StageResult("compile", "error", str(exc))]
        inside = translate(job, self.mounts)
        (job.work / JOB_FILE).write_text(inside.to_json())
        uid = self._take_uid() if os.geteuid() == 0 else None
        try:
            return self._exec(container, job, inside, uid)
        finally:
            if uid is not None:
                with self._uid_lock:
                    self._free_uids.append(uid)

    def _take_uid(self) -> int:
        with self._uid_lock:
            if not self._free_uids:  # more cells at once than uids: share the last one
                return CELL_UID + MAX_CELL_UIDS
            return self._free_uids.pop(0)

    def _exec(self, container: Any, job: Job, inside: Job, uid: int | None
              ) -> list[StageResult]:
        if uid is not None:  # the cell's user must be able to write its own folder
            os.chown(job.work, uid, CELL_UID)
        started = time.monotonic()
        folders = list(job.env.library_dirs) if job.env else []
        if self.compat:  # NVIDIA's forward-compatibility libcuda before the host driver's
            folders.insert(0, CUDA_COMPAT_IN_IMAGE)
        variables = {"LD_LIBRARY_PATH": os.pathsep.join(folders)} if folders else {}
        code, output = container.exec_worker(f"{inside.workdir}/job.json", job.timeout,
                                             variables,
                                             f"{uid}:{CELL_UID}" if uid is not None else None)
        if self.stopping:  # the run was interrupted and its containers removed under the cell
            raise KeyboardInterrupt
        if code == 137 and time.monotonic() - started >= job.timeout:
            return [timed_out(job, output.strip())]
        how = "killed (SIGKILL: memory limit or container limit)" if code == 137 \
            else f"exited with status {code}"
        return collect_stages(job, code, how, output.strip())

    def stop(self) -> None:
        self.stopping = True
        self.pool.close()

    def close(self) -> None:
        self.pool.close()


def worker_env(env: Environment | None) -> dict[str, str]:
    variables = dict(os.environ)
    variables[PARENT_ENV] = str(os.getpid())
    if env is not None and env.nvrtc:  # loaded once by the warm server, not per cell
        variables["CUDAMATRIX_PRELOAD"] = env.nvrtc
    folders = list(env.library_dirs if env else ())
    if variables.get("LD_LIBRARY_PATH"):
        folders.append(variables["LD_LIBRARY_PATH"])
    if folders:
        variables["LD_LIBRARY_PATH"] = os.pathsep.join(folders)
    return variables
