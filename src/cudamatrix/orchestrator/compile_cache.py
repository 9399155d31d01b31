"""The compile cache: a cell whose compile inputs have not changed is not compiled again.

A compile's outcome, refusals included, is decided by the source and every file
it reads, the flags, the frontend, the target arch, and the exact toolkit and
library builds (package versions, tool versions). The key hashes all of them.
Which files a compile reads cannot all be read off the source (``#include MACRO``, a
module a script imports), and NVRTC 11.8 to 13.0 have no dependency output; so the key
holds every file the compile *could* read outside the toolkit: the whole case folder,
every include folder its flags name, and every file its include lines reach wherever
it lies (``#include "../common/h.h"``, a folder behind a link: stages/compile/includes.py). An
edit anywhere there recompiles; an unchanged tree never replays a stale verdict.

The cache is shared by every case and every run, and case code runs beside it, so an
entry is written only by this process (never by a cell), from regular files in the
cell's own folder opened without following links, copied (never linked) in and out,
and carries a SHA-256 per file that is checked on every read: a damaged entry is
dropped and compiled again, with a note. Only a compiler's verdict on its inputs is
kept: a signal, the memory limit, a timeout or a crash say nothing about the code.
Entries are written under a temporary name and renamed into place, so a run killed
mid-store, or two shards storing the same entry, leave no half entry.

Other caches can be read beside the run's own (``--compile-cache-from``): one a CI job
restored, a team's shared folder, the test suite's cache of the shipped corpus. They are
read only: an entry is served from them when the run's own cache lacks it, checked the
same way, and a damaged one there is passed over (said, never removed: it is not ours).
The key is the content of every input, so an entry found there is the verdict this very
compile would reach here.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..common.folders import walk, written_by_the_tool
from ..config.corpus import CASE_FILE
from ..stages.cell.files import ARTIFACTS, COMPILE_RECORD
from ..stages.cell.job import Job
from ..stages.cell.result import StageResult
from ..stages.compile.built import figures_doubt
from ..stages.compile.flags import include_folders
from ..stages.compile.includes import IncludedFiles, included_files

# Bump when what a compile stage records or produces changes shape.
CACHE_FORMAT = 3
CACHEABLE = frozenset({"ok", "failed", "unsupported"})
RECORD = COMPILE_RECORD
MANIFEST = "manifest.json"
# No artifact a compile stage makes comes near this: anything larger is not stored.
MAX_ARTIFACT_BYTES = 1 << 30
# What nvcc (NVCC_*), GCC and clang (include and program paths) take from the environment
# into a compile, as the compiler of a cell inherits it.
COMPILER_ENVIRONMENT = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH",
                        "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH",
                        "GCC_EXEC_PREFIX", "COMPILER_PATH")
# Folders no compile reads that change on their own (Python's bytecode caches).
_SKIPPED_FOLDERS = frozenset({"__pycache__", ".git"})
# A case's case.toml reaches a compile only through the job's fields (its flags, kernel,
# options...), which the key holds one by one: hashed whole, an edit of a description, an
# expectation or a budget recompiled every cell of the case (issue 69). A source that
# #includes it still has it in the key, as any file its include lines reach.
_NOT_COMPILE_INPUTS = frozenset({CASE_FILE})


# The largest file a compile key reads: a header or a source is kilobytes, a generated
# one megabytes; past this it is no input a key can stand for.
MAX_KEY_FILE_BYTES = 256 << 20


class Unkeyable(Exception):
    """An input a compile key cannot stand for: a file that holds more than its size says
    (/proc, /sys: an #include "/proc/self/pagemap" was read for 623 s before its cell
    started), or one larger than any source. Such a cell is compiled, never cached."""


@functools.lru_cache(maxsize=65536)
def _file_digest(path: str, identity: tuple[int, int, int]) -> str:
    """A file's SHA-256, remembered for as long as its inode, size and mtime stay the same;
    read no further than its size (and MAX_KEY_FILE_BYTES): Unkeyable past that."""
    size = identity[1]
    if size > MAX_KEY_FILE_BYTES:
        raise Unkeyable(f"{path}: {size:,} bytes, more than a compile key reads")
    digest = hashlib.sha256()
    left = size
    with open(path, "rb") as handle:
        while left > 0:
            block = handle.read(min(1 << 20, left))
            if not block:
                break
            digest.update(block)
            left -= len(block)
        if handle.read(1):
            raise Unkeyable(f"{path}: holds more than its size says (a virtual file)")
    return digest.hexdigest()


def _identity(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_ino, info.st_size, info.st_mtime_ns


def folder_inputs(folders: Iterable[Path]) -> dict[str, str]:
    """Every file under `folders` by path, with its hash; a link by where it points,
    never followed (a link is the case's own statement, its target may be anything)."""
    files: dict[str, str] = {}
    for folder in dict.fromkeys(folders):
        for root, dirs, names in walk(folder, "compile's input folder"):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_FOLDERS
                             and not written_by_the_tool(os.path.join(root, d)))
            for name in sorted(set(names) - _NOT_COMPILE_INPUTS):
                path = os.path.join(root, name)
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    files[path] = "link:" + os.readlink(path)
                elif stat.S_ISREG(info.st_mode):
                    files[path] = _file_digest(path, (info.st_ino, info.st_size,
                                                      info.st_mtime_ns))
    return files


