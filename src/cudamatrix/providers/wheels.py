"""The wheels provider: CUDA toolkits and libraries from PyPI, cached per version.

Each environment is a ``pip install --target`` folder, built under a temporary
name and renamed into place only when complete, so an interrupted install never
leaves a half environment behind. A lock file keeps concurrent runs (shards on
one machine) from installing the same toolkit twice.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from ..common.files import read_marker, remove_leftovers, write_atomic
from ..common.interruption import preparation_process, signal_group
from ..common.locks import folder_lock
from ..common.log_line import say
from ..common.up_to_date import InputLedger
from ..common.versions import INSTALLED
from ..config.matrix import Library, Matrix
from ..config.sources import Source
from ..errors import EnvironmentUnavailable, RunOutOfTime
from ..stages.cell.environment import Environment, LibraryEnvironment, installed_packages
from .release_headers import HEADERS_MARKER, is_header, release_headers
from .tree import TREE_READER_VERSION, describe_toolkit_tree, header_folders
from .wheel_index import IndexUnreachable, extract_downloaded, extract_members, wheel_for

MARKER = "cudamatrix-environment.json"
PIP_TIMEOUT_S = 900


def install(target: Path, requirements: Sequence[str], *, ledger: InputLedger,
            with_deps: bool = False, env: Mapping[str, str] | None = None) -> Path:
    """Install `requirements` into `target` once; later calls reuse it. `env`: the
    variables pip (and a package it builds from source) runs with: a CUDA package built
    for a toolkit sees that toolkit's CUDA_HOME."""
    marker = target / MARKER
    wanted = {"requirements": list(requirements), "with_deps": with_deps}
    # What the run's cells compile against is this install, known by its marker: another
    # run installing beside it in the same cache changes nothing this run read.
    ledger.watch(marker, 0)
    with folder_lock(target):
        if read_marker(marker) == wanted:
            return target
        remove_leftovers(target)
        staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        # pip's raw progress ("Progress N of M" a line), turned into a line of bytes now
        # and then: a toolkit's wheels are the longest wait of a first run.
        command = [sys.executable, "-m", "pip", "install", *pip_progress(),
                   "--disable-pip-version-check", "--no-compile", "--target", str(staging),
                   *requirements]
        if not with_deps:
            command.insert(4, "--no-deps")
        try:
            returncode, output = run_pip(command, PIP_TIMEOUT_S,
                                         {**os.environ, **env} if env else None)
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise EnvironmentUnavailable(
                f"pip install {' '.join(requirements)} took over {PIP_TIMEOUT_S} s") from None
        if returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            # pip's own errors where it said some (its other lines share the stream).
            lines = [ln for ln in output if ln.startswith("ERROR")] or [
                ln for ln in output if ln.strip() and not ln.startswith("WARNING")]
            raise EnvironmentUnavailable(
                f"pip could not install {' '.join(requirements)}: "
                + " | ".join(lines[-3:] or ["(no message)"]))
        (staging / MARKER).write_text(json.dumps(wanted))
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


@functools.cache
def pip_progress() -> list[str]:
    """pip's raw progress where this pip has it (24.1 and newer: a GPU image's older pip
    refused the option, and with it every install); else pip quiet, as before."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        raw = Version(installed("pip")) >= Version("24.1")
    except (PackageNotFoundError, InvalidVersion):
        raw = False
    return ["--progress-bar", "raw"] if raw else ["--quiet"]


# A download is said when it is at least this large, at most every this many seconds.
SAID_BYTES, SAID_EVERY_S = 20_000_000, 5.0


def run_pip(command: list[str], timeout_s: float, env: Mapping[str, str] | None
            ) -> tuple[int, list[str]]:
    """pip's exit status and its output's lines; each large download said on stderr as it
    goes ("downloading NAME: 120 of 480 MB"), from pip's raw progress lines."""
    import threading
    import time

    lines: list[str] = []
    name, said_at = "", 0.0
    with preparation_process(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=dict(env) if env is not None else None) as pip:
        # A pip that hangs without a word is stopped all the same.
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            signal_group(pip, signal.SIGKILL)

        watchdog = threading.Timer(timeout_s, stop)
        watchdog.start()
        try:
            assert pip.stdout is not None
            for line in pip.stdout:
                line = line.rstrip("\n")
                if line.lstrip().startswith("Downloading "):
                    name = line.split()[1]
                if not line.startswith("Progress "):
                    lines.append(line)
                    continue
                words = line.split()
                if len(words) != 4 or not (words[1].isdigit() and words[3].isdigit()):
                    continue
                done, total = int(words[1]), int(words[3])
                now = time.monotonic()
                if total >= SAID_BYTES and (now - said_at >= SAID_EVERY_S or done == total):
                    said_at = now
                    say(f"downloading {name or 'a wheel'}: {done / 1e6:.0f} of "
                        f"{total / 1e6:.0f} MB", stderr=True)  # the name is the index's
            pip.wait()
        finally:
            watchdog.cancel()
        if fired.is_set():
            raise subprocess.TimeoutExpired(command, timeout_s)
    return pip.returncode, lines


