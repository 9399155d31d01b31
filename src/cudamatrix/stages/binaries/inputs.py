"""What to audit: wheels, folders, ELF files, or ``name==version`` from PyPI.

A wheel is read member by member: each shared library is streamed to a temporary file
(cuobjdump needs a path), read, and deleted before the next, so a 500 MB wheel never
lies unpacked and memory stays bounded by one member's copy buffer. A wheel is a
stranger's file, so the stream has two ceilings (README, "Auditing what you ship"):
a member may inflate to MEMBER_CEILING_BYTES at most, and past RATIO_FROM_BYTES to
RATIO_CEILING times its compressed size at most: a zip bomb is stopped after 64 MiB,
not after filling the disk. A member over either, one whose inflated size differs
from what the wheel declares, one that does not inflate, or one whose name leads
outside the wheel is a Member with a `problem`, which becomes its cells' error.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError
from .elf import elf_problem

ELF_MAGIC = b"\x7fELF"
# Shared libraries and extension modules inside a wheel: foo.so, libfoo.so.12, foo.abi3.so.
_LIBRARY = re.compile(r"\.so(\.\d+)*$")
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")
# The largest library member of the CUDA wheels on PyPI is about 520 MiB (cuBLASLt's in
# nvidia-cublas 13.1, torch's libtorch_cuda.so 480 MiB); eight times that is the ceiling.
MEMBER_CEILING_BYTES = 4 << 30
# Their deflate ratios are 1.1 to 3.7 (measured on nvidia-cublas/cudnn/cufft/nccl/nvrtc 13
# and torch 2.14); a zip bomb of zeros reaches about 1000. Small members are not checked
# (a 1 MiB library of zeros harms nobody).
RATIO_CEILING = 50
RATIO_FROM_BYTES = 64 << 20
_CHUNK = 1 << 20


def inflation_limit(compressed: int, ceiling: int) -> int:
    """The most bytes `compressed` bytes of a stranger's archive may inflate to: any of
    them up to RATIO_FROM_BYTES, RATIO_CEILING times their size past it, never more than
    `ceiling`. The one rule for every archive the tool opens: a wheel's member (here), a
    fatbinary's compressed images (facts.py) and a whole sdist (config/sources.py)."""
    return min(ceiling, max(RATIO_FROM_BYTES, RATIO_CEILING * max(1, compressed)))


@dataclass(frozen=True)
class Member:
    """One ELF file to read: its name in the report and where it lies now."""

    source: str  # the wheel, folder or file named on the command line
    name: str  # the member's path inside it
    path: Path
    # Why it cannot be read (a zip bomb, a lying size, a name that climbs out), or None.
    problem: str | None = None


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


def _climbs(name: str) -> bool:
    """A member name that would leave the wheel's folder if it were unpacked by name."""
    parts = name.replace("\\", "/").split("/")
    return name.startswith(("/", "\\")) or ".." in parts \
        or re.match(r"^[A-Za-z]:", name) is not None


def inflate(wheel: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> str | None:
    """Stream one member to `target` within the ceilings; the reason it was stopped, or
    None when it was copied whole."""
    if info.file_size > MEMBER_CEILING_BYTES:
        return (f"declares {info.file_size} bytes inflated, over the {MEMBER_CEILING_BYTES} "
                "bytes a member may have")
    written = 0
    try:
        with wheel.open(info) as stream, target.open("wb") as copy:
            while chunk := stream.read(_CHUNK):
                written += len(chunk)
                if written > info.file_size:
                    return (f"inflates past the {info.file_size} bytes the wheel declares "
                            "for it")
                if written > inflation_limit(info.compress_size, MEMBER_CEILING_BYTES):
                    return (f"inflates over {RATIO_CEILING} times its {info.compress_size} "
                            f"compressed bytes (stopped at {written}): a zip bomb")
                copy.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError,
            ValueError) as exc:  # a damaged archive: offsets past its end, bad headers
        return f"does not inflate ({type(exc).__name__}: {exc})"
    if written != info.file_size:
        return f"inflates to {written} bytes, not the {info.file_size} the wheel declares"
    return None


def _wheel_members(path: Path, scratch: Path) -> Iterator[Member]:
    try:
        wheel = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError) as exc:
        raise UserError(f"{path}: not a readable wheel ({type(exc).__name__}: {exc})") \
            from None
    with wheel:
        for info in wheel.infolist():
            if info.is_dir() or not _LIBRARY.search(info.filename):
                continue
            if _climbs(info.filename):
                yield Member(path.name, info.filename, Path(os.devnull),
                             problem="its name leads outside the wheel")
                continue
            handle, temporary = tempfile.mkstemp(dir=scratch, suffix=".so")
            os.close(handle)
            try:
                problem = inflate(wheel, info, Path(temporary))
                if problem:
                    yield Member(path.name, info.filename, Path(temporary), problem)
                elif _is_elf(Path(temporary)):
                    yield Member(path.name, info.filename, Path(temporary))
            finally:
                Path(temporary).unlink(missing_ok=True)


def _regular(path: Path, follow: bool = False) -> bool:
    """A regular file (through a link only where `follow`), which can be read to its end."""
    try:
        return stat.S_ISREG((os.stat if follow else os.lstat)(path).st_mode)
    except OSError:
        return False


def unreadable(path: Path) -> str | None:
    """Why `members` could read no library from `path`, in a few words; None for a folder,
    a wheel (each of its members is checked as it is read) or a whole ELF file."""
    if path.is_dir():
        return None
    if not _regular(path, follow=True):
        return "not a regular file (a device, a FIFO or a socket is never read)"
    try:
        if zipfile.is_zipfile(path):
            return None
        with path.open("rb") as handle:
            return elf_problem(handle)
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"


def members(path: Path, scratch: Path) -> Iterator[Member]:
    """Every ELF file in a wheel (streamed), folder or file, one at a time."""
    if path.is_dir():
        for root, _, names in os.walk(path):
            for name in sorted(names):
                file = Path(root) / name
                # A FIFO, a device or a socket in the folder is no library: opening one
                # would wait forever (a FIFO) or read without end (a device).
                if _regular(file) and _is_elf(file):
                    yield Member(str(path), str(file.relative_to(path)), file)
        return
    if not _regular(path, follow=True):
        raise UserError(f"{path}: not a regular file or a folder (a device, a FIFO or a "
                        "socket is never read)")
    if zipfile.is_zipfile(path):
        yield from _wheel_members(path, scratch)
        return
    if _is_elf(path):
        yield Member(path.name, path.name, path)
        return
    raise UserError(f"{path}: neither a wheel, a folder nor an ELF file")
