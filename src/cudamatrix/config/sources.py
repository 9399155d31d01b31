"""Where the code under test comes from: a folder, an sdist or wheel file, a PyPI sdist,
a git checkout; fetched once and kept in the cache by its content.

A maintainer's library is rarely a PyPI pin: it is the checkout they are in, the sdist
their release job made, or a branch. A spec names one of them:

- ``path:<folder>``: a folder (relative to the file that names it); read in place, its
  digest taken over every file but ``.git``.
- ``file:<archive>``: an sdist (``.tar.gz``, ``.zip``) or a wheel (``.whl``); an sdist is
  unpacked into the cache under its sha256.
- ``sdist:<name>==<version>``: that release's sdist from the package indexes pip is told
  to use (common/package_index.py: PyPI unless pip's configuration says otherwise, with
  its extra indexes and credentials), its sha256 checked against the index's, unpacked
  into the cache (no build backend runs to fetch it, unlike ``pip download``).
- ``git:<url>@<rev>``: a clone of ``url`` at ``rev``, kept under the commit it named.

Unpacking refuses members that would land outside their folder (tarfile's ``data``
filter), as an sdist is a file anyone can make.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common import package_index
from ..common.files import read_marker, remove_leftovers, write_atomic
from ..common.folders import walk
from ..common.interruption import run_preparation
from ..common.locks import folder_lock
from ..errors import EnvironmentUnavailable, UserError
from ..stages.binaries.inputs import RATIO_CEILING, RATIO_FROM_BYTES, inflate, inflation_limit

SCHEMES = ("path", "file", "sdist", "git")
_GIT_URL = re.compile(r"^(https?://|ssh://|file://|git@[\w.-]+:)[^\s]+$")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
FETCH_TIMEOUT_S = 600


@dataclass(frozen=True)
class SourceSpec:
    scheme: str
    value: str

    @classmethod
    def parse(cls, text: str, where: str) -> SourceSpec:
        """``scheme:value``; `where` names the file and entry for the one-line error."""
        scheme, _, value = text.partition(":")
        if scheme not in SCHEMES or not value:
            raise UserError(f"{where}: {text!r} is not a source: give path:<folder>, "
                            "file:<sdist or wheel>, sdist:<name>==<version> or git:<url>@<rev>")
        if scheme == "sdist" and not _PIN.match(value):
            raise UserError(f"{where}: {text!r}: an sdist is named name==version")
        if scheme == "git" and not _GIT_URL.match(value):
            raise UserError(f"{where}: {text!r}: a git source is an https://, http://, ssh://, "
                            "git@host: or file:// address (git's other transports, such as "
                            "ext::, run commands)")
        if scheme == "git" and "@" not in value.rsplit("/", 1)[-1]:
            raise UserError(f"{where}: {text!r}: name the revision, git:<url>@<rev>, so every "
                            "run builds the same commit")
        return cls(scheme, value)

    def __str__(self) -> str:
        return f"{self.scheme}:{self.value}"


@dataclass(frozen=True)
class Source:
    """A fetched source: a folder to build (or a wheel to install) and what it was."""

    spec: str
    path: Path  # the folder (or, for a wheel, the file)
    digest: str  # sha256 of the archive or tree, or the git commit
    is_wheel: bool = False

    @property
    def label(self) -> str:
        return f"{self.spec} ({self.digest[:12]})"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(folder: Path) -> str:
    """sha256 over every file's relative path and content (``.git`` left out): a folder
    whose content did not change has the same digest wherever it lies."""
    digest = hashlib.sha256()
    for root, dirs, names in walk(folder, "source folder"):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(root) / name
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.readlink(path).encode())
            elif path.is_file():
                digest.update(_sha256(path).encode())
    return digest.hexdigest()


# A source archive, downloaded and unpacked: a CUTLASS or PyTorch sdist is hundreds of
# megabytes; past these it is a bomb (a 3 MB zip unpacked without limit). What an archive
# may unpack to is bounded by its own size as a wheel's members are (inflation_limit: 64
# MiB, then 50 times its size), up to MAX_UNPACKED_BYTES; its members are counted as
# their headers are read, so a million of them is refused at the 200,001st.
MAX_SDIST_BYTES = 2 << 30
MAX_UNPACKED_BYTES = 8 << 30
MAX_UNPACKED_FILES = 200_000


class _Budget:
    """What one archive may still unpack: its members counted and their sizes summed as
    each header is read, refused at the first over either bound."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.compressed = archive.stat().st_size
        self.limit = inflation_limit(self.compressed, MAX_UNPACKED_BYTES)
        self.files = 0
        self.size = 0

    def take(self, size: int) -> None:
        self.files += 1
        self.size += max(0, size)
        if self.files > MAX_UNPACKED_FILES:
            raise EnvironmentUnavailable(
                f"{self.archive.name}: over {MAX_UNPACKED_FILES:,} files, more than a source "
                "archive holds")
        if self.size > self.limit:
            raise EnvironmentUnavailable(
                f"{self.archive.name}: unpacks past {self.limit:,} bytes, more than a source "
                f"archive holds ({RATIO_CEILING} times its {self.compressed:,} bytes once past "
                f"{RATIO_FROM_BYTES >> 20} MiB, {MAX_UNPACKED_BYTES >> 30} GiB at most)")


