"""What a prepared toolkit offers, as plain data that crosses into cell workers."""

from __future__ import annotations

import sys
import sysconfig
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# What each frontend needs from a toolkit environment.


def _in_cccl(header: str) -> bool:
    """Whether a header lives in one of CCCL's folders (libcu++, CUB, Thrust)."""
    return header.split("/")[0] in ("cuda", "nv", "cub", "thrust")


@dataclass(frozen=True)
class Environment:
    """One toolkit, ready to compile: tool paths, include folders and exact versions."""

    toolkit: str
    provider: str
    root: str
    nvrtc: str | None = None
    ptxas: str | None = None
    nvcc: str | None = None
    include_dirs: tuple[str, ...] = ()
    library_dirs: tuple[str, ...] = ()
    packages: dict[str, str] = field(default_factory=dict)
    tool_versions: dict[str, str] = field(default_factory=dict)
    # The docker provider's image; paths above are then paths inside it.
    image: str | None = None
    # The real archs the toolkit's own ptxas accepts (empty: not known, nothing pruned).
    known_archs: tuple[str, ...] = ()
    # The plain archs its NVRTC names (nvrtcGetSupportedArchs): the same question asked twice.
    nvrtc_archs: tuple[str, ...] = ()
    # The plain archs its nvcc names (--list-gpu-code), where it has one.
    nvcc_archs: tuple[str, ...] = ()
    # Public headers (tree.PUBLIC_HEADERS) that no include folder of this toolkit holds.
    missing_headers: tuple[str, ...] = ()
    # cuobjdump (nvdisasm beside it) for SASS checks: the toolkit's own, or the 13.x wheels'.
    cuobjdump: str | None = None
    # The host compiler nvcc is given (-ccbin), when the run chose one.
    host_compiler: str | None = None
    # Why this toolkit's nvcc cannot build here (no GCC it accepts; Debian's nvcc could
    # not be fetched): its nvcc cells are skips that say so.
    nvcc_unusable: str | None = None
    # clang as a CUDA compiler: the clang++ and the CUDA-shaped folder it is given, or why not.
    clang: str | None = None
    clang_cuda_path: str | None = None
    clang_unusable: str | None = None
    # Its components are PyPI wheels in the run's cache, on this machine (the wheels
    # provider): the libraries of a component a case links are fetched when asked, a
    # classic CUDA folder is made of links, and nvcc comes from Debian where it comes.
    from_wheels: bool = False

    def missing_for(self, frontend: str, needs: tuple[str, ...]) -> str | None:
        """Why this environment cannot run `frontend` (which needs the tools `needs`), or
        None when it can."""
        for tool in needs:
            if tool == "nvcc" and self.nvcc_unusable:
                return self.nvcc_unusable
            if tool == "clang" and self.clang_unusable:
                return self.clang_unusable
            if getattr(self, tool) is None:
                where = ("; Debian packages nvcc for 11.8, 12.4 and 12.5 only, NVIDIA's images "
                         "(--docker-flavour nvidia) or a host install have the others"
                         if tool == "nvcc" and self.from_wheels else "")
                return (f"toolkit {self.toolkit} ({self.provider}) has no {tool}; "
                        f"the {frontend} frontend needs it{where}")
        return None

    def lacks_arch(self, arch: str) -> str | None:
        """Why this toolkit cannot build for `arch`, in its own words, or None when it can."""
        if not self.known_archs or arch in self.known_archs:
            return None
        ptxas = " ".join(filter(None, ("ptxas", self.tool_versions.get("ptxas"))))
        return (f"toolkit {self.toolkit} does not know {arch} (its {ptxas} accepts "
                f"{self.known_archs[0]} to {self.known_archs[-1]})")

    def lacks_header(self, header: str) -> str | None:
        """Why a kernel including `header` cannot compile here, when the toolkit's
        packages do not ship it; None when they do (the kernel's own mistake)."""
        # A header under CCCL's folders that this toolkit lacks, where its CCCL is known to
        # be incomplete, is the packages' fault too (<cuda/atomic> beside <cuda/pipeline>).
        cccl = _in_cccl(header) and any(_in_cccl(h) for h in self.missing_headers)
        if header not in self.missing_headers and not cccl:
            return None
        owners = ", ".join(f"{n} {v}" for n, v in sorted(self.packages.items())
                           if "cccl" in n) or "its packages"
        return f"toolkit {self.toolkit} ({self.provider}) ships no <{header}>: not in {owners}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Environment:
        data = dict(data)
        data["include_dirs"] = tuple(data.get("include_dirs", ()))
        data["library_dirs"] = tuple(data.get("library_dirs", ()))
        data["known_archs"] = tuple(data.get("known_archs", ()))
        data["nvrtc_archs"] = tuple(data.get("nvrtc_archs", ()))
        data["nvcc_archs"] = tuple(data.get("nvcc_archs", ()))
        data["missing_headers"] = tuple(data.get("missing_headers", ()))
        return cls(**data)


@dataclass(frozen=True)
class LibraryEnvironment:
    """A library version installed for cells: headers to include, or a Python path."""

    name: str
    version: str
    root: str
    include_dirs: tuple[str, ...] = ()
    python_path: tuple[str, ...] = ()
    packages: dict[str, str] = field(default_factory=dict)
    # Folders of shared libraries a link step and a load need (a component's libraries).
    library_dirs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LibraryEnvironment:
        data = dict(data)
        data["include_dirs"] = tuple(data.get("include_dirs", ()))
        data["python_path"] = tuple(data.get("python_path", ()))
        data["library_dirs"] = tuple(data.get("library_dirs", ()))
        return cls(**data)


@dataclass(frozen=True)
class PythonHeaders:
    """The Python headers a binding is compiled against (Python.h and pyconfig.h's
    folders) and the file-name suffix its library takes, as setuptools gives them: the
    interpreter's own, or a release's unpacked from Debian (providers/python_headers.py)."""

    version: str  # "3.13"
    include_dirs: tuple[str, ...]
    ext_suffix: str  # ".cpython-313-x86_64-linux-gnu.so"
    # Where they come from, as a cell's versions say it ("libpython3.13-dev 3.13.5-2
    # (trixie)"); empty for the interpreter's own.
    package: str = ""

    @classmethod
    def of_this_interpreter(cls) -> PythonHeaders:
        """The running interpreter's, as setuptools reads them (sysconfig)."""
        return cls(f"{sys.version_info.major}.{sys.version_info.minor}",
                   (sysconfig.get_paths()["include"],),
                   str(sysconfig.get_config_var("EXT_SUFFIX") or ".so"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PythonHeaders:
        return cls(**{**data, "include_dirs": tuple(data.get("include_dirs", ()))})


def installed_packages(root: Path) -> dict[str, str]:
    """Exact distribution versions from the dist-info folders pip left in `root`."""
    found = {}
    for meta in sorted(root.glob("*.dist-info/METADATA")):
        name = version = None
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Name: "):
                name = line[6:].strip()
            elif line.startswith("Version: "):
                version = line[9:].strip()
            if name and version:
                break
        if name and version:
            found[name] = version
    return found
