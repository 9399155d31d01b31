"""The disassembler that turns a cubin into SASS for ``in = "sass"`` checks.

A cubin is ELF: searching its bytes for ``STL`` finds nothing whatever the code does,
so machine-code checks read ``cuobjdump -sass``. The 11.x/12.x wheels carry no
cuobjdump; NVIDIA publishes it, and the nvdisasm it calls, as 13.x wheels, and a
newer disassembler reads older cubins. A toolkit that has its own is used as it is.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..common.locks import folder_lock
from ..common.up_to_date import InputLedger
from ..common.versions import parse_version
from ..config.matrix import Matrix
from ..errors import EnvironmentUnavailable, UserError
from . import debian, wheels

SASS_TOOLS = ("nvidia-cuda-cuobjdump==13.5.*", "nvidia-cuda-nvdisasm==13.5.*")
# How the wheels' cuobjdump is named where a module says which tool read it.
SASS_TOOLS_LABEL = "cuobjdump 13.5"


def unrunnable(tool: Path) -> str:
    """Why the cached program `tool` cannot be run ("" where it can): a damaged cache's
    dangling link, 0-byte file or missing x bit was an OSError traceback in `run` and
    `audit` as the program was started, not a line naming it."""
    try:
        info = tool.stat()
        with tool.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size == 0:
        return "an empty file"
    if magic != b"\x7fELF" and not magic.startswith(b"#!"):
        return "not a program (no ELF header)"
    if not os.access(tool, os.X_OK):
        return "not executable"
    return ""


def checked_tool(tool: Path, fetch_again: Callable[[], Path]) -> Path:
    """The cached `tool`, checked before it is ever run: a broken one is fetched again
    once (`fetch_again`: its folder made anew), and one still broken, or that cannot be
    fetched again (no network), is one line naming it."""
    why = unrunnable(tool)
    if not why:
        return tool
    try:
        again = fetch_again()
    except (EnvironmentUnavailable, OSError) as exc:
        raise UserError(f"{tool}: a cached tool that cannot be run ({why}) and could not be "
                        f"fetched again ({exc}); remove {tool.parent} from the cache") from None
    why_again = unrunnable(again)
    if why_again:
        raise UserError(f"{again}: a cached tool that cannot be run ({why_again}), even "
                        "fetched again")
    return again


def _executable(folder: Path) -> None:
    """The x bit on every regular file of `folder` (a wheel keeps none): never through a
    link (a dangling one was a traceback; one to any file would make that file a program)."""
    for entry in folder.iterdir():
        info = entry.lstat()
        if stat.S_ISREG(info.st_mode):
            entry.chmod(info.st_mode | 0o111)


def _forget(folder: Path, marker: str) -> None:
    """`folder` known as not made, so the next install or unpack makes it anew."""
    with folder_lock(folder):
        (folder / marker).unlink(missing_ok=True)


def prepare_sass_tools(cache: Path, ledger: InputLedger) -> str | None:
    """The path of a cuobjdump with its nvdisasm beside it, or None when none can be had
    (a GPU machine without network): checks on SASS then say so and decide nothing. A
    cached one that cannot be run is fetched again, or refused in one line."""
    target = cache / "tools" / "sass-13.5"

    def fetch(again: bool) -> Path:
        if again:
            _forget(target, wheels.MARKER)
        root = wheels.install(target, SASS_TOOLS, ledger=ledger)
        tool = root / "nvidia" / "cu13" / "bin" / "cuobjdump"
        if tool.parent.is_dir():
            _executable(tool.parent)
        return tool

    try:
        tool = fetch(False)
    except EnvironmentUnavailable:
        return None
    if not tool.exists() and not tool.is_symlink():
        return None  # the wheel holds none (a layout it no longer has)
    return str(checked_tool(tool, lambda: fetch(True)))


def older_cuobjdumps(matrix: Matrix, cache: Path, ledger: InputLedger
                     ) -> list[tuple[str, str]]:
    """The cuobjdumps of Debian's CUDA packages the matrix names (12.4 from trixie, 11.8
    from bookworm), newest first, each unpacked once into the cache, as (label, path): what
    reads a module the 13.x wheel's cannot (CUDA 12.1's cubins). One that cannot be had
    (no network, no dpkg-deb) is left out: the module then says which tools failed; one
    unpacked but broken (no x bit, empty) is unpacked again, or refused in one line."""
    found = []
    releases = sorted(((v, t.debian) for v, t in matrix.toolkits.items() if t.debian),
                      key=lambda item: parse_version(item[0]), reverse=True)
    for version, suite in releases:
        assert suite is not None
        folder = cache / "debian" / f"{suite}-{version}"

        def unpack(again: bool, suite: str = suite, version: str = version,
                   folder: Path = folder) -> Path:
            if again:
                _forget(folder, debian.MARKER)
            with folder_lock(folder):
                root, _ = debian.unpack_debian_toolkit(suite, version, cache, ledger)
            return root / "usr" / "bin" / "cuobjdump"

        try:
            tool = unpack(False)
        except (EnvironmentUnavailable, OSError):
            continue
        if tool.exists() or tool.is_symlink():
            checked = checked_tool(tool, functools.partial(unpack, True))
            found.append((f"cuobjdump {version} (Debian {suite})", str(checked)))
    return found
