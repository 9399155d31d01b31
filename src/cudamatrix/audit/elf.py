"""The ELF and fatbinary structures the audit reads: section headers, the fatbinaries of a
library's ``.nv_fatbin`` section and their entries' headers."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO


def _elf_sections(elf: BinaryIO) -> dict[str, tuple[int, int]]:
    """A 64-bit little-endian ELF's sections by name: (offset, size). Cubins and the
    host libraries that embed them are such ELFs. Reads the headers only."""
    elf.seek(0)
    head = elf.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    elf.seek(shoff)
    table = elf.read(shentsize * shnum)

    def header(index: int) -> tuple[int, int, int]:
        base = index * shentsize
        name, = struct.unpack_from("<I", table, base)
        offset, size = struct.unpack_from("<QQ", table, base + 0x18)
        return name, offset, size

    try:
        _, names_at, names_size = header(shstrndx)
        elf.seek(names_at)
        names = elf.read(names_size)
        sections = {}
        for index in range(shnum):
            name_at, offset, size = header(index)
            name = names[name_at:names.index(b"\0", name_at)].decode(errors="replace")
            sections[name] = (offset, size)
    except (struct.error, ValueError):
        return {}
    return sections


class UnreadableFile(Exception):
    """cuobjdump could not read a file's device code whole: its cells say so."""


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
    header (a 600 MB library is never read whole)."""
    at, size = _elf_sections(elf).get(".nv_fatbin", (0, 0))
    found = []
    offset, end = at, at + size
    while offset + 16 <= end:
        elf.seek(offset)
        magic, _, header, length = struct.unpack("<IHHQ", elf.read(16))
        if magic != _FATBIN_MAGIC:  # padding between fatbinaries
            offset += 8
            continue
        counts = {_ENTRY_PTX: 0, _ENTRY_ELF: 0}
        entry, stop = offset + header, offset + header + length
        while entry + 16 <= stop:
            elf.seek(entry)
            kind, _, entry_header, payload = struct.unpack("<HHIQ", elf.read(16))
            if kind in counts:
                counts[kind] += 1
            entry += entry_header + payload
        found.append(Fatbin(offset, header + length, counts[_ENTRY_ELF], counts[_ENTRY_PTX]))
        offset = stop
    return found


