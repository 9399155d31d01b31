"""The docker provider: each toolkit in its own image (its cells run in its container:
executors/containers.py).

Images are built locally through the docker SDK and tagged by a hash of everything
that goes into them (Dockerfile, build arguments, the toolkit's exact packages,
the base image), so a changed input builds a new image and an unchanged one is
reused. Two flavours:

- ``wheels``: the toolkit the wheels provider installed, copied onto a local Debian
  base image (``cudamatrix/base:bookworm``, made from a debootstrap rootfs by
  ``docker import`` when missing): needs no registry;
- ``nvidia``: NVIDIA's pinned ``nvidia/cuda:<version>-devel`` images, for runners
  that can pull them (``containers/nvidia-images.toml``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import EnvironmentUnavailable, UserError
from ..matrix import Matrix
from ..tomlfile import load_toml
from .environment import Environment
from .wheels import prepare_toolkit

BASE_TAG = "cudamatrix/base:bookworm"
BASE_PACKAGES = "python3,python3-packaging,g++"
IMAGE_REPOSITORY = "cudamatrix/toolkit"
CELL_UID = 10001
TOOLKIT_IN_IMAGE = "/opt/cudamatrix/toolkit"
PYTHON_IN_IMAGE = "/opt/cudamatrix/python"
WORK_IN_IMAGE = "/work"
CUDA_COMPAT_IN_IMAGE = "/usr/local/cuda/compat"  # where NVIDIA's devel images keep cuda-compat
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


def content_digest(*parts: object) -> str:
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
    key = content_digest(dockerfile.read_text(), buildargs, host.packages, base_id)
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
    key = content_digest(dockerfile.read_text(), buildargs)
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