def _extract_zip(archive: Path, opened: zipfile.ZipFile, target: Path) -> None:
    """Each member within the archive's budget, streamed as a wheel's are (`inflate`: no
    member past the size it declares, nor past the ratio)."""
    budget = _Budget(archive)
    for info in opened.infolist():
        budget.take(info.file_size)
    for info in opened.infolist():
        path = target / info.filename
        if info.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        problem = inflate(opened, info, path)
        if problem:
            raise EnvironmentUnavailable(f"{archive.name}: member {info.filename[:120]!r} "
                                         f"{problem}")


def _extract_tar(archive: Path, opened: tarfile.TarFile, target: Path) -> None:
    """The headers first, one at a time, each counted and its size taken from the budget
    (tarfile keeps every header it reads: a million of them were 481 MB), then the members,
    through tarfile's ``data`` filter."""
    budget = _Budget(archive)
    for member in opened:
        budget.take(member.size)
    opened.extractall(target, filter="data")


def _unpack(archive: Path, target: Path) -> Path:
    """The archive's content in `target` (made once); an sdist's single top folder is
    the project."""
    with folder_lock(target):
        if not target.is_dir():
            staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            try:
                if zipfile.is_zipfile(archive):
                    with zipfile.ZipFile(archive) as opened:
                        for member in opened.namelist():
                            if member.startswith("/") or ".." in Path(member).parts:
                                raise EnvironmentUnavailable(
                                    f"{archive.name}: member {member!r} leaves its folder")
                        _extract_zip(archive, opened, staging)
                else:
                    with tarfile.open(archive) as opened:
                        _extract_tar(archive, opened, staging)
            except EnvironmentUnavailable:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
                shutil.rmtree(staging, ignore_errors=True)
                raise EnvironmentUnavailable(f"{archive.name}: cannot unpack ({exc})") from None
            staging.rename(target)
    entries = [p for p in target.iterdir()]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def _normal(name: str) -> str:
    return package_index.normal_name(name)


def _index_listing(name: str, said: str) -> package_index.Listing:
    """Project `name` as the configured indexes list it; EnvironmentUnavailable, starting
    with `said`, where none answers."""
    try:
        return package_index.listing(name)
    except package_index.IndexUnreachable as exc:
        raise EnvironmentUnavailable(f"{said}: the index did not answer ({exc})") from None


def index_versions(package: str) -> list[str]:
    """Every release of `package` the package indexes list (PEP 700's "versions", or the
    files' where an index gives none), in the indexes' order; yanked files do not remove a
    release. EnvironmentUnavailable where no index answers or none lists it."""
    versions = list(_index_listing(package, package).versions)
    if not versions:
        raise EnvironmentUnavailable(f"{package}: the index lists no versions")
    return versions


def sdist_files(listing: package_index.Listing, name: str, version: str
                ) -> list[dict[str, Any]]:
    """The sdists of name==version in an index's JSON listing, each with its sha256: by
    PEP 625's file name (`llama_cpp_python-0.3.36.tar.gz`: the name's dashes are
    underscores) or an older one (`name-version`, every dash an underscore)."""
    stems = {f"{_normal(name).replace('-', '_')}-{version}", f"{_normal(name)}-{version}",
             f"{_normal(name)}-{version}".replace("-", "_")}
    return [f for f in listing.files
            if f["filename"].endswith((".tar.gz", ".zip")) and "sha256" in f.get("hashes", {})
            and f["filename"].rsplit(".tar.gz", 1)[0].rsplit(".zip", 1)[0].lower() in stems]


