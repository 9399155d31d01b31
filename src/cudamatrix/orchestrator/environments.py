"""The run's toolkit and library environments, from the provider the run settled on.

Each environment is prepared once, on first demand, under its own lock: cells ask
from many threads, and the run prepares the next ones ahead of them (prefetch.py), so
one toolkit's download never holds up a cell whose toolkit is ready, nor another
toolkit's download. A failure is kept as its reason: the user's to fix, reported once
the other cells are done.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from ..common.up_to_date import InputLedger
from ..config.defaults import CONTAINERS
from ..config.matrix import Matrix
from ..config.options import DEFAULT_CONTAINER_TIMEOUT_S
from ..config.sources import Source, SourceSpec, fetch
from ..errors import EnvironmentUnavailable, Failure, UserError
from ..providers import Environment, LibraryEnvironment
from ..providers.clang_cuda import cuda_path, find_clang
from ..providers.docker import BASE_TAG, engine, ensure_base_image
from ..providers.python_headers import prepare_python_headers
from ..providers.sass_tools import prepare_sass_tools
from ..providers.toolkit_layouts import ToolkitLayouts
from ..providers.toolkits import (
    CellSite,
    Notes,
    ProviderSetting,
    ToolkitNotHere,
    toolkit_providers,
    unwatched_reason,
)
from ..providers.wheels import (
    prepare_build_tools,
    prepare_component_libraries,
    prepare_library,
    prepare_library_source,
)
from ..stages.cell.environment import PythonHeaders
from .executors import Executor, make_executor


class Environments:
    """Toolkit and library environments, prepared once per run and shared by every cell."""

    def __init__(self, matrix: Matrix, provider: str, cache: Path, progress: Notes,
                 containers: Path = CONTAINERS, flavour: str = "wheels", *,
                 ledger: InputLedger,
                 container_timeout: float = DEFAULT_CONTAINER_TIMEOUT_S,
                 cuda_compat: bool = False) -> None:
        # Absolute: every compiler and tool found under the cache runs in a cell's own
        # folder, where a path relative to this process's folder names nothing.
        cache = cache.absolute()
        self.matrix, self.provider, self.cache, self.progress = matrix, provider, cache, progress
        # What the run read: every environment prepared here is watched in it.
        self.ledger = ledger
        self._base: str | None = None
        self.toolkits: dict[str, Environment | Failure] = {}
        self.libraries: dict[tuple[str, str, int | None], LibraryEnvironment | Failure] = {}
        # The provider by its name; the container options are its to keep (the others
        # ignore them).
        self.toolkit_provider = toolkit_providers()[provider](ProviderSetting(
            matrix, cache, progress, ledger, containers, flavour, self.docker_client,
            self.base_image,
            container_timeout, cuda_compat))
        if unwatched_reason(self.toolkit_provider):
            ledger.refuse(unwatched_reason(self.toolkit_provider))
        self.sources: dict[str, Source | Failure] = {}
        # What could not be installed or found, by environment: the user's to fix.
        self.failures: dict[str, str] = {}
        # Cells ask from many threads; each environment must be prepared exactly once, and
        # each under its own lock: one lock for all held every cell of a ready toolkit
        # behind another toolkit's download.
        self._locks: dict[object, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        # The toolkits laid out as build systems and CuPy expect them (folders of links).
        self.layouts = ToolkitLayouts(cache)
        self._sass_tools: list[str | None] = []  # prepared once, on first use

    @property
    def local(self) -> bool:
        """Cells run on this machine, with its own programs (not in containers)."""
        return self.toolkit_provider.local

    def executor(self, site: CellSite) -> Executor:
        """What runs the cells: the executor the provider's cells need, made by the run."""
        choice = self.toolkit_provider.executor(site)
        return make_executor(choice.kind, choice.options)

    def _once(self, key: object) -> threading.Lock:
        """The lock that prepares the environment `key` names (one per environment)."""
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    def docker_client(self) -> object:
        return engine()  # one connection per process, made when the provider was chosen

    def base_image(self) -> str | None:
        """The docker provider's base image (for cells that bring their own toolchain)."""
        with self._once("docker base image"):
            if self._base is None:
                try:
                    ensure_base_image(self.docker_client())
                    self._base = BASE_TAG
                except EnvironmentUnavailable as exc:
                    self.failures["docker base image"] = str(exc)
                    self._base = ""
            return self._base or None

    def source(self, spec: str, base: Path) -> Source | Failure:
        """A build's project (path, sdist, wheel, git), fetched once per run; or why not."""
        key = f"{spec}@{base}"
        with self._once(("source", key)):
            if key not in self.sources:
                started = time.monotonic()
                try:
                    parsed = SourceSpec.parse(spec, str(base))
                    self.sources[key] = fetch(parsed, base, self.cache)
                    if parsed.scheme in ("path", "file"):  # read in place: an input as it is
                        self.ledger.watch(base / parsed.value)
                    self.progress.note(f"source {spec}: ready "
                                       f"({time.monotonic() - started:.1f}s)")
                except (EnvironmentUnavailable, UserError, OSError) as exc:
                    self.failures[spec] = str(exc)
                    self.sources[key] = Failure(str(exc))
            return self.sources[key]

    def build_tools(self, requires: tuple[str, ...]) -> LibraryEnvironment | Failure:
        """A build's own tools from PyPI (cmake, scikit-build-core, pybind11), installed
        once per set of requirements; or why not."""
        key = ("(build tools)", ",".join(requires), None)
        with self._once(key):
            if key not in self.libraries:
                self.progress.note(f"preparing build tools {' '.join(requires)}")
                try:
                    self.libraries[key] = prepare_build_tools(requires, self.cache, self.ledger)
                except EnvironmentUnavailable as exc:
                    self.failures[f"build tools {', '.join(requires)}"] = str(exc)
                    self.libraries[key] = Failure(str(exc))
            return self.libraries[key]

    def with_clang(self, env: Environment) -> Environment:
        """The toolkit with clang as its CUDA compiler, made once per run and toolkit."""
        with self._once(("toolkit", env.toolkit)):
            known = self.toolkits.get(env.toolkit)
            if isinstance(known, Environment) and (known.clang or known.clang_unusable):
                return known
            return self._make_clang(env)

    def _make_clang(self, env: Environment) -> Environment:
        found = find_clang()
        if not self.local:
            made = replace(env, clang_unusable="the clang frontend runs with the wheels or host "
                                               "provider: the toolkit images carry no clang")
        elif found is None:
            made = replace(env, clang_unusable="no clang++ on this machine for the clang "
                                               "frontend (apt-get install clang-19)")
        else:
            try:
                folder = cuda_path(env, self.cache, self.ledger)
                self.ledger.watch_program(found.path)
                made = replace(env, clang=found.path, clang_cuda_path=str(folder),
                               tool_versions={**env.tool_versions, "clang": found.version})
            except (EnvironmentUnavailable, OSError) as exc:
                made = replace(env, clang_unusable=f"clang cannot use toolkit {env.toolkit}: "
                                                   f"{exc}")
        self.toolkits[env.toolkit] = made
        return made

    def sass_tools(self) -> str | None:
        """The run's cuobjdump (NVIDIA's 13.x wheels, once per run), for a cell whose own
        toolkit is not prepared here (a prebuilt one)."""
        with self._once("sass tools"):
            if not self._sass_tools:
                self._sass_tools.append(prepare_sass_tools(self.cache, self.ledger))
            return self._sass_tools[0]

    def toolkit(self, version: str, wanted: bool = True) -> Environment | Failure:
        """The environment, or the reason it could not be had. A toolkit the cells could do
        without (`wanted=False`: a prebuilt library's runtime) is tried, but its failure is
        neither the run's environment error nor kept for a cell that needs it."""
        with self._once(("toolkit", version)):
            return self._toolkit(version, wanted)

    def _toolkit(self, version: str, wanted: bool = True) -> Environment | Failure:
        if version in self.toolkits:
            return self.toolkits[version]
        started = time.monotonic()
        self.progress.note(f"preparing toolkit {version} ({self.provider})")
        result: Environment | Failure
        users = False  # whether the failure is the user's to fix
        try:
            result = self.toolkit_provider.toolkit(version)
        except ToolkitNotHere as exc:  # a run's selection, not the user's to fix
            result = Failure(str(exc))
        except EnvironmentUnavailable as exc:
            result, users = Failure(str(exc)), True
        except OSError as exc:  # the cache cannot hold it (a file in the way, a full disk)
            result, users = Failure(f"{exc.strerror or exc}: {exc.filename or self.cache}"), True
        if isinstance(result, Failure) and users and wanted:
            self.failures[f"toolkit {version}"] = result.reason
        if isinstance(result, Environment) and result.cuobjdump is None:
            # In containers too: the run mounts the cache's tools folder into them.
            result = replace(result, cuobjdump=prepare_sass_tools(self.cache, self.ledger))
        if isinstance(result, Environment):
            for tool, accepted in (("ptxas", result.known_archs), ("NVRTC", result.nvrtc_archs),
                                   ("nvcc", result.nvcc_archs)):
                for said in self.matrix.arch_disagreements(version, accepted, tool) \
                        if accepted else ():
                    self.progress.note(f"warning: {said}")
        state = "ready" if isinstance(result, Environment) else f"unavailable: {result}"
        self.progress.note(f"toolkit {version}: {state} ({time.monotonic() - started:.1f}s)")
        if wanted or isinstance(result, Environment):  # an unwanted failure: a cell that
            self.toolkits[version] = result            # needs the toolkit tries again
        return result

    def library(self, name: str, version: str, cuda_major: int | None,
                toolkit: Environment | None = None) -> LibraryEnvironment | Failure:
        """A library version for a cell; one from a source the project names is built (where
        it must be) with the cell's toolkit, once per toolkit."""
        spec = self.matrix.libraries[name].sources.get(version)
        if spec is not None:
            return self._library_from_source(name, version, spec, toolkit)
        key = (name, version, cuda_major)
        with self._once(key):
            return self._library(key)

    def _library_from_source(self, name: str, version: str, spec: str,
                             toolkit: Environment | None) -> LibraryEnvironment | Failure:
        # A project's paths are absolute already; the matrix file's own start from its folder.
        source = self.source(spec, self.matrix.path.parent)
        if isinstance(source, Failure):
            return source
        builds = not source.is_wheel and name != "cutlass"
        key = (name, version, None) if not builds else (name, f"{version}@{toolkit.toolkit}"
                                                        if toolkit else version, None)
        build_env: dict[str, str] = {}
        if builds and toolkit is not None and toolkit.nvcc is not None:
            home = str(self.layouts.cuda_home(toolkit))
            build_env = {"CUDA_HOME": home, "CUDA_PATH": home, "CUDACXX": f"{home}/bin/nvcc",
                         "PATH": f"{home}/bin:{os.environ.get('PATH', '')}"}
        with self._once(key):
            if key not in self.libraries:
                started = time.monotonic()
                self.progress.note(f"preparing {name} {version} from {spec}")
                try:
                    self.libraries[key] = prepare_library_source(
                        self.matrix, name, version, source, self.cache, self.ledger,
                        toolkit.toolkit if builds and toolkit else None, build_env)
                except (EnvironmentUnavailable, OSError) as exc:
                    self.failures[f"{name} {version}"] = str(exc)
                    self.libraries[key] = Failure(str(exc))
                self.progress.note(f"{name} {version}: done ({time.monotonic() - started:.1f}s)")
            return self.libraries[key]

    def component_libraries(self, env: Environment, component: str, flag: str
                            ) -> LibraryEnvironment | Failure:
        """A component's libraries, for the cells whose flags link them (`flag`), once per
        toolkit; said in the run's progress, as every environment is."""
        key = (f"{component} (libraries)", env.toolkit, None)
        with self._once(key):
            if key not in self.libraries:
                started = time.monotonic()
                try:
                    got: LibraryEnvironment | Failure = prepare_component_libraries(
                        env, component, self.cache, self.ledger)
                except (EnvironmentUnavailable, OSError) as exc:
                    self.failures[f"{component} libraries {env.toolkit}"] = str(exc)
                    got = Failure(str(exc))
                said = ", ".join(f"{n} {v}" for n, v in got.packages.items()) \
                    if isinstance(got, LibraryEnvironment) else f"unavailable: {got}"
                self.progress.note(f"toolkit {env.toolkit}: {component} libraries for {flag}: "
                                   f"{said} ({time.monotonic() - started:.1f}s)")
                self.libraries[key] = got
            return self.libraries[key]

    def _library(self, key: tuple[str, str, int | None]) -> LibraryEnvironment | Failure:
        name, version, cuda_major = key
        if key not in self.libraries:
            started = time.monotonic()
            self.progress.note(f"preparing {name} {version}")
            try:
                self.libraries[key] = prepare_library(self.matrix, name, version, cuda_major,
                                                      self.cache, self.ledger)
            except EnvironmentUnavailable as exc:
                self.failures[f"{name} {version}"] = str(exc)
                self.libraries[key] = Failure(str(exc))
            self.progress.note(f"{name} {version}: done ({time.monotonic() - started:.1f}s)")
        return self.libraries[key]

    def python_headers(self, version: str) -> PythonHeaders | Failure:
        """Python `version`'s headers for the cells of the python axis ("3.13": Debian's
        libpython3.13-dev), prepared once a run, failures kept and said in the run's
        progress as every environment's."""
        prepared: dict[str, PythonHeaders | Failure] = self.__dict__.setdefault(
            "_python_headers", {})  # made on first use: no other method of the class moves
        with self._once(("python headers", version)):
            if version not in prepared:
                started = time.monotonic()
                self.progress.note(f"preparing Python {version}'s headers")
                try:
                    prepared[version] = prepare_python_headers(version, self.cache, self.ledger)
                except (EnvironmentUnavailable, OSError) as exc:
                    self.failures[f"Python {version} headers"] = str(exc)
                    prepared[version] = Failure(str(exc))
                got = prepared[version]
                said = got.package if isinstance(got, PythonHeaders) else f"unavailable: {got}"
                self.progress.note(f"Python {version}'s headers: {said} "
                                   f"({time.monotonic() - started:.1f}s)")
            return prepared[version]
