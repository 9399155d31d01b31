"""Seeds and mutations for the fuzz targets of tests/unit/test_fuzz.py (issue 23).

Each target starts from real inputs: the repository's own H100 results.json files, the
known-bug corpus's case.toml files, the default matrix.toml and cudamatrix.toml, and for
the ELF/fatbinary reader real CUDA libraries and cubins where this machine has them (the
torchao wheel the audit tests download, cubins a run left in the compile cache), besides a
well-formed library written here. Hypothesis then mutates them: structure-aware (a value
anywhere in the document replaced, removed or added; a header field of the ELF or of a
fatbinary set to a boundary value) and byte-wise (truncated, spliced, raw bytes).

The profile decides how long: ``ci`` (the unit lane: a bounded number of inputs per
target) or ``nightly`` (`nox -s fuzz`: each target for $CUDAMATRIX_FUZZ_SECONDS).
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes
CACHE = Path(os.environ.get("CUDAMATRIX_CACHE") or Path.home() / ".cache" / "cudamatrix")

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("nightly", max_examples=2000, deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("CUDAMATRIX_FUZZ_PROFILE", "ci"))
# `nox -s fuzz`: how long each target runs (its test is called again until then).
FUZZ_SECONDS = float(os.environ.get("CUDAMATRIX_FUZZ_SECONDS", "0"))
# What each target tried, printed at the end of the session (the nightly's record).
TRIED: dict[str, int] = {}

# --- JSON and TOML documents: a value replaced, removed or added anywhere ---------------

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    # Numbers no record holds (10^400 was an OverflowError in resource_changes).
    st.sampled_from([10**400, -(10**400), 2**63, -1]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["", "pass", "fail", "compile", "inspect", "sm_90a", "13.0", "..", "/",
                     "../../etc/passwd", "\x00", "<script>", "ok", "error", "timeout"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12)


def _paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document[:8]):  # a long list: its first few
            found += _paths(value, (*prefix, index))
    return found


def _set(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value if action == "replace" else document
    head, rest = path[0], path[1:]
    if isinstance(document, dict) and head in document:
        copy = dict(document)
        if not rest and action == "remove":
            del copy[head]
        elif not rest and action == "add" and isinstance(value, dict):
            copy.update({f"x{k}": v for k, v in value.items()})
        else:
            copy[head] = _set(document[head], rest, action, value)
        return copy
    if isinstance(document, list) and isinstance(head, int) and head < len(document):
        copy = list(document)
        if not rest and action == "remove":
            del copy[head]
        else:
            copy[head] = _set(document[head], rest, action, value)
        return copy
    return document


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """One of `seeds` with one to four values replaced, removed or added."""
    document = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(document)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        document = _set(document, path, action, draw(VALUES))
    return document


def json_text(document: Any) -> bytes:
    return json.dumps(document, allow_nan=True, default=str).encode()


def toml_text(document: Any) -> bytes:
    """TOML for a mutated document; what TOML cannot say (None, mixed-type arrays in old
    writers) falls back to a text that is not TOML at all, itself an input."""
    import tomli_w

    safe = _toml_safe(document)
    try:
        return tomli_w.dumps(safe if isinstance(safe, dict) else {"value": safe}).encode()
    except (TypeError, ValueError):
        return json_text(document)


def _toml_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value if v is not None]
    return value


@st.composite
def damaged(draw: st.DrawFn, text: bytes) -> bytes:
    """Byte-wise damage to a real file: truncated, a byte run overwritten, or spliced."""
    kind = draw(st.sampled_from(["truncate", "overwrite", "splice", "raw", "deep"]))
    if kind == "raw" or not text:
        return draw(st.binary(max_size=2000))
    at = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:at]
    if kind == "deep":  # nested past any reader's recursion (a RecursionError before)
        depth = draw(st.sampled_from([70, 1_100, 100_000]))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        return text[:at] + opener * depth + b"0" + closer * depth + text[at:]
    junk = draw(st.binary(min_size=1, max_size=64))
    if kind == "overwrite":
        return text[:at] + junk + text[at + len(junk):]
    return text[:at] + junk + text[at:]


# --- ELF libraries and cubins ------------------------------------------------------------

def _elf(sections: list[tuple[str, bytes]], machine: int = 62) -> bytes:
    """A well-formed 64-bit little-endian ELF with these sections (and a name table)."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    body, offsets = b"", []
    for _, data in sections:
        offsets.append(64 + len(body))
        body += data + bytes(-len(data) % 8)
    names_at = 64 + len(body)
    body += names + bytes(-len(names) % 8)
    shoff = 64 + len(body)
    table = bytes(64)  # the null section
    name_at = 1
    for (name, data), offset in zip(sections, offsets, strict=True):
        table += struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, offset, len(data), 0, 0, 8, 0)
        name_at += len(name) + 1
    table += struct.pack("<IIQQQQIIQQ", name_at, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    count = len(sections) + 2
    head = (b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1,
            0, 0, shoff, 0, 64, 0, 0, 64, count, count - 1))
    return head + body + table