def _below(path: str, root: str) -> str:
    """`path` from `root` where it lies under it, or beside it in the folder that holds it
    (a library's headers unpacked next to its release: `../cutlass_torch-headers-c260d8/
    torch/include`, which the libraries' folder of the cache holds): a key that holds
    across cache folders. Written as it was, a run pointed at another cache
    (--compile-cache-from) missed every compile of such a library (the CUTLASS PyTorch
    extension's, 3 to 6 minutes on 2 cores). Anywhere else, the path itself."""
    holder = os.path.dirname(root.rstrip("/"))
    if _inside(path, root) or (holder not in ("", "/") and _inside(path, holder)):
        return os.path.relpath(path, root)
    return path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _headers(folders: tuple[str, ...], made: dict[tuple[str, ...], str] | None) -> str:
    if made is None:
        return library_digest(folders)
    if folders not in made:
        made[folders] = library_digest(folders)
    return made[folders]


def library_digest(folders: Iterable[str]) -> str:
    """One hash of every file under a library's include folders, by its path there: its
    package versions name the release, this says what the folders hold."""
    digest = hashlib.sha256()
    for folder in folders:
        for path, value in sorted(folder_inputs([Path(folder)]).items()):
            digest.update(f"{os.path.relpath(path, folder)}\0{value}\0".encode())
        digest.update(b"\1")
    return digest.hexdigest()


@functools.cache
def stage_code_digest() -> str:
    """A hash of the code that compiles and reads compilers' output.

    A cached verdict is only as good as the code that reached it: when the compile stage
    changes (how NVRTC is called, how a log is read), entries made by the old code must
    not be served as if this code had made them.
    """
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # the cudamatrix package
    for path in stage_code_files():
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def stage_code_files() -> list[Path]:
    """Every module of the cell side (the frontends' package and the readers of what a
    build ships, stages/binaries, too): the code a cached compile's verdict came from."""
    package = Path(__file__).resolve().parents[1]  # the cudamatrix package
    return sorted(package.joinpath("stages").rglob("*.py"))


def key_folders(job: Job) -> list[Path]:
    """The folders whose every file a compile could read and its key therefore holds: the
    source's own (its quoted includes start there), the case's, and each include folder
    its flags name (from the case folder, as the compilers are given them)."""
    source = Path(job.source)
    folders = [source.parent, Path(job.case_folder),
               *map(Path, include_folders(job.flags, job.case_folder, job.env))]
    return [f for f in dict.fromkeys(folders) if f.is_dir()]


def flag_files(job: Job) -> list[str]:
    """The files the case's flags name themselves (``-include pre.h``): read whole by the
    compile, so their bytes are in the key."""
    return [f for f in include_folders(job.flags, job.case_folder, job.env)
            if os.path.isfile(f)]


def key_files(job: Job, folders: list[Path]) -> IncludedFiles:
    """Every file the job's include lines reach outside the toolkit and the library (whose
    versions stand for their folders), searched as the compilers search: its own folder
    first, then `folders` (the case's and its -I folders), the toolkit's and the library's."""
    stood_for = [*(job.env.include_dirs if job.env else ()),
                 *(job.library.include_dirs if job.library else ())]
    search = [*map(str, folders[1:]), str(folders[0]) if folders else "", *stood_for]
    return included_files([job.source], [s for s in search if s], stood_for)