DESCRIBED = "cudamatrix-described.json"


def prepare_toolkit(matrix: Matrix, toolkit: str, cache: Path, ledger: InputLedger
                    ) -> Environment:
    """The compilers' wheels of `toolkit`, and every other component's headers beside
    them (release_headers.py): the release as a full install has it."""
    compilers = matrix.wheel_requirements(toolkit)
    # The headers after the install, not beside it: a fetch beside it could not be stopped
    # by an interrupt while a request hung (the Ctrl-C e2e test's hanging index).
    root = install(cache / "toolkits" / f"wheels-{toolkit}", compilers, ledger=ledger)
    components = release_headers(root, toolkit, compilers, ledger)
    # Describing a tree walks thousands of files and runs each tool once; a finished
    # install never changes, so its description is kept beside it.
    described = root / DESCRIBED
    installed = (root / MARKER).read_text() + (root / HEADERS_MARKER).read_text()
    kept = _kept_description(described, toolkit, installed, root)
    if kept is not None:
        return kept
    # The components whose headers alone are here are named as such: what a compile read.
    packages = {**installed_packages(root),
                **{f"{name} (headers)": version for name, version in components.items()}}
    env = describe_toolkit_tree(toolkit, "wheels", root, packages, root / "nvidia")
    write_atomic(described, json.dumps({"marker": installed, "root": str(root),
                                        "reader": TREE_READER_VERSION,
                                        "environment": env.to_dict()}))
    return env


def _kept_description(described: Path, toolkit: str, installed: str, root: Path
                      ) -> Environment | None:
    """The toolkit's description kept beside its install, or None where there is none, it
    describes another install, or it is damaged (a truncated one was a JSONDecodeError on
    every run of the toolkit): described again. A description is taken only where it
    reads back as the very document the tool wrote, so a field of the wrong type is
    damage here, never a traceback in a cell."""
    data = read_marker(described)
    if not isinstance(data, dict) or data.get("marker") != installed \
            or data.get("root") != str(root) or data.get("reader") != TREE_READER_VERSION \
            or not isinstance(data.get("environment"), dict):
        return None
    try:
        env = Environment.from_dict(data["environment"])
    except (TypeError, ValueError):
        return None
    if env.toolkit != toolkit or json.loads(json.dumps(env.to_dict())) != data["environment"]:
        return None
    return env


