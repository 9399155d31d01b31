"""Wheels on the package index, and the members of one read without fetching it whole.

A CUDA release's headers sit in wheels that are mostly libraries: cuBLAS's is 360 MB for
a few hundred KB of headers. A wheel is a zip whose table of contents is at its end, and
the index serves byte ranges, so a member is two small requests away: the table (the
last 64 KiB), then one request per run of wanted members that lie together (a wheel
keeps a folder's files side by side). Each member read is checked twice: zip's CRC-32,
and the SHA-256 the wheel's own RECORD lists for it. What cannot be checked this way is
the whole file's hash that the index publishes (it needs every byte): the index is
reached over TLS, as pip reaches it.

Where the index does not answer in JSON (PEP 691) or serves no ranges (a mirror, a
folder of wheels), the wheel is fetched whole by ``pip download``, hash-checked by pip,
and the same members taken from it: slower, never different.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from ..common import package_index
from ..common.interruption import run_preparation
from ..errors import EnvironmentUnavailable
from ..stages.binaries.inputs import inflate

DEFAULT_INDEX = "https://pypi.org/simple"
TIMEOUT_S = 60
_TAIL = 64 << 10
# Two wanted members closer than this are fetched in one request.
_GAP = 256 << 10
# Members a header extraction keeps: a wheel's include folders.
MemberFilter = Callable[[str], bool]


IndexUnreachable = package_index.IndexUnreachable


@dataclass(frozen=True)
class IndexWheel:
    """One wheel file the index lists for a project."""

    name: str
    version: Version
    filename: str
    url: str


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    return package_index.get(url, headers, TIMEOUT_S)


def project_wheels(project: str) -> list[IndexWheel]:
    """The wheels the configured indexes list for `project` that install on this machine."""
    here = package_index.installable_tags()
    found = []
    for entry in package_index.listing(project).files:
        filename = str(entry.get("filename", ""))
        if not filename.endswith(".whl") or entry.get("yanked"):
            continue
        try:
            name, version, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        if tags & here:
            found.append(IndexWheel(str(name), version, filename, str(entry["url"])))
    return found


def chosen_version(versions: list[Version], specifier: SpecifierSet) -> Version | None:
    """The version a release pin means: the newest of a `==X.*` pin (the release's last
    build), the oldest of a range (`>=13.0.88,<14`: the release's own, not a later one)."""
    fitting = sorted(v for v in versions if v in specifier)
    if not fitting:
        return None
    pins = [s for s in specifier if s.operator in ("==", "===")]
    return fitting[-1] if pins else fitting[0]


def wheel_for(requirement: Requirement) -> IndexWheel:
    wheels = project_wheels(requirement.name)
    version = chosen_version([w.version for w in wheels], requirement.specifier)
    if version is None:
        raise EnvironmentUnavailable(f"the index has no wheel of {requirement} for this "
                                     "machine")
    return next(w for w in wheels if w.version == version)


class _RangedFile(io.RawIOBase):
    """A remote file read by byte ranges, keeping what was read: what zipfile opens."""

    def __init__(self, url: str) -> None:
        self.url, self.position = url, 0
        self.pieces: list[tuple[int, bytes]] = []
        status, headers, body = _get(url, {"Range": f"bytes=-{_TAIL}"})
        total = headers.get("content-range", "").rpartition("/")[2]
        if status != 206 or not total.isdigit():
            raise IndexUnreachable(f"{url}: no byte ranges")
        self.size = int(total)
        self.pieces.append((self.size - len(body), body))

    def fetch(self, start: int, end: int) -> None:
        """Bytes [start, end) into memory, in one request."""
        status, _, body = _get(self.url, {"Range": f"bytes={start}-{end - 1}"})
        if status != 206 or len(body) != end - start:
            raise IndexUnreachable(f"{self.url}: a short range")
        self.pieces.append((start, body))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def read(self, size: int = -1) -> bytes:
        end = self.size if size < 0 else min(self.size, self.position + size)
        if end <= self.position:
            return b""
        for start, data in self.pieces:
            if start <= self.position and end <= start + len(data):
                chunk = data[self.position - start:end - start]
                self.position = end
                return chunk
        self.fetch(self.position, min(self.size, max(end, self.position + _GAP)))
        return self.read(size)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


# A RECORD lists a wheel's files, a line each: a CUDA wheel's is tens of kilobytes (a 3 MB
# wheel whose RECORD claimed 3 GB was a MemoryError).
MAX_RECORD_BYTES = 16 << 20


def _record_hashes(archive: zipfile.ZipFile) -> dict[str, str]:
    """Each member's SHA-256 as the wheel's RECORD lists it (urlsafe base64, unpadded)."""
    record = next((n for n in archive.namelist() if n.endswith(".dist-info/RECORD")), None)
    if record is None:
        return {}
    if archive.getinfo(record).file_size > MAX_RECORD_BYTES:
        raise EnvironmentUnavailable(f"{record}: {archive.getinfo(record).file_size:,} bytes, "
                                     "more than any wheel's RECORD")
    with archive.open(record) as opened:
        text = opened.read(MAX_RECORD_BYTES + 1).decode("utf-8", "replace")
    if len(text) > MAX_RECORD_BYTES:  # its header understated it
        raise EnvironmentUnavailable(f"{record}: more than any wheel's RECORD")
    found = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1].startswith("sha256="):
            found[row[0]] = row[1][len("sha256="):]
    return found


