"""Cells in their toolkit's container: one container per image for the whole run, each
cell a `docker exec` of the cell worker.

A toolkit's container runs for the whole run (``sleep`` up to the per-container time
limit) with no network, a read-only root file system and corpus, a non-root user,
memory and process limits, and GPUs only when the run has one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...config.options import DEFAULT_CONTAINER_TIMEOUT_S
from ...errors import EnvironmentUnavailable
from ...providers.docker import (
    CELL_UID,
    CUDA_COMPAT_IN_IMAGE,
    PYTHON_IN_IMAGE,
    WORK_IN_IMAGE,
    content_digest,
)
from ...record.results import ARTIFACTS_DIR
from ...stages.cell.environment import LibraryEnvironment
from ...stages.cell.files import JOB_FILE
from ...stages.cell.job import Job
from ...stages.cell.result import StageResult
from ...stages.process.hermetic import hermetic
from .outcome import collect_stages, timed_out

LABEL = "org.cudamatrix.run"  # "<pid>-<start time>" of the run that owns a container
HOST_LABEL = "org.cudamatrix.host"
DEFAULT_MEMORY = "8g"
DEFAULT_PIDS = 1024


@dataclass(frozen=True)
class Mount:
    host: str
    image: str
    writable: bool = False


class CellContainer:
    """One toolkit's running container; cells are exec'ed into it, one process each."""

    def __init__(self, client: Any, image: str, mounts: Sequence[Mount], run_id: str, *,
                 gpu: bool = False, memory: str = DEFAULT_MEMORY, pids: int = DEFAULT_PIDS,
                 lifetime_s: float = DEFAULT_CONTAINER_TIMEOUT_S) -> None:
        import docker
        from docker.types import DeviceRequest

        self.client, self.image, self.mounts = client, image, tuple(mounts)
        # Root on the host would mean root in the container: cells get a user of their own.
        self.user = f"{CELL_UID}:{CELL_UID}" if os.geteuid() == 0 \
            else f"{os.getuid()}:{os.getgid()}"
        requests = [DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpu else []
        name = f"cudamatrix-{run_id}-{content_digest(image)[:8]}"
        try:
            self.container = client.containers.run(
                image, ["sleep", str(int(lifetime_s))], name=name, detach=True,
                network_mode="none", read_only=True, user=self.user,
                tmpfs={"/tmp": "rw,exec,nosuid,size=4g"}, mem_limit=memory, pids_limit=pids,
                security_opt=["no-new-privileges"], cap_drop=["ALL"],
                volumes={m.host: {"bind": m.image, "mode": "rw" if m.writable else "ro"}
                         for m in self.mounts},
                environment={"PYTHONPATH": PYTHON_IN_IMAGE, "HOME": "/tmp"},
                labels={LABEL: run_id, HOST_LABEL: os.uname().nodename},
                device_requests=requests, working_dir="/tmp")
        except docker.errors.APIError as exc:
            # A failed start (no GPU runtime: exit 125 "could not select device driver")
            # leaves the container Created: remove it before saying why.
            _remove_named(client, name)
            raise EnvironmentUnavailable(
                f"container for {image} did not start: {exc.explanation or exc}") from None

    def exec_worker(self, job_path: str, timeout: float, environment: dict[str, str],
                    user: str | None = None) -> tuple[int, str]:
        """Run one cell's worker, as `user` (uid:gid) when given; (exit status, output).
        Status 137 means it was killed."""
        command = ["timeout", "-s", "KILL", str(int(timeout) + 1), "python3", "-m",
                   "cudamatrix.stages.runtime.worker", job_path]
        result = self.container.exec_run(command, user=user or self.user, workdir="/tmp",
                                         environment=environment)
        output = result.output.decode(errors="replace") if result.output else ""
        return int(result.exit_code if result.exit_code is not None else -1), output

    def stop(self) -> None:
        import docker

        with contextlib.suppress(docker.errors.APIError):
            self.container.remove(force=True)


def _remove_named(client: Any, name: str) -> None:
    import docker

    with contextlib.suppress(docker.errors.APIError):
        client.containers.get(name).remove(force=True)


def leftover_containers(client: Any, run_id: str | None = None) -> list[Any]:
    """Containers a run started (all runs' when `run_id` is None), in any state."""
    label = LABEL if run_id is None else f"{LABEL}={run_id}"
    return list(client.containers.list(all=True, filters={"label": label}))


def translate(job: Job, mounts: Sequence[Mount]) -> Job:
    """The job with every host path rewritten to where its mount puts it in the container.
    Mounts name resolved folders, so a path is matched as given and resolved: a cache
    reached through a link (~/.cache on another disk) is still found in its mount."""
    ordered = sorted(mounts, key=lambda m: len(m.host), reverse=True)

    def inside(path: str) -> str:
        for candidate in dict.fromkeys((path, os.path.realpath(path))):
            for mount in ordered:
                if candidate == mount.host or candidate.startswith(mount.host + "/"):
                    return mount.image + candidate[len(mount.host):]
        return path

    def within(flag: str) -> str:
        """A host path inside a flag (``-I/home/me/ggml/include``), as mounted."""
        for mount in ordered:
            at = flag.find(mount.host)
            end = at + len(mount.host)
            if at >= 0 and (end == len(flag) or flag[end] == "/"):
                return flag[:at] + mount.image + flag[end:]
        return flag

    library = job.library
    if library is not None:
        library = LibraryEnvironment(
            library.name, library.version, inside(library.root),
            tuple(inside(p) for p in library.include_dirs),
            tuple(inside(p) for p in library.python_path), library.packages)
    env = job.env
    if env is not None and env.cuobjdump:
        env = replace(env, cuobjdump=inside(env.cuobjdump))
    return replace(job, source=inside(job.source), workdir=inside(job.workdir), library=library,
                   case_dir=inside(job.case_dir) if job.case_dir else "",
                   flags=tuple(within(flag) for flag in job.flags),
                   env=env, prebuilt=inside(job.prebuilt) if job.prebuilt else None,
                   disassembler=inside(job.disassembler) if job.disassembler else None,
                   group=tuple({**member, "workdir": inside(member["workdir"])}
                               for member in job.group))


def remove_orphans(client: Any) -> list[str]:
    """Remove containers of runs on this host that died without cleaning up (SIGKILL).

    A run's id starts with its process id; a container whose run is gone would go on
    compiling into folders that a resumed run is about to reuse.
    """
    removed = []
    host = os.uname().nodename
    for container in leftover_containers(client):
        pid = str(container.labels.get(LABEL, "")).split("-")[0]
        if container.labels.get(HOST_LABEL) != host or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that run is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(str(container.name))
    return removed


class ContainerPool:
    """The run's containers, one per image, started on first use and all removed at the end."""

    def __init__(self, client: Any, mounts: Sequence[Mount], run_id: str, *, gpu: bool,
                 lifetime_s: float) -> None:
        remove_orphans(client)
        self.client, self.mounts, self.run_id = client, tuple(mounts), run_id
        self.gpu, self.lifetime_s = gpu, lifetime_s
        self._containers: dict[str, CellContainer | str] = {}
        self._lock = threading.Lock()
        self.closed = False

    def get(self, image: str) -> CellContainer:
        with self._lock:
            if self.closed:
                raise EnvironmentUnavailable("the run is stopping: no new containers")
            if image not in self._containers:
                try:
                    self._containers[image] = CellContainer(
                        self.client, image, self.mounts, self.run_id, gpu=self.gpu,
                        lifetime_s=self.lifetime_s)
                except EnvironmentUnavailable as exc:
                    self._containers[image] = str(exc)
            found = self._containers[image]
        if isinstance(found, str):
            raise EnvironmentUnavailable(found)
        return found

    def __iter__(self) -> Iterator[CellContainer]:
        return iter(c for c in self._containers.values() if isinstance(c, CellContainer))

    def close(self) -> None:
        with self._lock:
            self.closed = True
            started = [c for c in self._containers.values() if isinstance(c, CellContainer)]
            self._containers.clear()
        for container in started:
            container.stop()
        # Whatever of this run is still there (a removal the engine refused while an exec
        # was ending): ask again, by label, a few times.
        for _ in range(5):
            left = leftover_containers(self.client, self.run_id)
            if not left:
                return
            for container in left:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
            time.sleep(0.5)


# Distinct uids for the cells running at once in one run's containers.
MAX_CELL_UIDS = 256


class ContainerExecutor:
    """Runs cell workers inside the run's toolkit containers (the docker provider)."""

    def __init__(self, client: Any, *, out: Path, cache: Path, corpus: Sequence[Path],
                 base_image: Callable[[], str | None], gpu: bool, lifetime_s: float,
                 compat: bool) -> None:
        package = Path(__file__).resolve().parents[2]  # the cudamatrix package, mounted read-only
        artifacts = (out / ARTIFACTS_DIR).resolve()
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
        # No container to run the cell's worker in: the pipeline, which runs there, never
        # starts, so the cell is its first stage saying why (as a job that cannot be made).
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
        variables = hermetic({"LD_LIBRARY_PATH": os.pathsep.join(folders)} if folders else {})
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