def _installed_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def prepare_library(matrix: Matrix, name: str, version: str, cuda_major: int | None,
                    cache: Path, ledger: InputLedger) -> LibraryEnvironment:
    """Install one library version: CUTLASS's headers, or a Python package with its needs."""
    library = matrix.libraries[name]
    if library.headers and version == INSTALLED:
        return installed_header_library(library)
    if library.headers:
        return prepare_header_library(library, version, cache, ledger)
    package = library.package_for(cuda_major or 12)
    suffix = f"-cu{cuda_major}" if "{major}" in library.package else ""
    named = name if name == "cutlass" else _install_named_by(matrix, name)
    target = cache / "libraries" / f"{named}-{version}{suffix}"
    if name == "cutlass":
        # The C++ headers are all a CUDA build needs; the Python side pulls in far more.
        root = install(target, [f"{package}=={version}.*"], ledger=ledger)
        source = root / "cutlass_library" / "source"
        includes = (source / "include", source / "tools" / "util" / "include")
        return LibraryEnvironment(name, version, str(root),
                                  include_dirs=tuple(str(p) for p in includes if p.is_dir()),
                                  packages=installed_packages(root))
    if library.headers_from:
        root = install(target, [f"{package}=={version}", *library.requires], ledger=ledger,
                       with_deps=True)
        headers = wheel_headers(_headers_folder(cache, name, library), library.headers_from,
                                ledger, library.files)
        return LibraryEnvironment(name, version, str(root), python_path=(str(root),),
                                  include_dirs=headers,
                                  packages={**installed_packages(root),
                                            **{r.split("==")[0] + " (headers)": r.split("==")[-1]
                                               for r in library.headers_from}})
    system = _installed_version(package)
    if system is not None and Version(system) == Version(version):
        # Already importable here (a GPU machine's image): no network needed.
        return LibraryEnvironment(name, version, "(this Python)", packages={package: system})
    root = install(target, [f"{package}=={version}", *library.requires], ledger=ledger,
                   with_deps=True)
    return LibraryEnvironment(name, version, str(root), python_path=(str(root),),
                              packages=installed_packages(root))


def _install_named_by(matrix: Matrix, name: str) -> str:
    """Whose name a Python library's install folder takes: the first library the matrix
    declares that installs the same package with the same needs. cutlass_python and
    cutlass_torch are one nvidia-cutlass with cuda-python<13 (the torch headers apart), so
    one install serves both: a first run installed each version twice, 7 CPU s a time
    beside the compiles on 2 cores (issue 72). A library of its own keeps its own name
    (the folder docs/gpu-runners.md tells an offline runner to fill)."""
    library = matrix.libraries[name]
    return next(other for other, declared in matrix.libraries.items()
                if other != "cutlass" and not declared.headers
                and (declared.package, declared.packages, declared.requires)
                == (library.package, library.packages, library.requires))


def _headers_folder(cache: Path, name: str, library: Library) -> Path:
    """Where a library's `headers_from` are extracted: once for every version that names
    the same wheels and files (cutlass_torch 3.4.1 and 3.5.0 read torch 2.5.1's), where
    each version extracted its own copy."""
    named = hashlib.sha256(json.dumps([library.headers_from, library.files]).encode())
    return cache / "libraries" / f"{name}-headers-{named.hexdigest()[:12]}"


def prepare_header_library(library: Library, version: str, cache: Path, ledger: InputLedger
                           ) -> LibraryEnvironment:
    """A header library's release: the headers of its wheel (read by ranges, as a
    toolkit's components are), extracted once; its include folders, ahead of the
    toolkit's on every compile of the cells that name it."""
    package = library.package_of(version)
    target = cache / "libraries" / f"{library.name}-{version}-headers"
    marker = target / MARKER
    pin = f"{package}=={version}.*"
    wanted: dict[str, object] = {"headers_of": pin, "include": list(library.include)}
    if library.files:
        wanted["files"] = list(library.files)
    ledger.watch(marker, 0)

    def member(name: str) -> bool:
        if any(fnmatch.fnmatch(name, glob) for glob in library.files):
            return True
        if library.include:
            return any(fnmatch.fnmatch(name, f"{glob.rstrip('/')}/*")
                       for glob in library.include)
        return is_header(name)

    with folder_lock(target):
        kept = read_marker(marker)
        kept = kept if isinstance(kept, dict) else {}
        if {k: kept.get(k) for k in wanted} != wanted:  # "found" is what it found
            staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            requirement = Requirement(pin)
            try:
                try:
                    wheel = wheel_for(requirement)
                    extract_members(wheel, member, staging)
                    found = str(wheel.version)
                except IndexUnreachable as unreachable:
                    try:
                        extract_downloaded(str(requirement), member, staging, PIP_TIMEOUT_S)
                    except RunOutOfTime:
                        raise
                    except EnvironmentUnavailable as fallback:  # the index's words first:
                        # pip's "no matching distribution" hides a refused connection
                        raise EnvironmentUnavailable(f"{unreachable}; {fallback}") from None
                    found = version
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            staging.mkdir(parents=True, exist_ok=True)
            (staging / MARKER).write_text(json.dumps({**wanted, "found": found}))
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        said = read_marker(marker)
        found = said.get("found", version) if isinstance(said, dict) else version
    if library.include:
        folders = [p for glob in library.include for p in sorted(target.glob(glob)) if p.is_dir()]
    else:
        folders = header_folders(target)
    if not folders:
        raise EnvironmentUnavailable(f"{package} {version}: its wheel has no include folder")
    # The library's own first: cccl/ inside an include folder is where CCCL's headers are.
    folders.sort(key=lambda p: (p.name != "cccl", str(p)))
    return LibraryEnvironment(library.name, version, str(target),
                              include_dirs=tuple(str(p) for p in folders),
                              packages={f"{package} (headers)": found})


