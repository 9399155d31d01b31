"""The disassembler that turns a cubin into SASS for ``in = "sass"`` checks.

A cubin is ELF: searching its bytes for ``STL`` finds nothing whatever the code does,
so machine-code checks read ``cuobjdump -sass``. The 11.x/12.x wheels carry no
cuobjdump; NVIDIA publishes it, and the nvdisasm it calls, as 13.x wheels, and a
newer disassembler reads older cubins. A toolkit that has its own is used as it is.
"""

from __future__ import annotations

from pathlib import Path

from ..common.locks import folder_lock
from ..common.up_to_date import InputLedger
from ..common.versions import parse_version
from ..config.matrix import Matrix
from ..errors import EnvironmentUnavailable
from .debian import unpack_debian_toolkit
from .wheels import install

SASS_TOOLS = ("nvidia-cuda-cuobjdump==13.5.*", "nvidia-cuda-nvdisasm==13.5.*")
# How the wheels' cuobjdump is named where a module says which tool read it.
SASS_TOOLS_LABEL = "cuobjdump 13.5"


def prepare_sass_tools(cache: Path, ledger: InputLedger) -> str | None:
    """The path of a cuobjdump with its nvdisasm beside it, or None when none can be had
    (a GPU machine without network): checks on SASS then say so and decide nothing."""
    try:
        root = install(cache / "tools" / "sass-13.5", SASS_TOOLS, ledger=ledger)
    except EnvironmentUnavailable:
        return None
    tool = root / "nvidia" / "cu13" / "bin" / "cuobjdump"
    if not tool.is_file():
        return None
    for binary in tool.parent.iterdir():
        binary.chmod(binary.stat().st_mode | 0o111)
    return str(tool)


def older_cuobjdumps(matrix: Matrix, cache: Path, ledger: InputLedger
                     ) -> list[tuple[str, str]]:
    """The cuobjdumps of Debian's CUDA packages the matrix names (12.4 from trixie, 11.8
    from bookworm), newest first, each unpacked once into the cache, as (label, path): what
    reads a module the 13.x wheel's cannot (CUDA 12.1's cubins). One that cannot be had
    (no network, no dpkg-deb) is left out: the module then says which tools failed."""
    found = []
    releases = sorted(((v, t.debian) for v, t in matrix.toolkits.items() if t.debian),
                      key=lambda item: parse_version(item[0]), reverse=True)
    for version, suite in releases:
        assert suite is not None
        try:
            with folder_lock(cache / "debian" / f"{suite}-{version}"):
                root, _ = unpack_debian_toolkit(suite, version, cache, ledger)
        except (EnvironmentUnavailable, OSError):
            continue
        tool = root / "usr" / "bin" / "cuobjdump"
        if tool.is_file():
            found.append((f"cuobjdump {version} (Debian {suite})", str(tool)))
    return found
