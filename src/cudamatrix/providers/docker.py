"""The docker provider: each toolkit in its own image (its cells run in its container:
orchestrator/executors/containers.py).

Images are built locally through the docker SDK and tagged by a hash of everything
that goes into them (Dockerfile, build arguments, the toolkit's exact packages,
the base image), so a changed input builds a new image and an unchanged one is
reused. Two flavours:

- ``wheels``: the toolkit the wheels provider installed, copied onto a local Debian
  base image (``cudamatrix/base:bookworm-<digest of its packages>``, made from a
  debootstrap rootfs by
  ``docker import`` when missing): needs no registry. Where the wheels carry no nvcc
  and Debian packages the release (11.8 in bookworm, 12.4 in trixie), Debian's nvcc
  goes into the image too, as the wheels provider uses it here, with the newest of
  the base image's GCCs (11, 12) that release accepts;
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

from ..common.bounded_fetch import AnswerRefused
from ..common.interruption import run_preparation
from ..common.tomlfile import load_toml
from ..common.up_to_date import InputLedger
from ..config.matrix import Matrix
from ..errors import EnvironmentUnavailable, Failure, UserError
from ..stages.cell.environment import Environment
from .debian import (
    DEBIAN_NVCC_BIN,
    MARKER,
    DebianNvcc,
    nvcc_profile,
    nvcc_unavailable,
    prepare_debian_nvcc,
)
from .tree import nvcc_archs
from .wheels import prepare_toolkit

# g++-11 beside bookworm's g++ 12 (nvcc 11.8 accepts GCC up to 11); Python's headers for
# the extensions a case builds (a PyTorch CUDAExtension includes Python.h).
BASE_PACKAGES = "python3,python3-dev,python3-packaging,g++,g++-11"
BASE_GCC = (11, 12)  # the GCC majors of the base image, each as /usr/bin/g++-N
# Named by its package list: another list is another image, never an older base taken
# for this one (config/data/containers/base.sh reads both from here).
BASE_TAG = ("cudamatrix/base:bookworm-"
            + hashlib.sha256(BASE_PACKAGES.encode()).hexdigest()[:8])
IMAGE_REPOSITORY = "cudamatrix/toolkit"
CELL_UID = 10001
TOOLKIT_IN_IMAGE = "/opt/cudamatrix/toolkit"
DEBIAN_IN_IMAGE = "/opt/cudamatrix/debian"  # Debian's nvcc, for releases whose wheels lack it
PYTHON_IN_IMAGE = "/opt/cudamatrix/python"
WORK_IN_IMAGE = "/work"
CUDA_COMPAT_IN_IMAGE = "/usr/local/cuda/compat"  # where NVIDIA's devel images keep cuda-compat


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
            "config/data/containers/base.sh")
    with tempfile.TemporaryDirectory(prefix="cudamatrix-rootfs-") as folder:
        root = Path(folder) / "rootfs"
        done = run_preparation(["debootstrap", "--variant=minbase",
                                f"--include={BASE_PACKAGES}", "bookworm", str(root), mirror])
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


def _link_tree(source: Path, target: Path, ignore: Any = None) -> None:
    """Hard-link a tree into a build context (copying where links cannot cross)."""
    def place(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=place, symlinks=True, ignore=ignore)


@dataclass(frozen=True)
class ToolkitImage:
    tag: str
    environment: Environment  # paths as seen inside the image
    built: bool  # False when an existing image was reused


def build_toolkit_image(client: Any, matrix: Matrix, toolkit: str, cache: Path,
                        containers: Path, ledger: InputLedger, flavour: str = "wheels"
                        ) -> ToolkitImage:
    """The toolkit's image (built now, or reused by its content hash) and its environment."""
    if flavour == "nvidia":
        return _nvidia_image(client, toolkit, cache, containers)
    dockerfile = containers / "Dockerfile.wheels"
    if not dockerfile.is_file():
        raise UserError(f"{dockerfile}: missing (the docker provider builds from it; "
                        "--containers names the folder)")
    host = prepare_toolkit(matrix, toolkit, cache, ledger)
    base_id = ensure_base_image(client)
    debian = _debian_nvcc(matrix, toolkit, host, cache, ledger)
    buildargs = {"BASE": BASE_TAG, "TOOLKIT": toolkit, "CELL_UID": str(CELL_UID)}
    key = content_digest(dockerfile.read_text(), buildargs, host.packages, base_id,
                         debian.facts if isinstance(debian, DebianLayer) else None)
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
    if isinstance(debian, Failure):
        environment = replace(environment, nvcc_unusable=debian.reason)
    elif debian is not None:
        environment = debian.environment(environment)
    if image_exists(client, tag):
        return ToolkitImage(tag, environment, built=False)
    with tempfile.TemporaryDirectory(prefix="cudamatrix-context-", dir=cache) as folder:
        context = Path(folder)
        shutil.copy2(dockerfile, context / "Dockerfile")
        _link_tree(Path(host.root), context / "toolkit")
        if isinstance(debian, DebianLayer):
            debian.lay_out(context / "debian", environment)
        else:
            (context / "debian").mkdir()  # the Dockerfile copies it all the same
        _build(client, context, tag, buildargs, toolkit)
    return ToolkitImage(tag, environment, built=True)