def compile_key(job: Job, provider: str, folders: list[Path] | None = None,
                included: IncludedFiles | None = None,
                headers: dict[tuple[str, ...], str] | None = None) -> str:
    """Everything that decides a compile's outcome, hashed.

    `provider` says where the compile runs: a toolkit-free frontend (the DSL's own
    compiler) behaves differently in a container than on the host. `folders` and
    `included`: the job's key_folders and key_files, where the caller has them already;
    `headers`: the run's library_digest of each library's folders, made once a run (a
    CUTLASS tree is 1,800 files: walked again for every cell, it slowed a warm re-run).
    """
    source = Path(job.source)
    env = job.env
    folders = key_folders(job) if folders is None else folders
    files = folder_inputs(folders)
    included = key_files(job, folders) if included is None else included
    material: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "stage_code": stage_code_digest(),
        "provider": provider,
        # Every field of the job that changes a compile (Job.compile_inputs: the frontend,
        # the arch, the flags, the kernel NVRTC instantiates, the options, the host
        # compiler...), so a field added for a new case key is in the key without a line here.
        **job.compile_inputs(),
        "host_entry": job.host_entry,
        # Where the case is: its logs name its paths, so another copy of it is another key.
        "source": str(source),
        "files": files,
        "toolkit": None if env is None else {
            "version": env.toolkit, "provider": env.provider,
            "packages": env.packages, "tools": env.tool_versions,
            # A host toolkit has no package versions: its location tells builds apart.
            "root": env.root if not env.packages else "",
            # In a container, its image (tagged by a hash of all that went into it): the
            # same packages on another base (another GCC, Python's headers) are another
            # compile.
            "image": env.image},
        "library": None if job.library is None else {
            "name": job.library.name, "version": job.library.version,
            "packages": job.library.packages,
            # Which of its folders go on the include path ([libraries.X] include), and
            # what they hold: a changed `include` is another compile.
            "include_dirs": [_below(d, job.library.root) for d in job.library.include_dirs],
            "headers": _headers(job.library.include_dirs, headers)},
        # Where the case's relative include folders start.
        "case_dir": job.case_folder,
    }
    # The variables nvcc and the host compiler read as flags and include paths: a cell's
    # compiler inherits this process's environment. Only the ones set go in, so every
    # key made without them stays what it was.
    # The Python headers of a cell of the python axis, by release and package (where the
    # cache unpacked them is no input); only where set, so every other key stays.
    if job.python_headers is not None:
        material["python_headers"] = {"version": job.python_headers.version,
                                      "package": job.python_headers.package,
                                      "ext_suffix": job.python_headers.ext_suffix}
    said = {name: os.environ[name] for name in COMPILER_ENVIRONMENT if name in os.environ}
    if said:
        material["environment"] = said
    # Files the include lines reach that the folders above did not hash (their content, a
    # link's target read through it), and quoted names found nowhere (the file appearing
    # later is another compile). A case with none keeps the key it had.
    hashed = {os.path.realpath(path) for path, digest in files.items()
              if not digest.startswith("link:")}
    outside = {path: _file_digest(path, _identity(path))
               for path in (*included.files, *map(os.path.realpath, flag_files(job)))
               if path not in hashed and os.path.isfile(path)}
    if outside:
        material["included"] = outside
    if included.unresolved:
        material["unresolved"] = list(included.unresolved)
    text = json.dumps(material, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_regular(path: Path, limit: int = MAX_ARTIFACT_BYTES) -> bytes | None:
    """A cell's file as the cell left it: a regular file of its own, read without following
    a link (a case can make kernel.ptx point at any file of the host); None otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return handle.read(limit + 1)[:limit]


def _write_entry(staging: Path, files: dict[str, bytes]) -> None:
    """An entry's files and the manifest of their hashes, in its staging folder (renamed
    into place by the caller): what restore checks every file against."""
    staging.mkdir(parents=True)
    for name, data in files.items():
        _write_new(staging / name, data)
    manifest = {"format": CACHE_FORMAT,
                "files": {name: _sha256(data) for name, data in files.items()}}
    _write_new(staging / MANIFEST, json.dumps(manifest).encode())


def _write_new(path: Path, data: bytes) -> None:
    """A fresh file of our own, never through a link a cell may have left in its folder."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CompileCache:
    """Compile results by key under ``<cache>/compile``, and read-only under each of
    `read_from`'s; disabled, it reads and writes nothing."""

    def __init__(self, root: Path, enabled: bool = True, read_from: Iterable[Path] = ()) -> None:
        self.root, self.enabled = root / "compile", enabled
        self.read_from = tuple(folder / "compile" for folder in read_from
                               if (folder / "compile").resolve() != self.root.resolve())

    def _entry(self, key: str, root: Path | None = None) -> Path:
        return (root or self.root) / key[:2] / key

    def _verified(self, entry: Path) -> tuple[dict[str, bytes] | None, str]:
        """The entry's files, each checked against its manifest; or why it cannot be used."""
        manifest = _read_regular(entry / MANIFEST, 1 << 20)
        if manifest is None:
            return None, "no manifest"
        try:
            expected = json.loads(manifest)
            names = dict(expected["files"])
        except (ValueError, KeyError, TypeError):
            return None, "its manifest is damaged"
        if RECORD not in names or not set(names) <= {RECORD, *ARTIFACTS}:
            return None, "its manifest names unexpected files"
        files: dict[str, bytes] = {}
        for name, digest in names.items():
            data = _read_regular(entry / name)
            if data is None:
                return None, f"{name} is missing"
            if _sha256(data) != digest:
                return None, f"{name} does not match its hash"
            files[name] = data
        return files, ""

    def restore(self, key: str, workdir: Path) -> tuple[StageResult | None, str]:
        """Put a cached compile's artifacts into `workdir`: its compile stage (None on a miss)
        and a note when an entry was there but damaged (the run's own is then dropped)."""
        if not self.enabled:
            return None, ""
        notes: list[str] = []
        for root in (self.root, *self.read_from):
            entry = self._entry(key, root)
            if not entry.is_dir():
                continue
            stage, files, problem = self._read(entry)
            if stage is not None:  # what was passed over on the way is said in the hit
                return self._restored(key, stage, files, workdir, root, notes), ""
            if root == self.root:
                shutil.rmtree(entry, ignore_errors=True)
                notes.append(f"compile cache entry {key[:16]} dropped ({problem}); "
                             "compiled again")
            else:
                notes.append(f"compile cache entry {key[:16]} in {root.parent} passed over "
                             f"({problem})")
        return None, "; ".join(notes)

    def _read(self, entry: Path) -> tuple[StageResult | None, dict[str, bytes], str]:
        """An entry's compile stage and artifacts, or why it cannot be used."""
        files, problem = self._verified(entry)
        if files is None:
            return None, {}, problem
        try:
            stage = StageResult.from_dict(json.loads(files.pop(RECORD)))
        except (ValueError, KeyError, TypeError):
            return None, {}, f"{RECORD} is damaged"
        # A record whose figures are proved wrong is no verdict to serve, whatever its key
        # (--compile-apart once answered from a six-arch build's mixed-up figures).
        doubt = figures_doubt(stage)
        if doubt:
            return None, {}, doubt
        return stage, files, ""

    def _restored(self, key: str, stage: StageResult, files: dict[str, bytes], workdir: Path,
                  root: Path, notes: list[str]) -> StageResult:
        """The entry's artifacts written into the cell's folder, its stage marked a hit."""
        workdir.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            _write_new(workdir / name, data)
        details = {**stage.details, "cache_key": key[:16]}
        if root != self.root:
            details["cache_from"] = str(root.parent)
        if notes:
            details["cache_note"] = "; ".join(notes)
        restored = replace(stage, details=details, cache="hit")
        _write_new(workdir / RECORD, json.dumps(restored.to_dict()).encode())
        return restored

    def add_finding(self, key: str, name: str, finding: object) -> bool:
        """The run's own entry's compile record given a finding the run's process made
        after the compile (since which CCCL release a name exists: providers/
        first_release.py) as its detail `name`, so that whoever is served this compile
        (a warm re-run, --compile-cache-from on a runner without the index) has the
        finding with it, never looking again. The entry is rewritten whole beside the
        old one and swapped in (a reader in between misses and compiles: never a record
        whose hash is wrong). False where there is no entry of the run's own (one of
        --compile-cache-from's is read only), it is damaged, or already has it."""
        if not self.enabled:
            return False
        entry = self._entry(key)
        stage, files, _ = self._read(entry) if entry.is_dir() else (None, {}, "")
        if stage is None or name in stage.details:
            return False
        files[RECORD] = json.dumps(replace(stage, details={**stage.details, name: finding})
                                   .to_dict()).encode()
        staging = entry.with_name(f"{entry.name}.partial-{os.getpid()}-{id(files)}")
        old = entry.with_name(f"{entry.name}.old-{os.getpid()}-{id(files)}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _write_entry(staging, files)
            entry.rename(old)
            try:
                staging.rename(entry)
            except OSError:  # the old one back: a finding missed costs a look-up only
                with contextlib.suppress(OSError):
                    old.rename(entry)
                raise
        except OSError:  # another process swapped it first: its record stands
            shutil.rmtree(staging, ignore_errors=True)
            return False
        finally:
            shutil.rmtree(old, ignore_errors=True)
        return True

    def store(self, key: str, workdir: Path, stage: StageResult) -> bool:
        """Keep a compiler's verdict; False when the stage says nothing about the code
        (a timeout, a crash, a signal, the memory limit) or its artifacts are not plain files."""
        if not self.enabled or stage.stage != "compile" or stage.status not in CACHEABLE \
                or stage.accident:
            return False
        entry = self._entry(key)
        if entry.is_dir():
            return True
        files = {RECORD: json.dumps(stage.to_dict()).encode()}
        if stage.status == "ok":
            for name in ARTIFACTS:
                if not os.path.lexists(workdir / name):
                    continue
                data = _read_regular(workdir / name)
                if data is None:  # a link or a device where an artifact should be
                    return False
                files[name] = data
        staging = entry.with_name(f"{entry.name}.partial-{os.getpid()}-{id(stage)}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _write_entry(staging, files)
            try:
                staging.rename(entry)
            except OSError:  # another process stored it first
                shutil.rmtree(staging, ignore_errors=True)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return False
        return True