def _fatbin(entries: list[tuple[int, bytes]]) -> bytes:
    payload = b"".join(struct.pack("<HHIQ", kind, 0x101, 16, len(data)) + data
                       for kind, data in entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(payload)) + payload


def synthetic_library() -> bytes:
    """A host library with two fatbinaries: a cubin and a PTX, as nvcc lays them out."""
    cubin = _elf([(".nv.info.kernel", bytes(16)), (".text.kernel", bytes(32)),
                  (".note.nv.tkinfo", b"Cuda compilation tools, release 13.0, V13.0.88\0")],
                 machine=190)
    ptx = b".version 9.0\n.target sm_90\n.visible .entry kernel()\n{\n ret;\n}\n\0"
    fat = _fatbin([(2, cubin)]) + bytes(8) + _fatbin([(1, ptx)])
    return _elf([(".text", bytes(64)), (".nv_fatbin", fat)])


def real_libraries(limit_bytes: int = 1 << 20) -> list[bytes]:
    """Real device code on this machine, each at most 1 MiB so that a seed costs little
    memory: the first fatbinaries of the torchao wheel's libraries (real fatbinary, entry
    and cubin headers) laid into a small library, and cubins a run left in the compile
    cache."""
    from cudamatrix.stages.binaries.elf import UnreadableFile, fatbins

    found: list[bytes] = []
    for wheel in sorted((CACHE / "audit-wheels").glob("*/*.whl"))[:2]:
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    if not info.filename.endswith(".so") or len(found) >= 4:
                        continue
                    library = archive.read(info)
                    first = next((f for f in fatbins(io.BytesIO(library))
                                  if f.size <= limit_bytes), None)
                    if first is not None:
                        found.append(_elf([(".text", bytes(64)), (".nv_fatbin", library[
                            first.offset:first.offset + first.size])]))
        except (OSError, zipfile.BadZipFile, UnreadableFile):
            continue
    for cubin in sorted((CACHE / "compile").glob("*/*/kernel.cubin"))[:4]:
        if cubin.stat().st_size <= limit_bytes:
            found.append(cubin.read_bytes())
    return found


def fields_of(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every header field whose value the readers trust: the ELF
    header's section-table fields, each section's offset and size, each fatbinary's and
    each entry's header and payload sizes."""
    fields = [(0x28, 8), (0x3A, 2), (0x3C, 2), (0x3E, 2)]
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return fields
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for index in range(min(shnum, 64)):
        base = shoff + index * shentsize
        if base + 0x28 <= len(data):
            fields += [(base, 4), (base + 0x18, 8), (base + 0x20, 8)]
    at = data.find(struct.pack("<I", 0xBA55ED50))
    while at >= 0 and len(fields) < 200:
        fields += [(at + 6, 2), (at + 8, 8), (at + 16, 2), (at + 20, 4), (at + 24, 8)]
        at = data.find(struct.pack("<I", 0xBA55ED50), at + 4)
    return [(o, w) for o, w in fields if o + w <= len(data)]


BOUNDARIES = [0, 1, 7, 8, 15, 16, 63, 64, 2**15, 2**16 - 1, 2**31 - 1, 2**32 - 1, 2**40,
              2**62, 2**63 - 1, 2**64 - 1]


@st.composite
def damaged_library(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed library with header fields set to boundary or random values, then maybe
    byte-wise damage."""
    data = bytearray(draw(st.sampled_from(seeds)))
    fields = fields_of(bytes(data))
    for _ in range(draw(st.integers(1, 4))):
        if not fields:
            break
        offset, width = fields[draw(st.integers(0, len(fields) - 1))]
        value = draw(st.one_of(st.sampled_from(BOUNDARIES), st.integers(0, 2**64 - 1)))
        data[offset:offset + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    if draw(st.booleans()):
        return draw(damaged(bytes(data)))
    return bytes(data)


def library_seeds() -> list[bytes]:
    return [synthetic_library(), *real_libraries()]


def stream(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def run_target(name: str, test: Callable[[], None]) -> None:
    """Run a Hypothesis test once (the ci profile), or again and again until the nightly's
    seconds are spent; the inputs tried are counted by the test itself (TRIED)."""
    import time

    deadline = time.monotonic() + FUZZ_SECONDS
    test()
    while time.monotonic() < deadline:
        test()
    print(f"fuzz {name}: {TRIED.get(name, 0)} inputs")
