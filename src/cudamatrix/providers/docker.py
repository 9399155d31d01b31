"""The docker provider: each toolkit in its own image, each cell run inside its container.

Images are built locally through the docker SDK and tagged by a hash of everything
that goes into them (Dockerfile, build arguments, the toolkit's exact packages,
the base image), so a changed input builds a new image and an unchanged one is
reused. Two flavours:

- ``wheels``: the toolkit the wheels provider installed, copied onto a local Debian
  base image (``cudamatrix/base:bookworm``, made from a debootstrap rootfs by
  ``docker import`` when missing): needs no registry;
- ``nvidia``: NVIDIA's pinned ``nvidia/cuda:<version>-devel`` images, for runners
  that can pull them (``containers/nvidia-images.toml``).

A toolkit's container runs for the whole run (``sleep`` up to the per-container time
limit) with no network, a read-only root file system and corpus, a non-root user,
memory and process limits, and GPUs only when the run has one; each cell is a
``docker exec`` of the cell worker under the cell's own time limit.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import EnvironmentUnavailable, UserError
from ..matrix import Matrix
from ..stages.job import Job
from ..tomlfile import load_toml
from .environment import Environment, LibraryEnvironment
from .wheels import prepare_toolkit

BASE_TAG = "cudamatrix/base:bookworm"
BASE_PACKAGES = "python3,python3-packaging,g++"
IMAGE_REPOSITORY = "cudamatrix/toolkit"
LABEL = "org.cudamatrix.run"  # "<pid>-<start time>" of the run that owns a container
HOST_LABEL = "org.cudamatrix.host"
CELL_UID = 10001
TOOLKIT_IN_IMAGE = "/opt/cudamatrix/toolkit"
PYTHON_IN_IMAGE = "/opt/cudamatrix/python"
WORK_IN_IMAGE = "/work"
CUDA_COMPAT_IN_IMAGE = "/usr/local/cuda/compat"  # where NVIDIA's devel images keep cuda-compat
DEFAULT_MEMORY = "8g"
DEFAULT_PIDS = 1024
DEFAULT_CONTAINER_TIMEOUT_S = 6 * 3600


@functools.cache
def engine() -> Any:
    """A connected docker SDK client (one per process), or EnvironmentUnavailable saying why."""
    try:
        import docker
    except ImportError:
        raise EnvironmentUnavailable("the docker SDK is not installed (pip install docker)") \
            from None
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # the SDK raises several kinds for "no engine"
        raise EnvironmentUnavailable(
            f"no Docker engine answers ({type(exc).__name__}: {str(exc)[:200]}); start one "
            "(dockerd) or use --provider wheels") from None
    return client


def image_exists(client: Any, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_base_image(client: Any, tag: str = BASE_TAG,
                      mirror: str = "http://deb.debian.org/debian") -> str:
    """The local Debian base image; made with debootstrap + import the first time."""
    if image_exists(client, tag):
        return str(client.images.get(tag).id)
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        raise EnvironmentUnavailable(
            f"base image {tag} is missing and cannot be made here: it needs root and "
            "debootstrap (apt-get install debootstrap), or run the package's "
            "data/containers/base.sh")
    with tempfile.TemporaryDirectory(prefix="cudamatrix-rootfs-") as folder:
        root = Path(folder) / "rootfs"
        done = subprocess.run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                               "bookworm", str(root), mirror],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
            raise EnvironmentUnavailable(f"debootstrap of the base image failed: {tail}")
        archive = Path(folder) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(archive), "."], check=True)
        repository, _, version = tag.partition(":")
        client.api.import_image(src=str(archive), repository=repository, tag=version or "latest",
                                changes=['CMD ["/bin/bash"]'])
    return str(client.images.get(tag).id)


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _link_tree(source: Path, target: Path) -> None:
    """Hard-link a tree into a build context (copying where links cannot cross)."""
    def place(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=place, symlinks=True)


@dataclass(frozen=True)
class ToolkitImage:
    tag: str
    environment: Environment  # paths as seen inside the image
    built: bool  # False when an existing image was reused


def build_toolkit_image(client: Any, matrix: Matrix, toolkit: str, cache: Path,
                        containers: Path, flavour: str = "wheels") -> ToolkitImage:
    """The toolkit's image (built now, or reused by its content hash) and its environment."""
    if flavour == "nvidia":
        return _nvidia_image(client, toolkit, cache, containers)
    dockerfile = containers / "Dockerfile.wheels"
    if not dockerfile.is_file():
        raise UserError(f"{dockerfile}: missing (the docker provider builds from it; "
                        "--containers names the folder)")
    host = prepare_toolkit(matrix, toolkit, cache)
    base_id = ensure_base_image(client)
    buildargs = {"BASE": BASE_TAG, "TOOLKIT": toolkit, "CELL_UID": str(CELL_UID)}
    key = _digest(dockerfile.read_text(), buildargs, host.packages, base_id)
    tag = f"{IMAGE_REPOSITORY}:{toolkit}-wheels-{key[:12]}"

    def inside(path: str) -> str:  # the tree is copied whole to TOOLKIT_IN_IMAGE
        return TOOLKIT_IN_IMAGE + path.removeprefix(host.root)

    environment = replace(
        host, provider="docker", root=TOOLKIT_IN_IMAGE, image=tag,
        nvrtc=inside(host.nvrtc) if host.nvrtc else None,
        ptxas=inside(host.ptxas) if host.ptxas else None,
        nvcc=inside(host.nvcc) if host.nvcc else None,
        include_dirs=tuple(inside(p) for p in host.include_dirs),
        library_dirs=tuple(inside(p) for p in host.library_dirs))
    if image_exists(client, tag):
        return ToolkitImage(tag, environment, built=False)
    with tempfile.TemporaryDirectory(prefix="cudamatrix-context-", dir=cache) as folder:
        context = Path(folder)
        shutil.copy2(dockerfile, context / "Dockerfile")
        _link_tree(Path(host.root), context / "toolkit")
        _build(client, context, tag, buildargs, toolkit)
    return ToolkitImage(tag, environment, built=True)


