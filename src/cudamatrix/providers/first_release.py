"""Since which release: for a compile that failed on a header or a name the cell's CCCL
(libcu++, CUB, Thrust) does not have, the first CCCL release of the matrix's
``[libraries.cccl]`` versions that has it, found in those releases' own headers.

``<cuda/cmath>`` is not in CUDA 12.4's CCCL; ``cuda::fast_mod_div`` is not in 13.0's. A
user reading "cannot open source file" or "qualified name is not allowed" wants to hear
from which release on the code builds. The releases' headers are the wheels the tool
already fetches for a header library (wheels.prepare_header_library: byte ranges of
``nvidia-cuda-cccl(-cu12)``, kept in the run's cache); each answer is kept there too, by
name and release (``first-release/cccl.json``), so a release is read once per name.

It runs in the run's own process once a cell's compile has failed (it needs other
releases' headers, which the cell's worker does not have), for the releases newer than
the one the cell compiled with, oldest first, stopping at the first that has it. Where a
release cannot be fetched (no network, pip's --no-index, a refused connection, a timeout),
the search stops there and says so (`since_release_unknown`: "could not look up which
release first has X: why"): a GPU runner without the index read "No rule matched" for a
true compile failure. No answer is kept in the cache that was not read off the headers,
and a release that could not be fetched is not asked again in the same run (each cell
waited on the same refusal). The run's --run-timeout stops it too (an index that never
answers held a run minutes past its limit): the compile stage then says so
(`since_release_stopped`).

A finding is kept with the compile it explains (orchestrator/cell_runner.py writes it into
the compile cache's entry, and the cell's record carries it), so a warm re-run, a runner
reading another machine's cache (--compile-cache-from) or --prebuilt record, answers
without looking again: only where the index is reachable is the look-up made at all.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from ..common.confined import Outside, confined, plain_relative
from ..common.files import read_marker, write_atomic
from ..common.locks import folder_lock
from ..common.up_to_date import InputLedger
from ..config.matrix import Matrix
from ..errors import EnvironmentUnavailable, RunOutOfTime
from ..stages.cell.result import StageResult
from ..stages.compile.logs import error_lines
from .wheels import prepare_header_library

# The detail of the compile stage the finding is kept under; and the one that says the
# run's --run-timeout stopped the look-up.
SINCE_RELEASE = "since_release"
SINCE_RELEASE_STOPPED = "since_release_stopped"
# The detail that says the look-up could not be made, and why (the index out of reach).
SINCE_RELEASE_UNKNOWN = "since_release_unknown"
# The most of the reason a release could not be fetched that a finding says: one line.
_WHY_CHARS = 300
LIBRARY = "cccl"
# CCCL's top folders, and the namespace each holds.
_FOLDERS = {"cuda": "cuda", "cub": "cub", "thrust": "thrust", "nv": "nv"}
_ERRORS_READ = 3
_HEADER = re.compile(r'cannot open source file "(?P<header>(?:cuda|cub|thrust|nv)/[^"]+)"'
                     r"|fatal error: (?P<gcc>(?:cuda|cub|thrust|nv)/[^:\s]+): No such file")
_MEMBER = re.compile(r'namespace "(?P<scope>(?:cuda|cub|thrust)(?:::\w+)*)" has no member '
                     r'"(?P<name>\w+)"')
_QUALIFIED = "qualified name is not allowed"
_QUALIFIED_NAME = re.compile(r"(?:cuda|cub|thrust)(?:::\w+)+")


@dataclass(frozen=True)
class Lacking:
    """What the compile could not find: a CCCL header (``cuda/cmath``) or a name in one of
    its namespaces (``cuda::fast_mod_div``)."""

    kind: str  # "header" or "name"
    name: str

    def shown(self) -> str:
        return f"<{self.name}>" if self.kind == "header" else self.name


@dataclass(frozen=True)
class SinceRelease:
    """The first release that has it ("" where none looked at does), the toolkit release
    whose CCCL that is, and the releases read, in order."""

    kind: str
    name: str
    release: str
    toolkit: str
    checked: tuple[str, ...]
    library: str = "CCCL"
    # Releases before the answer whose wheels cannot say (12.0-12.2's lack libcu++'s
    # public headers): the answer is the first of those that could.
    unknown: tuple[str, ...] = ()

    def said(self) -> str:
        shown = Lacking(self.kind, self.name).shown()
        if not self.release:
            return (f"`{shown}` is in none of the {self.library} releases looked at "
                    f"({', '.join(self.checked)})")
        caveat = (f"; the wheels of {', '.join(self.unknown)} lack libcu++'s public headers "
                  "and cannot say" if self.unknown else "")
        return (f"`{shown}` is in {self.library} from {self.release} on "
                f"(toolkit {self.toolkit}){caveat}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "checked": list(self.checked), "unknown": list(self.unknown),
                "said": self.said()}


@dataclass(frozen=True)
class NotLooked:
    """A look-up that could not be made: what the compile lacked, and why a release's
    headers could not be read (the index refused, timed out, or is turned off)."""

    kind: str
    name: str
    release: str
    why: str

    def said(self) -> str:
        return (f"could not look up which release first has "
                f"`{Lacking(self.kind, self.name).shown()}`: {self.why}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "said": self.said()}


def one_line(reason: str) -> str:
    """A fetch's error as one bounded line (pip's message spans lines)."""
    line = " ".join(reason.split())
    return line if len(line) <= _WHY_CHARS else f"{line[:_WHY_CHARS - 3]}..."


def lacking(log: str) -> Lacking | None:
    """The CCCL header or name a compile's first errors say is not there; None for any
    other failure. "qualified name is not allowed" names it only by the source line EDG
    prints under the error, at its caret."""
    errors = error_lines(log)[:_ERRORS_READ]
    for line in errors:
        header = _HEADER.search(line)
        if header is not None:
            name = header.group("header") or header.group("gcc")
            # The source's own words (#include <cuda/../../etc/hostname>): a name that
            # climbs out of its folder is no CCCL header, and no folder is asked for it.
            return Lacking("header", name) if plain_relative(name) else None
        member = _MEMBER.search(line)
        if member is not None:
            return Lacking("name", f"{member.group('scope')}::{member.group('name')}")
        if _QUALIFIED in line:
            name = _at_caret(log, line)
            if name is not None:
                return Lacking("name", name)
    return None


def _at_caret(log: str, error: str) -> str | None:
    """The qualified CCCL name at the caret EDG prints two lines under `error`."""
    lines = log.splitlines()
    for index, text in enumerate(lines):
        if text.strip() == error and index + 2 < len(lines):
            source, caret = lines[index + 1], lines[index + 2]
            column = caret.find("^")
            found = _QUALIFIED_NAME.match(source, column) if column >= 0 else None
            return found.group(0) if found else None
    return None


def has(include_dirs: Sequence[str], lack: Lacking) -> bool:
    """Whether a release's include folders have the header, or a header of the name's
    namespace folder (cuda/, cub/, thrust/) that declares the name (declares_word)."""
    if lack.kind == "header":
        if not plain_relative(lack.name):
            return False
        for folder in include_dirs:
            try:
                if confined(lack.name, folder, [folder]).is_file():
                    return True
            except Outside:
                continue
        return False
    parts = lack.name.split("::")
    word = parts[-1].encode()
    folder = _FOLDERS.get(parts[0], parts[0])
    for root in include_dirs:
        base = Path(root) / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            if word in data and declares_word(data.decode("utf-8", "replace"), parts[-1]):
                return True
    return False


# What a header's text holds that is not code: comments, string and character literals.
_NOT_CODE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'",
                       re.DOTALL)
# Words before a name that make its line a use, not a declaration (`return max(a, b)`).
_USES = frozenset({"return", "new", "delete", "throw", "case", "else", "do", "sizeof",
                   "co_return", "co_yield", "typename", "template", "goto", "decltype"})


def declares_word(text: str, name: str) -> bool:
    """Whether C++ `text` (a header) declares `name`, as far as its words show: a class,
    struct, union, enum, alias, concept or typedef of that name, or a function or variable
    of it (a type's word, then the name, then `(`, `=`, `{`, `;` or `<`). A comment, a
    string or a call (`x = name(...)`, `return name(...)`) does not count."""
    code = _NOT_CODE.sub(" ", text)
    quoted = re.escape(name)
    kind = re.compile(rf"\b(?:struct|class|union|enum|using|concept|typedef)\b[^;{{}}()]*?"
                      rf"(?<![\w$]){quoted}(?![\w$])")
    if kind.search(code):
        return True
    typed = re.compile(rf"(?P<before>[\w$]+|[>&*\]])\s+{quoted}\s*[(={{;<]")
    return any(m.group("before") not in _USES for m in typed.finditer(code))


def toolkit_of(release: str) -> str:
    """The toolkit release whose CCCL a wheel version is (13.1.115: 13.1)."""
    try:
        parsed = Version(release)
    except InvalidVersion:
        return release
    return f"{parsed.major}.{parsed.minor}"


def own_cccl(versions: Mapping[str, str], toolkit: str) -> Version | None:
    """The CCCL release the cell compiled with: a header library's ahead of the toolkit's,
    else the toolkit's own package, else the toolkit's release."""
    ahead = [v for n, v in versions.items() if "cccl" in n and n.endswith("(headers)")]
    own = [v for n, v in versions.items() if "cccl" in n and not n.endswith("(headers)")]
    for text in (*ahead, *own, toolkit):
        try:
            return Version(text)
        except InvalidVersion:
            continue
    return None


# A release's include folders and the version its wheel had (fetched where need be), or
# EnvironmentUnavailable.
Headers = Callable[[str], tuple[Sequence[str], str]]
# Headers every complete CCCL has: a wheel without them (12.0-12.2's carry CUB and Thrust
# but of libcu++ only cuda/std, no cuda/pipeline, no nv/target) cannot say what its
# release lacks.
_COMPLETE = (Lacking("header", "cub/cub.cuh"), Lacking("header", "nv/target"),
             Lacking("header", "cuda/pipeline"))


class FirstReleases:
    """The lookups of one run: every answer read off a release's headers, kept in the
    run's cache by name and release (`cache`/first-release/cccl.json)."""

    def __init__(self, releases: Sequence[str], headers: Headers, cache: Path) -> None:
        self.releases = sorted(releases, key=Version)
        self.headers = headers
        self.file = cache / "first-release" / f"{LIBRARY}.json"
        self._lock = threading.Lock()
        self._known: dict[str, bool | str] | None = None
        # The releases this run could not fetch, and why: asked once a run, never kept.
        self._unreachable: dict[str, str] = {}

    def _key(self, lack: Lacking, release: str) -> str:
        return f"{lack.kind}:{lack.name}@{release}"

    def _load(self) -> dict[str, bool | str]:
        if self._known is None:
            read = read_marker(self.file)
            self._known = {k: v for k, v in read.items() if isinstance(v, bool | str)} \
                if isinstance(read, dict) else {}
        return self._known

    def _keep(self, key: str, value: bool | str) -> None:
        """One answer into the cache file (under its lock: runs share the cache)."""
        with folder_lock(self.file):
            kept = read_marker(self.file)
            kept = kept if isinstance(kept, dict) else {}
            kept[key] = value
            write_atomic(self.file, json.dumps(kept, indent=1, sort_keys=True))
        self._load()[key] = value

    def _kept(self, key: str) -> object:
        with self._lock:
            return self._load().get(key)

    def _keep_read(self, key: str, found: bool | str) -> None:
        with self._lock:
            self._keep(key, found)

    def _flag(self, key: str, read: Callable[[], bool]) -> bool:
        """A yes or no of a release, from the cache, else read and kept."""
        known = self._kept(key)
        if isinstance(known, bool):
            return known
        found = read()
        self._keep_read(key, found)
        return found

    def _version(self, release: str) -> str:
        """The version a release's wheel had (``12.6``: 12.6.77), from the cache, else read
        and kept."""
        key = f"version@{release}"
        known = self._kept(key)
        if isinstance(known, str):
            return known
        found = self.headers(release)[1]
        self._keep_read(key, found)
        return found

    def release_has(self, lack: Lacking, release: str) -> tuple[bool | None, str]:
        """Whether `release`'s headers have it (None: its wheel is incomplete and cannot
        say), and the version its wheel had."""
        version = self._version(release)
        marks = ",".join(mark.name for mark in _COMPLETE)
        if not self._flag(f"complete:{marks}@{release}",
                          lambda: all(has(self.headers(release)[0], m) for m in _COMPLETE)):
            return None, version
        return self._flag(self._key(lack, release),
                          lambda: has(self.headers(release)[0], lack)), version

    def find(self, lack: Lacking, after: Version | None) -> SinceRelease | NotLooked | None:
        """The first release newer than `after` that has it, or a finding of none; where a
        release before the answer could not be fetched (no network, a release the index
        does not have yet), that it could not look and why (an answer is only what the
        headers said, so the search stops there); None where no release was looked at."""
        checked: list[str] = []
        unknown: list[str] = []
        for release in self.releases:
            if after is not None and Version(release) <= after:
                continue
            missed = self._unreachable.get(release)
            if missed is None:
                try:
                    holds, version = self.release_has(lack, release)
                except RunOutOfTime:
                    raise  # the run's limit: the search stops, said by with_first_release
                except (EnvironmentUnavailable, OSError) as exc:
                    missed = self._unreachable.setdefault(release, one_line(str(exc)))
            if missed is not None:
                return NotLooked(lack.kind, lack.name, release, missed)
            if holds is None:
                unknown.append(version)
                continue
            checked.append(version)
            if holds:
                return SinceRelease(lack.kind, lack.name, version, toolkit_of(version),
                                    tuple(checked), unknown=tuple(unknown))
        if not checked:
            return None
        return SinceRelease(lack.kind, lack.name, "", "", tuple(checked))


_RUNS: dict[Path, FirstReleases] = {}
_RUNS_LOCK = threading.Lock()


def for_run(matrix: Matrix, cache: Path, ledger: InputLedger) -> FirstReleases | None:
    """The lookups over the CCCL releases the matrix names: its [libraries.cccl] versions,
    and each toolkit release's own CCCL (``nvidia-cuda-cccl-cu12==12.6.*``) where no such
    version is of that release; one per cache folder and process. None where the matrix
    names no CCCL library."""
    library = matrix.libraries.get(LIBRARY)
    if library is None:
        return None
    named = [v for v in library.versions if _is_release(v)]
    series = {toolkit_of(v) for v in named}
    releases = named + [t for t in matrix.toolkits if _is_release(t) and t not in series
                        and str(Version(t).major) in library.packages]
    if not releases:
        return None

    def headers(release: str) -> tuple[Sequence[str], str]:
        prepared = prepare_header_library(library, release, cache, ledger)
        return prepared.include_dirs, next(iter(prepared.packages.values()), release)

    with _RUNS_LOCK:
        found = _RUNS.get(cache)
        if found is None or found.releases != sorted(releases, key=Version):
            found = _RUNS[cache] = FirstReleases(releases, headers, cache)
        return found


def _is_release(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def with_first_release(stages: Sequence[StageResult], lookups: FirstReleases | None,
                       versions: Mapping[str, str], toolkit: str) -> list[StageResult]:
    """`stages`, a failed compile that lacks a CCCL header or name given the first release
    that has it (its `since_release` detail), or why it could not be looked up (its
    `since_release_unknown`: asked again by a later run, which may reach the index);
    others as they were."""
    stages = list(stages)
    if lookups is None or not stages or stages[0].stage != "compile" \
            or stages[0].status != "failed" or SINCE_RELEASE in stages[0].details \
            or SINCE_RELEASE_STOPPED in stages[0].details:
        return stages
    lack = lacking(stages[0].log)
    if lack is None:
        return stages
    try:
        found = lookups.find(lack, own_cccl(versions, toolkit))
    except RunOutOfTime as stopped:  # the releases' headers asked for past the run's limit
        stages[0] = replace(stages[0], details={**stages[0].details,
                                                SINCE_RELEASE_STOPPED: str(stopped)})
        return stages
    if found is not None:
        said = SINCE_RELEASE_UNKNOWN if isinstance(found, NotLooked) else SINCE_RELEASE
        details = {k: v for k, v in stages[0].details.items() if k != SINCE_RELEASE_UNKNOWN}
        stages[0] = replace(stages[0], details={**details, said: found.to_dict()})
    return stages
