"""Where a run's toolkits come from: one class per provider behind one protocol.

The run asks a provider for a toolkit by version and gets an `Environment`, or an
`EnvironmentUnavailable` saying why not; whether the run's cells then execute on this
machine or in containers (`local`) is the provider's fact too, so the features that need
this machine's own programs (a named host compiler, clang, a project's build tools) ask
it instead of comparing provider names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..errors import EnvironmentUnavailable
from ..matrix import Matrix
from .debian import prepare_debian_nvcc, shared_cudart_dirs
from .docker import build_toolkit_image
from .environment import Environment
from .host import prepare_host
from .host_compiler import choose_gcc, installed_compiler
from .wheels import prepare_toolkit


class ToolkitNotHere(EnvironmentUnavailable):
    """The provider has no such toolkit, by its nature (a host install is one version):
    the run's selection, not something the user has to fix."""


class Notes(Protocol):
    def note(self, text: str) -> None: ...


class ToolkitProvider(Protocol):
    """A source of toolkits: ``wheels``, ``host`` or ``docker``."""

    name: str
    # Cells run on this machine, with its programs; False: each in its toolkit's container.
    local: bool

    def toolkit(self, version: str) -> Environment:
        """The toolkit `version`, prepared; EnvironmentUnavailable when it cannot be."""
        ...


class WheelsToolkits:
    """NVIDIA's PyPI wheels, installed into the cache; nvcc from Debian's archive for the
    releases whose wheels carry none and Debian packages (11.8, 12.4)."""

    name, local = "wheels", True

    def __init__(self, matrix: Matrix, cache: Path, notes: Notes) -> None:
        self.matrix, self.cache, self.notes = matrix, cache, notes

    def toolkit(self, version: str) -> Environment:
        return self._with_debian_nvcc(prepare_toolkit(self.matrix, version, self.cache), version)

    def _with_debian_nvcc(self, env: Environment, version: str) -> Environment:
        """A wheels toolkit without nvcc gets Debian's nvcc of the same release, where the
        matrix names one, and the host compiler that nvcc accepts."""
        toolkit = self.matrix.toolkits.get(version)
        if env.nvcc is not None or toolkit is None or toolkit.debian is None:
            return env
        self.notes.note(f"toolkit {version}: nvcc from Debian {toolkit.debian}'s "
                        "nvidia-cuda-toolkit")
        try:
            got = prepare_debian_nvcc(toolkit.debian, version, self.cache, env.include_dirs,
                                      env.library_dirs)
        except (EnvironmentUnavailable, OSError) as exc:
            return replace(env, nvcc_unusable=f"toolkit {version} (wheels) has no nvcc, and "
                                              f"Debian {toolkit.debian}'s could not be had: {exc}")
        host, why = choose_gcc(version, toolkit.gcc_max) if toolkit.gcc_max else (None, None)
        tools = {**env.tool_versions, "nvcc": got.version, "nvcc_from": got.package}
        if host:  # as a case's own is recorded: the program and its full version
            found = installed_compiler(host)
            tools["host_compiler"] = f"{Path(host).name} {found[1] if found else 'unknown'}"
        return replace(env, nvcc=got.nvcc, tool_versions=tools, host_compiler=host,
                       nvcc_unusable=why,
                       library_dirs=(*env.library_dirs, *shared_cudart_dirs(env, self.cache)))


class HostToolkits:
    """The toolkit installed on this machine ($CUDA_HOME or /usr/local/cuda): one version."""

    name, local = "host", True

    def __init__(self) -> None:
        self._found: Environment | EnvironmentUnavailable | None = None

    def toolkit(self, version: str) -> Environment:
        if self._found is None:
            try:
                self._found = prepare_host()
            except EnvironmentUnavailable as exc:
                self._found = exc
        if isinstance(self._found, EnvironmentUnavailable):
            raise self._found
        if self._found.toolkit != version:
            raise ToolkitNotHere(f"the host provider has toolkit {self._found.toolkit} only")
        return self._found


class DockerToolkits:
    """An image per toolkit, built locally from its Dockerfile; every cell runs in one."""

    name, local = "docker", False

    def __init__(self, matrix: Matrix, cache: Path, containers: Path, flavour: str,
                 client: Callable[[], object], notes: Notes) -> None:
        self.matrix, self.cache, self.containers, self.flavour = matrix, cache, containers, flavour
        self.client, self.notes = client, notes  # the engine's client, asked for on first use

    def toolkit(self, version: str) -> Environment:
        image = build_toolkit_image(self.client(), self.matrix, version, self.cache,
                                    self.containers, self.flavour)
        self.notes.note(f"image {image.tag}: {'built' if image.built else 'reused'}")
        return image.environment