@dataclass(frozen=True)
class DebianLayer:
    """Debian's nvcc for a toolkit whose wheels carry none, as the image holds it."""

    nvcc: DebianNvcc  # the unpacked package in the cache
    gcc: int  # the base image's GCC major it builds with

    @property
    def facts(self) -> tuple[str, str, int]:
        """What the image's content hash must hold of it."""
        return self.nvcc.package, self.nvcc.version, self.gcc

    @property
    def bin_in_image(self) -> str:
        return f"{DEBIAN_IN_IMAGE}/{DEBIAN_NVCC_BIN}"

    def environment(self, image: Environment) -> Environment:
        """The image's toolkit with this nvcc, its host compiler and a linkable cudart."""
        cudart = [f"{DEBIAN_IN_IMAGE}/cudart"] if _wheel_cudart_in_image(image) else []
        tools = {**image.tool_versions, "nvcc": self.nvcc.version,
                 "nvcc_from": self.nvcc.package, "host_compiler": f"g++-{self.gcc} (image)"}
        return replace(image, nvcc=f"{self.bin_in_image}/nvcc", tool_versions=tools,
                       nvcc_archs=nvcc_archs(Path(self.nvcc.nvcc)),  # the same binary, here
                       host_compiler=f"/usr/bin/g++-{self.gcc}",
                       library_dirs=(*image.library_dirs, *cudart))

    def lay_out(self, folder: Path, image: Environment) -> None:
        """The unpacked tree into the build context, with an nvcc.profile of the image's
        paths (written anew: the tree's own is a link to the cache's file)."""
        _link_tree(self.nvcc.root, folder, ignore=shutil.ignore_patterns(MARKER))
        profile = folder / DEBIAN_NVCC_BIN / "nvcc.profile"
        profile.unlink(missing_ok=True)
        profile.write_text(nvcc_profile(image.include_dirs, image.library_dirs))
        runtime = _wheel_cudart_in_image(image)
        if runtime:  # the name `-lcudart` looks for, as shared_cudart_dirs gives it here
            (folder / "cudart").mkdir()
            (folder / "cudart" / "libcudart.so").symlink_to(runtime)


def _wheel_cudart_in_image(image: Environment) -> str | None:
    for folder in image.library_dirs:
        if folder.endswith("/nvidia/cuda_runtime/lib"):
            return f"{folder}/libcudart.so.{image.toolkit.split('.')[0]}"
    return None


def _debian_nvcc(matrix: Matrix, toolkit: str, host: Environment, cache: Path,
                 ledger: InputLedger) -> DebianLayer | Failure | None:
    """Debian's nvcc for the image where the wheels have none and Debian packages the
    release; why not, where it cannot be had or no GCC of the image fits; else None."""
    entry = matrix.toolkits.get(toolkit)
    if host.nvcc is not None or entry is None or entry.debian is None:
        return None
    try:
        got = prepare_debian_nvcc(entry.debian, toolkit, cache, host.include_dirs,
                                  host.library_dirs, ledger)
    except AnswerRefused as exc:  # tampered with, or endless: not prepared, as the wheels'
        raise AnswerRefused(nvcc_unavailable(toolkit, entry.debian, exc)) from None
    except (EnvironmentUnavailable, OSError) as exc:
        return Failure(nvcc_unavailable(toolkit, entry.debian, exc))
    fitting = [major for major in BASE_GCC if entry.gcc_max is None or major <= entry.gcc_max]
    if not fitting:
        return Failure(f"toolkit {toolkit}'s nvcc accepts GCC up to {entry.gcc_max}; the base "
                       f"image has {', '.join(f'g++ {m}' for m in BASE_GCC)}")
    return DebianLayer(got, max(fitting))


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