def installed_header_library(library: Library) -> LibraryEnvironment:
    """A header library as this Python has it installed (`versions = ["installed"]`: the
    GPU machine's own torch, where nothing can be fetched): its package's folder found
    without importing it, its include globs read there."""
    import importlib.util

    package = library.package_of("0") if library.packages else library.package
    module = package.replace("-", "_")
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise EnvironmentUnavailable(f"{library.name} {INSTALLED}: this Python "
                                     f"({sys.executable}) has no {module} installed")
    root = Path(next(iter(found.submodule_search_locations))).parent
    folders = [p for glob in library.include for p in sorted(root.glob(glob)) if p.is_dir()] \
        if library.include else header_folders(root / module)
    if not folders:
        raise EnvironmentUnavailable(f"{library.name} {INSTALLED}: {root / module} has no "
                                     "include folder (a build without its headers)")
    version = _installed_version(package) or INSTALLED
    return LibraryEnvironment(library.name, INSTALLED, str(root),
                              include_dirs=tuple(str(p) for p in folders),
                              packages={f"{package} (installed)": version})


def _cutlass_headers(root: Path) -> tuple[str, ...]:
    """CUTLASS's include folders in a checkout (include/, tools/util/include) or in the
    nvidia-cutlass package's layout (cutlass_library/source/...)."""
    for base in (root, root / "cutlass_library" / "source"):
        if (base / "include" / "cutlass" / "cutlass.h").is_file():
            return tuple(str(p) for p in (base / "include", base / "tools" / "util" / "include")
                         if p.is_dir())
    raise EnvironmentUnavailable(f"{root}: no include/cutlass/cutlass.h (not a CUTLASS tree)")


def prepare_library_source(matrix: Matrix, name: str, version: str, source: Source,
                           cache: Path, ledger: InputLedger, toolkit: str | None = None,
                           build_env: Mapping[str, str] | None = None) -> LibraryEnvironment:
    """A library version from a source (sources.py) rather than the index: CUTLASS's
    headers straight from a checkout or unpacked sdist; a Python package installed from its
    wheel file, or built by pip from its folder (once per toolkit: `build_env` holds that
    toolkit's CUDA_HOME)."""
    library = matrix.libraries[name]
    described = {f"{name} (source)": source.label}
    if name == "cutlass" and not source.is_wheel:
        return LibraryEnvironment(name, version, str(source.path),
                                  include_dirs=_cutlass_headers(source.path), packages=described)
    suffix = f"-{toolkit}" if toolkit else ""
    target = cache / "libraries" / f"{name}-source-{source.digest[:16]}{suffix}"
    root = install(target, [str(source.path), *library.requires], ledger=ledger,
                   with_deps=True, env=build_env)
    if name == "cutlass":
        return LibraryEnvironment(name, version, str(root), include_dirs=_cutlass_headers(root),
                                  packages={**installed_packages(root), **described})
    return LibraryEnvironment(name, version, str(root), python_path=(str(root),),
                              packages={**installed_packages(root), **described})


