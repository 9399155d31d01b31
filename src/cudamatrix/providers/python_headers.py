"""Python's headers for a cell of the python axis: the interpreter's own, or a release's
from Debian's archive.

A PyTorch extension's binding includes ``Python.h`` (pybind11), and setuptools compiles
it with the headers of the Python that runs the build. A cell that names another Python
("3.13") is compiled against that release's headers as a user of that Python builds it:
Debian's ``libpython3.N-dev`` holds them (``usr/include/python3.N`` and, multiarch,
``pyconfig.h`` under ``usr/include/x86_64-linux-gnu/python3.N``, which the first folder's
``pyconfig.h`` includes by its path below ``usr/include``). PyPI has no package of
CPython's headers, and NVIDIA's and the python.org builds are installers, not archives
this tool can check; Debian's is signed. The first suite of SUITES whose ``main`` index
lists the package gives it; only the text its InRelease's signature covers is read
(common/signed_text.py), the index and the .deb are checked against their SHA-256
(debian.py's functions, as for Debian's nvcc), and ``dpkg-deb -x`` unpacks it once into
the cache.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..common.locks import folder_lock
from ..common.up_to_date import InputLedger
from ..common.versions import INSTALLED
from ..errors import EnvironmentUnavailable
from ..stages.cell.environment import PythonHeaders
from .debian import package_stanza, unpack_once, verified_index, verified_release

# Debian's suites, oldest first: the first that packages a release gives its headers
# (3.11 bookworm, 3.13 trixie, 3.14 forky and sid, as of 2026-11).
SUITES = ("bookworm", "trixie", "forky", "sid")
INDEX = "main/binary-amd64/Packages.xz"
MULTIARCH = "x86_64-linux-gnu"
MARKER = "cudamatrix-python-headers.json"


def package_name(version: str) -> str:
    """Debian's package of a release's headers: ``libpython3.13-dev``."""
    return f"libpython{version}-dev"


def ext_suffix(version: str) -> str:
    """The suffix CPython `version` gives an extension's library on x86-64 Linux."""
    return f".cpython-{version.replace('.', '')}-{MULTIARCH}.so"


def include_dirs(root: Path, version: str) -> tuple[str, ...]:
    """The unpacked package's include folders: Python.h's, pyconfig.h's (multiarch), and
    the usr/include above them, where a system's own compiler looks: Debian's
    python3.N/pyconfig.h is a wrapper that includes <x86_64-linux-gnu/python3.N/pyconfig.h>
    (without it, every binding stopped at that line). The package holds nothing else
    there."""
    include = root / "usr" / "include"
    return (str(include / f"python{version}"), str(include / MULTIARCH / f"python{version}"),
            str(include))


def releases_listed(text: str) -> list[str]:
    """The Python releases whose headers a Packages index lists (``3.13``), in order."""
    found = set(re.findall(r"^Package: libpython(3\.\d+)-dev$", text, re.MULTILINE))
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def _find(version: str) -> tuple[str, dict[str, str]]:
    """The first suite whose main index lists the release's headers, with its stanza; a
    release none lists raises, saying what each suite has."""
    package = package_name(version)
    had: list[str] = []
    for suite in SUITES:
        release = verified_release(suite)
        text = verified_index(release, suite, INDEX)
        entry = package_stanza(text, package)
        if entry is not None:
            return suite, entry
        had.append(f"{suite} {', '.join(releases_listed(text)) or 'none'}")
    raise EnvironmentUnavailable(f"Python {version}: no Debian suite packages {package} "
                                 f"({'; '.join(had)})")


def debian_headers(version: str, cache: Path, ledger: InputLedger) -> PythonHeaders:
    """Python `version`'s headers from Debian, unpacked once into the cache (its marker
    watched in `ledger`); a second run reads the marker and fetches nothing."""
    root = cache / "debian" / package_name(version)

    def find(staging: Path) -> tuple[dict[str, str], str]:
        suite, entry = _find(version)
        return entry, f"{entry['Package']} {entry['Version']} ({suite})"

    with folder_lock(root):  # a second run sharing the cache waits for this unpack
        facts = unpack_once(root, MARKER, ledger, "Debian's Python headers",
                            f"Debian {package_name(version)}", find)
    folders = include_dirs(root, version)
    for folder, header in zip(folders, ("Python.h", "pyconfig.h"), strict=False):
        if not (Path(folder) / header).is_file():
            raise EnvironmentUnavailable(f"{facts['package']} holds no {folder}/{header}")
    return PythonHeaders(version, folders, ext_suffix(version), str(facts["package"]))


def prepare_python_headers(value: str, cache: Path, ledger: InputLedger) -> PythonHeaders:
    """A cell's Python headers by its python axis's value: "installed", the interpreter
    running this process (sysconfig's include and EXT_SUFFIX); "3.N", Debian's."""
    if value == INSTALLED:
        return PythonHeaders.of_this_interpreter()
    return debian_headers(value, cache, ledger)
