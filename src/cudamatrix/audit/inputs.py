"""What to audit: wheels, folders, ELF files, or ``name==version`` from PyPI.

A wheel is read member by member: each shared library is copied to a temporary file
(cuobjdump needs a path), read, and deleted before the next, so a 500 MB wheel never
lies unpacked and memory stays bounded by one member's copy buffer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

ELF_MAGIC = b"\x7fELF"
# Shared libraries and extension modules inside a wheel: foo.so, libfoo.so.12, foo.abi3.so.
_LIBRARY = re.compile(r"\.so(\.\d+)*$")
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


@dataclass(frozen=True)
class Member:
    """One ELF file to read: its name in the report and where it lies now."""

    source: str  # the wheel, folder or file named on the command line
    name: str  # the member's path inside it
    path: Path


def download(requirement: str, cache: Path) -> Path:
    """The wheel of ``name==version`` for this platform, kept under `cache`."""
    folder = cache / "audit-wheels" / requirement.replace("==", "-")
    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--disable-pip-version-check", "--dest", str(folder), requirement],
        capture_output=True, text=True, check=False)
    found = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or not found:
        said = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise UserError(f"{requirement}: cannot download a wheel ({said})")
    return found[0]


def resolve(spec: str, cache: Path) -> Path:
    """A command-line input as a path: an existing file or folder, else a requirement."""
    path = Path(spec)
    if path.exists():
        return path
    if _REQUIREMENT.match(spec):
        return download(spec, cache)
    raise UserError(f"{spec}: no such file or folder, and not a name==version requirement")


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def members(path: Path, scratch: Path) -> Iterator[Member]:
    """Every ELF file in a wheel (streamed), folder or file, one at a time."""
    if path.is_dir():
        for root, _, names in os.walk(path):
            for name in sorted(names):
                file = Path(root) / name
                if not file.is_symlink() and _is_elf(file):
                    yield Member(str(path), str(file.relative_to(path)), file)
        return
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as wheel:
            for info in wheel.infolist():
                if info.is_dir() or not _LIBRARY.search(info.filename):
                    continue
                handle, temporary = tempfile.mkstemp(dir=scratch, suffix=".so")
                try:
                    with wheel.open(info) as stream, os.fdopen(handle, "wb") as copy:
                        shutil.copyfileobj(stream, copy, 1 << 20)
                    if _is_elf(Path(temporary)):
                        yield Member(path.name, info.filename, Path(temporary))
                finally:
                    Path(temporary).unlink(missing_ok=True)
        return
    if _is_elf(path):
        yield Member(path.name, path.name, path)
        return
    raise UserError(f"{path}: neither a wheel, a folder nor an ELF file")