# A member's path in a wheel this tool writes out: at most this many folders deep, each
# name at most the 255 bytes a Linux file system takes (1,500 deep was a RecursionError).
MAX_MEMBER_DEPTH = 64
MAX_NAME_BYTES = 255


def _safe(member: str) -> bool:
    """A member name that stays in its folder: no absolute path, no `..`, no empty part
    (one that does not is never written, and the rest of the wheel is)."""
    parts = member.split("/")
    return not member.startswith("/") and ".." not in parts and "" not in parts[:-1]


def _writable(member: str) -> bool:
    """A member name a file system can hold as a file of its own: no `.` part, not too
    deep, no part too long."""
    parts = member.split("/")
    return "." not in parts and len(parts) <= MAX_MEMBER_DEPTH \
        and all(len(p.encode()) <= MAX_NAME_BYTES for p in parts)


def _extract(archive: zipfile.ZipFile, wanted: MemberFilter, target: Path,
             source: str) -> list[str]:
    """Every wanted member of `archive` into `target` at its path in the wheel, checked
    against the wheel's RECORD."""
    hashes = _record_hashes(archive)
    written = []
    for info in archive.infolist():
        if info.is_dir() or not _safe(info.filename) or not wanted(info.filename):
            continue
        if not _writable(info.filename):
            raise EnvironmentUnavailable(f"{source}: member {info.filename[:120]!r} cannot be "
                                         "written (a '.' part, too deep or a name too long)")
        path = target / info.filename
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Streamed within the audit's ceilings (a 0.7 MB wheel inflating to 700 MiB
            # was extracted whole); zipfile checks the CRC-32 as it goes.
            problem = inflate(archive, info, path)
        except OSError as exc:  # a file where a folder must be, ...: this library's fault
            raise EnvironmentUnavailable(f"{source}: member {info.filename[:120]!r} cannot be "
                                         f"written ({exc.strerror or exc})") from None
        if problem:
            with contextlib.suppress(OSError):  # a folder of that name is left as it is
                path.unlink(missing_ok=True)
            raise EnvironmentUnavailable(f"{source}: member {info.filename[:120]!r} {problem}")
        listed = hashes.get(info.filename)
        if listed is not None:
            digest = base64.urlsafe_b64encode(_file_sha256(path)).rstrip(b"=")
            if digest.decode() != listed:
                raise EnvironmentUnavailable(f"{source}: {info.filename} does not match the "
                                             "hash its wheel's RECORD lists")
        written.append(info.filename)
    return written


def _file_sha256(path: Path) -> bytes:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()


def _prefetch(remote: _RangedFile, archive: zipfile.ZipFile, wanted: MemberFilter) -> None:
    """The wanted members' bytes, a request per run of them that lie together."""
    infos = sorted(archive.infolist(), key=lambda i: i.header_offset)
    ends = [i.header_offset for i in infos[1:]] + [archive.start_dir]
    spans: list[list[int]] = []
    for info, end in zip(infos, ends, strict=True):
        record = info.filename.endswith(".dist-info/RECORD")
        if not (record or (_safe(info.filename) and wanted(info.filename))):
            continue
        if spans and info.header_offset - spans[-1][1] <= _GAP:
            spans[-1][1] = end
        else:
            spans.append([info.header_offset, end])
    for start, end in spans:
        remote.fetch(start, end)


def extract_members(wheel: IndexWheel, wanted: MemberFilter, target: Path) -> list[str]:
    """The wanted members of an index wheel into `target`, read by ranges; IndexUnreachable
    where the index serves none."""
    if wheel.url.startswith("file:"):  # a find-links folder or a file:// index: read here
        local = urllib.request.url2pathname(urllib.parse.urlsplit(wheel.url).path)
        try:
            with zipfile.ZipFile(local) as archive:
                return _extract(archive, wanted, target, wheel.filename)
        except OSError as exc:
            raise IndexUnreachable(f"{wheel.url}: {exc.strerror or exc}") from None
        except zipfile.BadZipFile as exc:
            raise EnvironmentUnavailable(f"{wheel.filename}: not a wheel ({exc})") from None
    remote = _RangedFile(wheel.url)
    try:
        archive = zipfile.ZipFile(remote)
    except zipfile.BadZipFile as exc:
        raise EnvironmentUnavailable(f"{wheel.filename}: not a wheel ({exc})") from None
    with archive:
        _prefetch(remote, archive, wanted)
        return _extract(archive, wanted, target, wheel.filename)


def extract_downloaded(requirement: str, wanted: MemberFilter, target: Path,
                       timeout_s: float) -> list[str]:
    """The same members from the wheel fetched whole by pip (which checks its hash)."""
    with tempfile.TemporaryDirectory(prefix="cudamatrix-wheel-") as folder:
        done = run_preparation(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--disable-pip-version-check", "--dest", folder,
             requirement], timeout=timeout_s)
        wheels = sorted(Path(folder).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise EnvironmentUnavailable(f"pip could not download {requirement}: "
                                         f"{done.stderr.strip()[-300:]}")
        written = []
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                written += _extract(archive, wanted, target, wheel.name)
        return written