def _pypi_sdist(pin: str, cache: Path) -> tuple[Path, str]:
    """The sdist of name==version from the package index, checked against its sha256; an
    sdist fetched and checked before is taken from the cache without asking the index
    again (its record keeps the index's sha256), so a machine without network (a GPU
    runner) builds what was fetched elsewhere."""
    name, version = _PIN.match(pin).groups()  # type: ignore[union-attr]
    record = cache / "sources" / "downloads" / f"{_normal(name)}-{version}.json"
    known = read_marker(record)
    if isinstance(known, dict) and isinstance(known.get("filename"), str) \
            and isinstance(known.get("sha256"), str) and "/" not in known["filename"]:
        archive = record.parent / known["filename"]
        if archive.is_file() and _sha256(archive) == known["sha256"]:
            return archive, known["sha256"]
    listing = _index_listing(name, f"sdist:{pin}")
    files = sdist_files(listing, name, version)
    if not files:
        raise EnvironmentUnavailable(f"sdist:{pin}: the index has no sdist of this release")
    wanted = files[0]["hashes"]["sha256"]
    url = str(files[0]["url"])  # absolute: the listing made it so against its index
    archive = record.parent / Path(files[0]["filename"]).name
    archive.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(archive)
    partial = archive.with_name(f"{archive.name}.partial-{os.getpid()}")
    if url.startswith("file:"):  # a listing's file:// link: a file, never a device or FIFO
        local = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
        if not local.is_file() or (local.is_symlink() and not local.resolve().is_file()):
            raise EnvironmentUnavailable(f"sdist:{pin}: {url} is not a file")
    try:
        got = package_index.download(url, partial, MAX_SDIST_BYTES, "any source archive",
                                     FETCH_TIMEOUT_S).sha256
    except EnvironmentUnavailable as exc:  # nothing is left of the partial download
        raise type(exc)(f"sdist:{pin}: download failed ({exc})") from None
    if got != wanted:
        partial.unlink(missing_ok=True)
        raise EnvironmentUnavailable(f"sdist:{pin}: sha256 {got} is not the index's {wanted}")
    partial.replace(archive)
    write_atomic(record, json.dumps({"pin": pin, "filename": archive.name, "sha256": wanted}))
    return archive, wanted


def _git(spec: str, cache: Path) -> tuple[Path, str]:
    url, _, rev = spec.rpartition("@")
    key = hashlib.sha256(spec.encode()).hexdigest()[:16]
    target = cache / "sources" / f"git-{key}"
    with folder_lock(target):
        if not (target / ".git").is_dir():
            staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            for command in (["git", "clone", "--quiet", "--no-checkout", url, str(staging)],
                            ["git", "-C", str(staging), "checkout", "--quiet", rev]):
                done = run_preparation(command, timeout=FETCH_TIMEOUT_S)
                if done.returncode != 0:
                    shutil.rmtree(staging, ignore_errors=True)
                    said = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
                    raise EnvironmentUnavailable(f"git:{spec}: {said}")
            staging.rename(target)
        commit = subprocess.run(["git", "-C", str(target), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    return target, commit


def fetch(spec: SourceSpec, base: Path, cache: Path) -> Source:
    """The source `spec` names, `base` being the folder its relative paths start from."""
    if spec.scheme == "path":
        folder = (base / spec.value).resolve()
        if not folder.is_dir():
            raise EnvironmentUnavailable(f"{spec}: no folder {folder}")
        return Source(str(spec), folder, tree_digest(folder))
    if spec.scheme == "git":
        folder, commit = _git(spec.value, cache)
        return Source(str(spec), folder, commit)
    if spec.scheme == "sdist":
        archive, digest = _pypi_sdist(spec.value, cache)
    else:
        archive = (base / spec.value).resolve()
        if not archive.is_file():
            raise EnvironmentUnavailable(f"{spec}: no file {archive}")
        digest = _sha256(archive)
        if archive.suffix == ".whl":
            return Source(str(spec), archive, digest, is_wheel=True)
    folder = _unpack(archive, cache / "sources" / f"sdist-{digest[:24]}")
    return Source(str(spec), folder, digest)
