"""The ELF and fatbinary structures the audit reads: section headers, the fatbinaries of a
library's ``.nv_fatbin`` section and their entries' headers.

Every file read here may come from a stranger's wheel, so every size and offset a header
claims is checked against what the file holds before it is used: a header that lies
(a fatbinary of 2^62 bytes, a section table past the end) is an :class:`UnreadableFile`
naming what lied and where, never a read past the end or an allocation of its claim.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

_HEADER = struct.Struct("<IHHQ")  # fatbinary: magic, version, header size, payload size
_ENTRY = struct.Struct("<HHIQ")  # entry: kind, version, header size, payload size
_SECTION_HEADER_SIZE = 64  # ELF64's Elf64_Shdr
EM_CUDA = 190  # e_machine of a cubin


class UnreadableFile(Exception):
    """A file's device code cannot be read whole (a header that lies, cuobjdump refusing
    it): its cells say so, naming the file and the offset."""


def _size(elf: BinaryIO) -> int:
    return elf.seek(0, os.SEEK_END)


def elf_machine(elf: BinaryIO) -> int | None:
    """e_machine of a 64-bit little-endian ELF (EM_CUDA for a cubin), None for anything
    else."""
    elf.seek(0)
    head = elf.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    machine: int = struct.unpack_from("<H", head, 18)[0]
    return machine


def _text_start(head: bytes) -> str | None:
    """The first line of a file that reads as text (no NUL, UTF-8), as a message quotes it;
    None for a binary file."""
    if b"\0" in head:
        return None
    try:
        text = head.decode()
    except UnicodeDecodeError:
        return None
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line[:60]


def elf_problem(elf: BinaryIO) -> str | None:
    """Why a file handed over as a library is no ELF a module can be read from, in a few
    words (a linker script named `.so` is text; a build killed as it wrote leaves a
    truncated one); None for an ELF whose header and 64-bit section table it holds whole.
    The section table is the one thing read to find a module: one past the end reads as
    no device code at all, which would be a silent wrong answer."""
    end = _size(elf)
    if end == 0:
        return "an empty file, not an ELF file"
    elf.seek(0)
    head = elf.read(512)
    if head[:4] != b"\x7fELF":
        text = _text_start(head)
        return "not an ELF file" + (f" (text: {text!r})" if text is not None else "")
    if head[4] != 2:  # a 32-bit ELF: no CUDA library, nothing of it is read
        return None
    if len(head) < 64:
        return f"a truncated ELF file ({end} bytes, shorter than its 64-byte header)"
    shoff, = struct.unpack_from("<Q" if head[5] == 1 else ">Q", head, 0x28)
    shentsize, shnum = struct.unpack_from("<HH" if head[5] == 1 else ">HH", head, 0x3A)
    if shoff > end or shentsize * shnum > end - shoff:
        return f"a truncated ELF file (its section table lies past its {end} bytes)"
    return None


def elf_sections(elf: BinaryIO) -> dict[str, tuple[int, int]]:
    """A 64-bit little-endian ELF's sections by name: (offset, size). Cubins and the
    host libraries that embed them are such ELFs. Reads the headers only; a table or a
    name past the end of the file is no section (a damaged ELF has none to offer), and a
    section's own bounds are checked where it is read."""
    end = _size(elf)
    elf.seek(0)
    head = elf.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shentsize < _SECTION_HEADER_SIZE or shnum == 0 or shstrndx >= shnum \
            or shoff > end or shentsize * shnum > end - shoff:
        return {}
    elf.seek(shoff)
    table = elf.read(shentsize * shnum)

    def header(index: int) -> tuple[int, int, int]:
        base = index * shentsize
        name, = struct.unpack_from("<I", table, base)
        offset, size = struct.unpack_from("<QQ", table, base + 0x18)
        return name, offset, size

    _, names_at, names_size = header(shstrndx)
    if names_at > end or names_size > end - names_at:
        return {}
    elf.seek(names_at)
    names = elf.read(names_size)
    sections = {}
    for index in range(shnum):
        name_at, offset, size = header(index)
        stop = names.find(b"\0", name_at)
        if name_at >= len(names) or stop < 0:
            continue  # a name outside the name table: no section of ours
        sections[names[name_at:stop].decode(errors="replace")] = (offset, size)
    return sections


