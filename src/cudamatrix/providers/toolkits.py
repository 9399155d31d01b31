"""Where a run's toolkits come from: one class per provider behind one protocol.

The run asks a provider for a toolkit by version and gets an `Environment`, or an
`EnvironmentUnavailable` saying why not; the provider also says which kind of executor its
cells need (processes here, or its toolkits' containers) and with what, and the run makes
it from the executors' own registry (orchestrator/executors/__init__.py): a provider
never builds one.
Whether cells execute on this machine (`local`) is the provider's fact, so the features
that need this machine's own programs (a named host compiler, clang, a project's build
tools) ask it instead of comparing provider names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..common import plugins
from ..common.bounded_fetch import AnswerRefused
from ..common.up_to_date import InputLedger
from ..config.matrix import Matrix
from ..errors import EnvironmentUnavailable, Failure, UserError
from ..stages.cell.environment import Environment
from .debian import (
    nvcc_unavailable,
    prepare_debian_nvcc,
    shared_cudart_dirs,
    unpack_debian_nvcc,
)
from .docker import BASE_GCC, build_toolkit_image
from .host import host_root, prepare_host
from .host_compiler import choose_gcc, installed_compiler, installed_gcc
from .tree import nvcc_archs
from .wheels import prepare_toolkit


class ToolkitNotHere(EnvironmentUnavailable):
    """The provider has no such toolkit, by its nature (a host install is one version):
    the run's selection, not something the user has to fix."""


class Notes(Protocol):
    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class ProviderSetting:
    """What the run makes its provider from: the matrix, the cache, where to say things,
    the run's ledger, and the container options (the docker provider's; the others ignore
    them)."""

    matrix: Matrix
    cache: Path
    notes: Notes
    # What the run read: a provider watches every file a toolkit it hands out rests on (an
    # install's marker, a program found on PATH), or the run's "up to date" answer would
    # stand on a toolkit installed again since.
    ledger: InputLedger
    containers: Path
    flavour: str
    client: Callable[[], object]  # the Docker engine's client, asked for on first use
    base_image: Callable[[], str | None]
    container_timeout: float
    cuda_compat: bool


@dataclass(frozen=True)
class CellSite:
    """What an executor needs of the run: the folder cells write to, the case folders
    they read, whether they may use the GPU, and whether a cell's GPU stages go to its
    GPU's server (one context per GPU) or run in a context of the cell's own; where to
    say what the run should hear (a GPU left out)."""

    out: Path
    corpus: tuple[Path, ...]
    gpu: bool
    gpu_server: bool = True
    say: Callable[[str], None] | None = None
    # Where the GPU servers keep the driver's PTX JIT (None: cold, as --no-compile-cache).
    jit_cache: Path | None = None
    # Cells the run runs at once (--jobs): a GPU's servers, whose PTX-JIT loads are CPU
    # work, are at most as many (executors/gpus.py slots_per_gpu).
    jobs: int = 1


@dataclass(frozen=True)
class ExecutorChoice:
    """The executor a provider's cells need: a kind the executors' registry knows
    ("local", "containers") and what that kind is made with."""

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)


class ToolkitProvider(Protocol):
    """A source of toolkits: ``wheels``, ``host`` or ``docker``."""

    name: str
    # Cells run on this machine, with its programs; False: each in its toolkit's container.
    local: bool
    # Why a run with it cannot be known up to date, "" where every toolkit it hands out is
    # watched in the ledger (the docker provider's images are not). Optional for a plugin
    # written before it was asked (`unwatched_reason`).
    unwatched: str

    def toolkit(self, version: str) -> Environment:
        """The toolkit `version`, prepared; EnvironmentUnavailable when it cannot be. Every
        file it rests on is watched in the setting's ledger."""
        ...

    def executor(self, site: CellSite) -> ExecutorChoice:
        """Which executor runs the cells of this provider's toolkits, and with what."""
        ...

    def host_compiler(self, name: str) -> tuple[str, str] | Failure:
        """A host compiler a case or the tier names for nvcc (``g++-11``), as the cells
        will find it (path, version); or why they cannot have it."""
        ...