# The CUDA component whose wheel holds a library a case links (-lcublas): its short name,
# as the cuda-toolkit metapackage's components are named (nvidia-<name>[-cuNN]).
LINKED_COMPONENTS = {"cublas": "cublas", "cublasLt": "cublas", "curand": "curand",
                     "cufft": "cufft", "cufftw": "cufft", "cusparse": "cusparse",
                     "cusolver": "cusolver", "nvJitLink": "nvjitlink", "nvjpeg": "nvjpeg",
                     "nvToolsExt": "nvtx", "cupti": "cuda-cupti", "nvfatbin": "nvfatbin",
                     **{f"npp{part}": "npp" for part in ("c", "ial", "icc", "idei", "if", "ig",
                                                         "im", "ist", "isu", "itc", "s")}}


def linked_components(flags: Sequence[str]) -> dict[str, str]:
    """The components a case's flags link (`-lcublas`, `-l cublasLt`), each by the flag."""
    found: dict[str, str] = {}
    for index, flag in enumerate(flags):
        name = flag[2:] if flag.startswith("-l") and len(flag) > 2 else (
            flags[index + 1] if flag == "-l" and index + 1 < len(flags) else "")
        if name in LINKED_COMPONENTS:
            found.setdefault(LINKED_COMPONENTS[name], f"-l{name}")
    return found


# The files where a build names the libraries it links, and at most how much of each is
# read: CMake (CUDA::cublas, find_library), setuptools (libraries=["cublas"]), make.
BUILD_FILES = ("CMakeLists.txt", "*.cmake", "setup.py", "setup.cfg", "pyproject.toml",
               "Makefile", "makefile", "GNUmakefile", "meson.build")
_BUILD_FILE_BYTES = 1 << 20
_BUILD_FILES_READ = 400
# A library as a build names it: CMake's imported target (CUDA::cublasLt, CUDA::curand
# _static), a link flag (-lcublas), or a quoted name in a list of libraries.
_NAMED_LIBRARY = re.compile(
    r"CUDA::(?P<target>[A-Za-z]+?)(?:_static|_lapack_static)?\b"
    r"|(?<![\w-])-l(?P<flag>[A-Za-z]+)\b"
    r"|[\"'](?P<quoted>[A-Za-z]+)[\"']")


def build_components(project: Path) -> dict[str, str]:
    """The toolkit components a project's build links, each by how the build names it
    (`CUDA::cublasLt`), from its build files (CMakeLists.txt and *.cmake, setup.py, a
    Makefile...) in the project's tree: what FindCUDAToolkit or a link step will look for
    in $CUDA_HOME, which a wheels toolkit holds only once the component's wheel is in."""
    found: dict[str, str] = {}
    read = 0
    for pattern in BUILD_FILES:
        for path in sorted(project.rglob(pattern)):
            if read >= _BUILD_FILES_READ or not path.is_file() or path.is_symlink():
                continue
            read += 1
            with path.open("rb") as handle:
                text = handle.read(_BUILD_FILE_BYTES).decode(errors="replace")
            for match in _NAMED_LIBRARY.finditer(text):
                name = match["target"] or match["flag"] or match["quoted"]
                component = LINKED_COMPONENTS.get(name)
                if component is not None:
                    found.setdefault(component, match.group(0).strip("\"'"))
    return found