@dataclass(frozen=True)
class Fatbin:
    """One fatbinary of a library: where it lies and how many cubins and PTX it holds."""

    offset: int
    size: int
    cubins: int
    ptx: int


_FATBIN_MAGIC = 0xBA55ED50
_ENTRY_PTX, _ENTRY_ELF = 1, 2


def fatbins(elf: BinaryIO) -> list[Fatbin]:
    """The fatbinaries of a library's ``.nv_fatbin`` section, in order, read header by
    header (a 600 MB library is never read whole). A size that runs past its section (or
    the file) is the file's damage, said with its offset."""
    end_of_file = _size(elf)
    at, size = elf_sections(elf).get(".nv_fatbin", (0, 0))
    if at > end_of_file or size > end_of_file - at:
        raise UnreadableFile(f".nv_fatbin claims {size} bytes at offset {at:#x}; the file "
                             f"has {end_of_file}")
    found = []
    offset, end = at, at + size
    while offset + _HEADER.size <= end:
        elf.seek(offset)
        magic, _, header, length = _HEADER.unpack(elf.read(_HEADER.size))
        if magic != _FATBIN_MAGIC:  # padding between fatbinaries
            offset += 8
            continue
        if header < _HEADER.size or header > end - offset or length > end - offset - header:
            raise UnreadableFile(f"the fatbinary at offset {offset:#x} claims a {header}-byte "
                                 f"header and {length} bytes; its section holds "
                                 f"{end - offset} from there")
        counts = {_ENTRY_PTX: 0, _ENTRY_ELF: 0}
        entry, stop = offset + header, offset + header + length
        while entry + _ENTRY.size <= stop:
            elf.seek(entry)
            kind, _, entry_header, payload = _ENTRY.unpack(elf.read(_ENTRY.size))
            if entry_header < _ENTRY.size or entry_header > stop - entry \
                    or payload > stop - entry - entry_header:
                raise UnreadableFile(f"the fatbinary entry at offset {entry:#x} claims a "
                                     f"{entry_header}-byte header and {payload} bytes; its "
                                     f"fatbinary holds {stop - entry} from there")
            if kind in counts:
                counts[kind] += 1
            entry += entry_header + payload
        found.append(Fatbin(offset, header + length, counts[_ENTRY_ELF], counts[_ENTRY_PTX]))
        offset = stop
    return found


class UnknownImage(Exception):
    """A fatbinary entry the pruning was not told about: keeping or dropping it would be a
    guess, so the library is left as the compiler made it."""


def prune_fatbins(library: bytes, keep: Callable[[bytes], bool | None]) -> bytes:
    """`library` with only the fatbinary entries `keep` accepts (given each entry's
    payload; None: not known, which raises :class:`UnknownImage`), what NVIDIA's nvprune
    does to objects and archives, for a shared library (nvprune is not in every toolkit).

    Each fatbinary keeps its place, so the host code's pointers to it stay right: its kept
    entries move to its front, its header says their size, and the rest of its bytes turn
    to zeros, which the driver never reads and a reader skips as padding. Why: one nvcc
    builds a host-entry case for several archs at once (stages/frontends/nvcc.py),
    and each arch's cell must load exactly what a build for that arch alone would give the
    driver, else a cell built for sm_80 would run its sm_90 sibling's code on an H100.
    """
    data = bytearray(library)
    handle = io.BytesIO(library)
    for fatbin in fatbins(handle):
        start = fatbin.offset + _HEADER.unpack_from(data, fatbin.offset)[2]
        stop = fatbin.offset + fatbin.size
        kept = bytearray()
        entry = start
        while entry + _ENTRY.size <= stop:
            _, _, entry_header, payload = _ENTRY.unpack_from(data, entry)
            whole = bytes(data[entry:entry + entry_header + payload])
            verdict = keep(whole[entry_header:])
            if verdict is None:
                raise UnknownImage(f"the fatbinary entry at offset {entry:#x} is none of the "
                                   "images this build was known to make")
            if verdict:
                kept += whole
            entry += entry_header + payload
        magic, version, header, _ = _HEADER.unpack_from(data, fatbin.offset)
        _HEADER.pack_into(data, fatbin.offset, magic, version, header, len(kept))
        data[start:stop] = bytes(kept) + bytes(stop - start - len(kept))
    return bytes(data)