class _LocalCells:
    """Cells as processes of this machine (the wheels and host providers)."""

    local = True
    unwatched = ""
    ledger: InputLedger

    def executor(self, site: CellSite) -> ExecutorChoice:
        return ExecutorChoice("local", {"gpu_server": site.gpu and site.gpu_server,
                                        "say": site.say, "jit_cache": site.jit_cache,
                                        "jobs": site.jobs})

    def host_compiler(self, name: str) -> tuple[str, str] | Failure:
        found = installed_compiler(name)
        if found is None:
            return Failure(f"no {name} on this machine for nvcc's -ccbin (install it)")
        self.ledger.watch_program(found[0])
        return found


class WheelsToolkits(_LocalCells):
    """NVIDIA's PyPI wheels, installed into the cache; nvcc from Debian's archive for the
    releases whose wheels carry none and Debian packages (11.8, 12.4)."""

    name = "wheels"

    def __init__(self, matrix: Matrix, cache: Path, notes: Notes, ledger: InputLedger) -> None:
        self.matrix, self.cache, self.notes, self.ledger = matrix, cache, notes, ledger

    @classmethod
    def made_for(cls, setting: ProviderSetting) -> WheelsToolkits:
        return cls(setting.matrix, setting.cache, setting.notes, setting.ledger)

    def toolkit(self, version: str) -> Environment:
        declared = self.matrix.toolkits.get(version)
        suite = declared.debian if declared is not None else None
        if suite is None:
            return self._wheels(version)
        # Debian's nvcc fetched and unpacked beside the wheels' install, not after it: a
        # first run's first toolkit, before which nothing compiles, took 13.3 s, 6.5 s of
        # them Debian's after the wheels' (issue 72).
        self.notes.note(f"toolkit {version}: nvcc from Debian {suite}'s nvidia-cuda-toolkit")
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cudamatrix-debian") as side:
            unpacking = side.submit(unpack_debian_nvcc, suite, version, self.cache, self.ledger)
            env = self._wheels(version)
            unpacked = unpacking.exception()
        return self._with_debian_nvcc(env, version, suite, unpacked)

    def _wheels(self, version: str) -> Environment:
        return replace(prepare_toolkit(self.matrix, version, self.cache, self.ledger),
                       from_wheels=True)

    def _with_debian_nvcc(self, env: Environment, version: str, suite: str,
                          unpacked: BaseException | None) -> Environment:
        """The wheels' toolkit with Debian's nvcc of the same release (the wheels of the
        releases the matrix names a suite for carry none: matrix.toml), and the host
        compiler that nvcc accepts; `unpacked` is what stopped its fetch or unpack."""
        toolkit = self.matrix.toolkits[version]
        if env.nvcc is not None:
            return env
        try:
            if unpacked is not None:
                raise unpacked
            got = prepare_debian_nvcc(suite, version, self.cache, env.include_dirs,
                                      env.library_dirs, self.ledger)
        except AnswerRefused as exc:  # tampered with, or endless: not prepared, an error
            raise AnswerRefused(nvcc_unavailable(version, suite, exc)) from None
        except (EnvironmentUnavailable, OSError) as exc:
            return replace(env, nvcc_unusable=nvcc_unavailable(version, suite, exc))
        host, why = None, None
        if toolkit.gcc_max:
            gccs = installed_gcc()
            for program in gccs.values():
                self.ledger.watch_program(program)
            host, why = choose_gcc(version, toolkit.gcc_max, gccs)
        tools = {**env.tool_versions, "nvcc": got.version, "nvcc_from": got.package}
        if host:  # as a case's own is recorded: the program and its full version
            found = installed_compiler(host)
            if found:
                self.ledger.watch_program(found[0])
            tools["host_compiler"] = f"{Path(host).name} {found[1] if found else 'unknown'}"
        return replace(env, nvcc=got.nvcc, tool_versions=tools, host_compiler=host,
                       nvcc_archs=nvcc_archs(Path(got.nvcc)),
                       nvcc_unusable=why,
                       library_dirs=(*env.library_dirs, *shared_cudart_dirs(env, self.cache)))