def prepare_component_libraries(env: Environment, component: str, cache: Path,
                                ledger: InputLedger) -> LibraryEnvironment:
    """A component's libraries for a toolkit from wheels, installed only when a case links
    them (its headers are in the toolkit already): the same build of the release as its
    headers (release_headers.py's record), and a folder of links with the unversioned
    names a link step asks for (`libcublas.so` for `libcublas.so.12`)."""
    root = Path(env.root)
    kept = read_marker(root / HEADERS_MARKER)
    taken = kept.get("components") if isinstance(kept, dict) else None
    if not isinstance(taken, dict) or not all(isinstance(v, str) for v in taken.values()):
        raise EnvironmentUnavailable(f"toolkit {env.toolkit}: no record of its release's "
                                     "components (prepare it again)") from None
    name = next((n for n in taken if re.sub(r"^nvidia-|-cu\d+$", "", n) == component), None)
    if name is None:
        raise EnvironmentUnavailable(f"toolkit {env.toolkit}: its release has no {component} "
                                     f"component (components: {', '.join(sorted(taken))})")
    target = cache / "toolkits" / f"wheels-{env.toolkit}-lib-{component}"
    install(target, [f"{name}=={taken[name]}"], ledger=ledger)
    folders = sorted({str(p.parent) for p in target.glob("nvidia/**/lib*.so*")})
    links = target / "links"
    with folder_lock(links):
        unversioned_links(links, map(Path, folders))
    return LibraryEnvironment(component, taken[name], str(target),
                              python_path=(), include_dirs=(),
                              packages={f"{name} (libraries)": taken[name]},
                              library_dirs=(str(links), *folders))


def unversioned_links(links: Path, folders: Iterable[Path]) -> None:
    """In `links`, each library of `folders` by the name a link step asks for
    (`libcublas.so` for `libcublas.so.12`), pointing at it by a relative path, so the
    cache stays whole when it is moved or copied (CI restores it elsewhere, a test seeds a
    private cache from it); a link left dangling by an earlier absolute one is made again."""
    links.mkdir(exist_ok=True)
    for folder in folders:
        for versioned in folder.glob("lib*.so.*"):
            plain = links / (versioned.name.split(".so.")[0] + ".so")
            if os.path.lexists(plain) and not plain.exists():
                plain.unlink()
            if not os.path.lexists(plain):
                plain.symlink_to(os.path.relpath(versioned, links))


def prepare_build_tools(requires: Sequence[str], cache: Path, ledger: InputLedger
                        ) -> LibraryEnvironment:
    """A build's tools (cmake, scikit-build-core, pybind11, ...) installed once per set of
    requirements and interpreter: their folder goes on PYTHONPATH and its ``bin`` on PATH.
    pip writes the interpreter that ran it into each script's ``#!`` line (``bin/cmake``),
    so an install made by another Python (a virtual environment since removed) is not
    this one's: its scripts could not even start."""
    key = hashlib.sha256("\n".join([*sorted(requires), sys.executable]).encode()).hexdigest()[:16]
    root = install(cache / "build-tools" / key, list(requires), ledger=ledger, with_deps=True)
    return LibraryEnvironment("build tools", ",".join(requires), str(root),
                              python_path=(str(root),), packages=installed_packages(root))


def wheel_headers(target: Path, requirements: Sequence[str], ledger: InputLedger,
                  files: Sequence[str] = ()) -> tuple[str, ...]:
    """The include folders of wheels, extracted once: each wheel's members under an
    ``include/`` folder, and those matching `files` (globs: torch's cpp_extension.py and
    TorchConfig.cmake, which a build script reads its flags from), read by ranges as a
    header library's are (a few megabytes of torch's 900 MB wheel), else from the wheel
    pip downloads whole (an index that serves no ranges)."""
    marker = target / MARKER
    wanted: dict[str, object] = {"headers_from": list(requirements)}
    if files:
        wanted["files"] = list(files)
    ledger.watch(marker, 0)

    def member(name: str) -> bool:
        return "/include/" in name or any(fnmatch.fnmatch(name, glob) for glob in files)

    with folder_lock(target):
        if read_marker(marker) != wanted:
            staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                for requirement in requirements:
                    try:
                        extract_members(wheel_for(Requirement(requirement)), member, staging)
                    except IndexUnreachable:
                        extract_downloaded(requirement, member, staging, PIP_TIMEOUT_S)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            staging.mkdir(parents=True, exist_ok=True)
            (staging / MARKER).write_text(json.dumps(wanted))
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
    folders = sorted({str(p.parent) for p in target.glob("**/include/*")
                      if p.parent.name == "include"})
    # PyTorch's own C++ API lives one level down, as torch.utils.cpp_extension adds it.
    api = target / "torch" / "include" / "torch" / "csrc" / "api" / "include"
    return tuple(dict.fromkeys(folders + ([str(api)] if api.is_dir() else [])))