def _build(client: Any, context: Path, tag: str, buildargs: dict[str, str],
           toolkit: str, network: str = "none") -> None:
    import docker

    try:
        client.images.build(path=str(context), tag=tag, buildargs=buildargs, rm=True,
                            forcerm=True, network_mode=network,
                            labels={"org.cudamatrix.toolkit": toolkit})
    except docker.errors.BuildError as exc:
        lines = [str(item.get("stream") or item.get("error") or "").strip()
                 for item in exc.build_log]
        tail = " | ".join(ln for ln in lines if ln)[-600:]
        raise EnvironmentUnavailable(f"docker build of {tag} failed: {exc.msg}: {tail}") \
            from None
    except docker.errors.APIError as exc:
        raise EnvironmentUnavailable(f"docker build of {tag} failed: {exc.explanation}") \
            from None


def _nvidia_image(client: Any, toolkit: str, cache: Path, containers: Path) -> ToolkitImage:
    table = load_toml(containers / "nvidia-images.toml").get("images", {})
    if toolkit not in table:
        raise EnvironmentUnavailable(
            f"containers/nvidia-images.toml pins no NVIDIA image for toolkit {toolkit}")
    dockerfile = containers / "Dockerfile.nvidia"
    buildargs = {"IMAGE": table[toolkit], "TOOLKIT": toolkit, "CELL_UID": str(CELL_UID)}
    key = _digest(dockerfile.read_text(), buildargs)
    tag = f"{IMAGE_REPOSITORY}:{toolkit}-nvidia-{key[:12]}"
    major = toolkit.split(".")[0]
    environment = Environment(
        toolkit=toolkit, provider="docker", root="/usr/local/cuda", image=tag,
        nvrtc=f"/usr/local/cuda/lib64/libnvrtc.so.{major}", ptxas="/usr/local/cuda/bin/ptxas",
        nvcc="/usr/local/cuda/bin/nvcc", include_dirs=("/usr/local/cuda/include",),
        library_dirs=("/usr/local/cuda/lib64",), tool_versions={"image": table[toolkit]})
    if image_exists(client, tag):
        return ToolkitImage(tag, environment, built=False)
    with tempfile.TemporaryDirectory(prefix="cudamatrix-context-", dir=cache) as folder:
        shutil.copy2(dockerfile, Path(folder) / "Dockerfile")
        _build(client, Path(folder), tag, buildargs, toolkit, network="default")
    return ToolkitImage(tag, environment, built=True)


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
        name = f"cudamatrix-{run_id}-{_digest(image)[:8]}"
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
                   "cudamatrix.stages.worker", job_path]
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
    """The job with every host path rewritten to where its mount puts it in the container."""
    ordered = sorted(mounts, key=lambda m: len(m.host), reverse=True)

    def inside(path: str) -> str:
        for mount in ordered:
            if path == mount.host or path.startswith(mount.host + "/"):
                return mount.image + path[len(mount.host):]
        return path

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
                   env=env, prebuilt=inside(job.prebuilt) if job.prebuilt else None)


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