class HostToolkits(_LocalCells):
    """The toolkit installed on this machine ($CUDA_HOME or /usr/local/cuda): one version."""

    name = "host"

    def __init__(self, ledger: InputLedger) -> None:
        self._found: Environment | EnvironmentUnavailable | None = None
        self.ledger = ledger

    @classmethod
    def made_for(cls, setting: ProviderSetting) -> HostToolkits:
        return cls(setting.ledger)

    def toolkit(self, version: str) -> Environment:
        if self._found is None:
            try:
                self._found = prepare_host()
            except EnvironmentUnavailable as exc:
                self._found = exc
        if isinstance(self._found, EnvironmentUnavailable):
            raise self._found
        self.ledger.watch(host_root(), 1)  # an install changed, or another put there
        self.ledger.watch(host_root() / "bin", 1)
        if self._found.toolkit != version:
            raise ToolkitNotHere(f"the host provider has toolkit {self._found.toolkit} only")
        return self._found


class DockerToolkits:
    """An image per toolkit, built locally from its Dockerfile; every cell runs in one."""

    name, local = "docker", False
    unwatched = "containers: their images are not watched"

    def __init__(self, matrix: Matrix, cache: Path, containers: Path, flavour: str,
                 client: Callable[[], object], notes: Notes, ledger: InputLedger, *,
                 base_image: Callable[[], str | None], lifetime_s: float,
                 compat: bool) -> None:
        self.matrix, self.cache, self.containers, self.flavour = matrix, cache, containers, flavour
        self.client, self.notes = client, notes  # the engine's client, asked for on first use
        self.ledger = ledger
        # The image of cells without a toolkit; how long a container lives; NVIDIA's
        # forward-compatibility libraries first on the library path.
        self.base_image, self.lifetime_s, self.compat = base_image, lifetime_s, compat

    @classmethod
    def made_for(cls, setting: ProviderSetting) -> DockerToolkits:
        return cls(setting.matrix, setting.cache, setting.containers, setting.flavour,
                   setting.client, setting.notes, setting.ledger, base_image=setting.base_image,
                   lifetime_s=setting.container_timeout, compat=setting.cuda_compat)

    def toolkit(self, version: str) -> Environment:
        image = build_toolkit_image(self.client(), self.matrix, version, self.cache,
                                    self.containers, self.ledger, self.flavour)
        self.notes.note(f"image {image.tag}: {'built' if image.built else 'reused'}")
        return image.environment

    def executor(self, site: CellSite) -> ExecutorChoice:
        return ExecutorChoice("containers", {
            "client": self.client(), "out": site.out, "cache": self.cache,
            "corpus": site.corpus, "base_image": self.base_image, "gpu": site.gpu,
            "lifetime_s": self.lifetime_s, "compat": self.compat})

    def host_compiler(self, name: str) -> tuple[str, str] | Failure:
        """The wheels images' GCCs (the base image's ``g++-N``); no other compiler."""
        have = ", ".join(f"g++-{major}" for major in BASE_GCC)
        named = re.fullmatch(r"g\+\+-(\d+)", name)
        if self.flavour == "wheels" and named and int(named.group(1)) in BASE_GCC:
            return f"/usr/bin/{name}", f"{named.group(1)} (image)"
        if self.flavour == "wheels":
            return Failure(f"the toolkit images carry {have}, not {name}: another host "
                           "compiler runs with the wheels or host provider")
        return Failure(f"NVIDIA's images carry their own GCC, not {name}: a named host "
                       "compiler runs with the wheels or host provider")


ProviderFactory = Callable[[ProviderSetting], ToolkitProvider]


def unwatched_reason(provider: ToolkitProvider) -> str:
    """Why a run with `provider` is never up to date; "" for a plugin that does not say,
    as before the protocol asked (its cells were then taken as watched, as a local one's)."""
    return str(getattr(provider, "unwatched", ""))


@functools.cache
def toolkit_providers() -> dict[str, ProviderFactory]:
    """Every provider by the name --provider gives it, from the ``cudamatrix.providers``
    entry points (the built-ins above, and a plugin's: a class with ``made_for`` or any
    callable from a `ProviderSetting` to a `ToolkitProvider`)."""
    found: dict[str, ProviderFactory] = {}
    for name, loaded in plugins.load(plugins.PROVIDERS).items():
        if not callable(loaded):
            raise UserError(f"entry point {plugins.PROVIDERS} {name}: {loaded!r} is not a "
                            "callable making a toolkit provider from a ProviderSetting")
        found[name] = loaded
    return found
