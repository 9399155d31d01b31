"""Since which arch a name exists: for a compile that failed because a function, intrinsic
or type is undefined (or has no matching overload) for the cell's arch, the lowest newer
arch the toolkit knows whose device-side preprocessing declares it, and the header line
and the ``#if`` that guard the declaration.

It runs in the cell's own worker, right after the failed compile, where the toolkit,
the includes and the flags are: the frontend hands in how to preprocess the translation
unit for an arch (``nvcc -E --gpu-architecture=sm_XX``: one virtual arch, so
``__CUDA_ARCH__`` is set, as the device pass sees it). The same unit is preprocessed for
the cell's arch and for the newest arch the toolkit knows; only where the newest one
declares the name at a place the cell's arch does not are the archs in between tried,
oldest first, stopping at the first that declares it. Every preprocess gets what is left
of the cell's time limit, and the search stops when that is spent.

The finding is kept as the compile stage's ``since_arch`` detail, whatever it is (an arch
and its guard, or none of the archs tried): the diagnosis rule reads it from there.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ...common.confined import case_path, inside
from ...common.recorded import UnreadableRecord, read_regular
from ...common.versions import Arch
from ..process.limits import run_tool
from .logs import error_lines

# The detail of the compile stage the finding is kept under.
SINCE_ARCH = "since_arch"
# How many of the first error lines are read for a name: the decisive one and the few
# after it (a later error is as often the echo of an earlier one).
_ERRORS_READ = 3

# EDG's (nvcc's and NVRTC's front end) and GCC's words for a name that is not there.
_UNDEFINED = (
    re.compile(r'identifier "(?P<name>[^"\s]+)" is undefined'),
    re.compile(r'no instance of (?:overloaded function|function template|constructor) '
               r'"(?P<name>[^"]+)" matches'),
    re.compile(r'(?:namespace|class|struct|union) "(?P<scope>[^"]+)" has no member '
               r'"(?P<name>[^"]+)"'),
    re.compile(r'["\'](?P<name>[^"\']+)["\'] is not a member of ["\'](?P<scope>[^"\']+)["\']'),
)
# A line marker of the preprocessor's output: GCC's `# 12 "file" 1`, or `#line 12 "file"`.
_MARKER = re.compile(r'#(?:line)?\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
# A conditional directive of a header (its word and its condition).
_DIRECTIVE = re.compile(r"\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)")
_ARCH_MACRO = "__CUDA_ARCH"
# The largest header whose guard is read (CUDA's and CUTLASS's largest are under 1 MiB).
MAX_HEADER_BYTES = 16 << 20
# The largest preprocessed unit the search reads (a CUTLASS GEMM's is tens of MiB).
MAX_PREPROCESSED_BYTES = 256 << 20


@dataclass(frozen=True)
class Guard:
    """The conditional directive a declaration sits under: its line and its words as the
    header writes them (an ``#else`` says which ``#if`` it is the other side of)."""

    line: int
    text: str


@dataclass(frozen=True)
class SinceArch:
    """What the search found: the name, the lowest arch that declares it ("" when none of
    the archs tried does), where (file and line) and under which guard, and the archs
    preprocessed, in order."""

    name: str
    arch: str
    checked: tuple[str, ...]
    # The arch whose device code declares it where the host pass (no __CUDA_ARCH__, which
    # compiles a kernel's body too) does not: then no arch builds the call ("arch" is "").
    device_only: str = ""
    file: str = ""
    line: int = 0
    guard: str = ""
    guard_line: int = 0
    seconds: float = 0.0
    # Where no preprocessor could be asked (NVRTC has none of its own): the compiler that
    # was asked to compile the unit for the newer archs instead ("NVRTC 13.0"), and the
    # cell's arch, which it refused.
    compiled_by: str = ""
    own: str = ""

    def said(self) -> str:
        """The finding as a sentence, as the diagnosis shows it."""
        where = f"{Path(self.file).name}:{self.line}" if self.file else "its header"
        under = f" under `{self.guard}` (line {self.guard_line})" if self.guard else ""
        if self.device_only:
            return (f"`{self.name}` is declared only for the device code of "
                    f"{self.device_only} and newer, never for the host pass: "
                    f"{where}{under}")
        if not self.arch:
            return (f"`{self.name}` is declared for none of the archs preprocessed "
                    f"({', '.join(self.checked)})")
        if self.compiled_by:
            return (f"`{self.name}` compiles only for {self.arch} and newer: "
                    f"{self.compiled_by} finds it for {self.arch}, not for {self.own}")
        return f"`{self.name}` is declared only for {self.arch} and newer: {where}{under}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "checked": list(self.checked), "said": self.said()}


def undefined_name(log: str) -> str | None:
    """The name the compile's first errors say is undefined or has no matching overload
    (``dequant``, ``cuda::fast_mod_div``), qualified where the error gives its scope; None
    where the first errors say something else."""
    for line in error_lines(log)[:_ERRORS_READ]:
        for pattern in _UNDEFINED:
            found = pattern.search(line)
            if found is not None:
                values = found.groupdict()
                name = values["name"]
                return f"{values['scope']}::{name}" if values.get("scope") else name
    return None


def searched_token(name: str) -> str:
    """The word a declaration of `name` holds: its last component, without template
    arguments (``cute::foo<int>`` -> ``foo``; ``__half::__half`` -> ``__half``)."""
    return name.split("<", 1)[0].rsplit("::", 1)[-1].strip()


def locations(preprocessed: str, token: str) -> list[tuple[str, int]]:
    """Each (file, line) of the original sources whose line in `preprocessed` (a
    preprocessor's output, with its line markers) holds `token` as a word, in order."""
    word = re.compile(rf"(?<![\w$]){re.escape(token)}(?![\w$])")
    found: list[tuple[str, int]] = []
    file, line = "", 0
    for text in preprocessed.splitlines():
        if text.startswith("#"):
            marker = _MARKER.match(text)
            if marker is not None:
                file, line = marker.group(2), int(marker.group(1))
                continue
        if token in text and word.search(text):
            found.append((file, line))
        line += 1
    return found


def new_locations(older: str, newer: str, token: str) -> list[tuple[str, int]]:
    """The places `token` appears in `newer`'s preprocessing and not in `older`'s: what
    the newer arch's guards let in (its declaration first, in the order it was read)."""
    seen = set(locations(older, token))
    return [place for place in dict.fromkeys(locations(newer, token)) if place not in seen]


def enclosing_guard(source: str, line: int) -> Guard | None:
    """The conditional directive of `source` (a header's text) nearest above `line` that
    encloses it and mentions ``__CUDA_ARCH`` (``__CUDA_ARCH__``, ``__CUDA_ARCH_FEAT_SM90_ALL``,
    ``__CUDA_ARCH_SPECIFIC__``); else the innermost enclosing one; None outside any."""
    # Each open conditional: the #if that opened it, and the branch `line` would be in.
    stack: list[tuple[Guard, Guard]] = []
    lines = source.splitlines()
    index = 0
    while index < min(line - 1, len(lines)):
        number, text = index + 1, lines[index]
        # A directive continued over lines with a backslash is one directive.
        while text.endswith("\\") and index + 1 < len(lines):
            index += 1
            text = text[:-1] + " " + lines[index].strip()
        index += 1
        found = _DIRECTIVE.match(text)
        if found is None:
            continue
        word, rest = found.group(1), " ".join(_without_comment(found.group(2)).split())
        if word in ("if", "ifdef", "ifndef"):
            opened = Guard(number, f"#{word} {rest}".strip())
            stack.append((opened, opened))
        elif word == "endif":
            if stack:
                stack.pop()
        elif stack:  # elif, else: the other side of the open #if
            opened = stack.pop()[0]
            branch = f"#{word} {rest}".strip()
            stack.append((opened, Guard(number, f"{branch} (of `{opened.text}`, line "
                                                f"{opened.line})")))
    branches = [branch for _, branch in stack]
    if not branches:
        return None
    return next((g for g in reversed(branches) if _ARCH_MACRO in g.text), branches[-1])


def _without_comment(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text.split("//", 1)[0])


def newer_archs(own: str, known: Iterable[str]) -> list[str]:
    """The archs of `known` (``sm_80``, ``compute_90``) newer than `own`, oldest first, as
    real archs (``sm_XX``); an arch-specific own arch (sm_90a) counts as its capability."""
    mine = Arch.parse(own).capability
    archs = set()
    for name in known:
        try:
            parsed = Arch.parse(name.replace("compute_", "sm_"))
        except ValueError:
            continue
        if parsed.capability > mine and not parsed.suffix:
            archs.add(parsed)
    return [a.name for a in sorted(archs)]


def toolkit_archs(nvcc: str, timeout: float) -> list[str]:
    """The virtual archs this nvcc knows (``nvcc --list-gpu-arch``); none where it cannot
    say (an nvcc older than 11.0)."""
    try:
        listed = run_tool([nvcc, "--list-gpu-arch"], max(1.0, min(timeout, 60.0)))
    except subprocess.TimeoutExpired:
        return []
    if listed.code != 0:
        return []
    return re.findall(r"\bcompute_\d+[a-z]?\b", listed.output)


# Preprocess the translation unit for an arch: its text, or None where the preprocessor
# refused (an #error for that arch) or ran past the time given.
Preprocess = Callable[[str, float], "str | None"]


def host_preprocess_command(dryrun: str, output: Path) -> list[str] | None:
    """The host pass's preprocessing line of an ``nvcc --dryrun -c`` (its ``gcc -E`` with
    no ``__CUDA_ARCH__`` defined), writing to `output`; None where the dry run has none."""
    for text in dryrun.splitlines():
        if not text.startswith("#$ ") or " -E " not in text:
            continue
        try:
            words = shlex.split(text[3:])
        except ValueError:
            continue
        if "-E" in words and "-o" in words[:-1] \
                and not any(w.startswith("-D__CUDA_ARCH__=") for w in words):
            words[words.index("-o") + 1] = str(output)
            return words
    return None


def since_arch(name: str, own: str, newer: Sequence[str], preprocess: Preprocess,
               deadline: float, folder: Path | None = None,
               host: Preprocess | None = None,
               readable: Sequence[str | Path] = ()) -> SinceArch:
    """The lowest arch of `newer` (oldest first) whose preprocessing declares `name` where
    `own`'s does not, with the header line and its guard. `deadline`: the monotonic time
    the cell's limit ends at; no preprocess starts past it. `folder`: where the
    preprocessor ran (a relative file of its line markers is read from there).
    `readable`: the folders a header named by a line marker may be read from (the case,
    the toolkit, the include folders; none given: `folder`): a marker is the source's to
    write (``#line 1 "/dev/zero"``), so any other file is not read. `host`:
    the host pass's preprocessing for an arch (nvcc's EDG compiles a kernel's body there
    too, without __CUDA_ARCH__): where it reads the name but not that declaration, no
    arch builds the call, and the finding says so (`device_only`)."""
    started = time.monotonic()
    token = searched_token(name)
    checked: list[str] = []

    def text_for(arch: str) -> str | None:
        left = deadline - time.monotonic()
        if left < 1.0:
            return None
        checked.append(arch)
        return preprocess(arch, left)

    def none() -> SinceArch:
        return SinceArch(name, "", tuple(checked), seconds=round(time.monotonic() - started, 2))

    if not newer or not token:
        return none()
    base = text_for(own)
    newest = text_for(newer[-1]) if base is not None else None
    if base is None or newest is None or not new_locations(base, newest, token):
        return none()
    for arch in newer:
        text = newest if arch == newer[-1] else text_for(arch)
        if text is None:
            if deadline - time.monotonic() < 1.0:
                break
            continue
        places = new_locations(base, text, token)
        if not places:
            continue
        found = _found(name, arch, places[0], tuple(checked), started, folder, readable)
        host_text = None
        if host is not None and deadline - time.monotonic() >= 1.0:
            checked.append("host")
            host_text = host(arch, deadline - time.monotonic())
        seen = locations(host_text, token) if host_text is not None else []
        if seen and places[0] not in seen:
            return replace(found, arch="", device_only=arch, checked=tuple(checked),
                           seconds=round(time.monotonic() - started, 2))
        return replace(found, checked=tuple(checked),
                       seconds=round(time.monotonic() - started, 2))
    return none()


# Compile the unit for an arch: whether the name is still undefined there (False: the
# compiler found it), or None where it could not say (an accident of the compiler).
StillUndefined = Callable[[str], "bool | None"]


def since_arch_compiled(name: str, own: str, newer: Sequence[str], still: StillUndefined,
                        deadline: float, each: float, compiled_by: str) -> SinceArch:
    """The lowest arch of `newer` for which the compiler finds `name`, where no preprocessor
    can be asked (NVRTC): the newest arch first (a name no arch has costs one compile),
    then the others oldest first, stopping at the first. A compile cannot be stopped once
    started (NVRTC runs in the worker's own process), so none starts unless `each` (what
    the failed compile took) is left before `deadline`."""
    started = time.monotonic()
    checked: list[str] = [own]

    def undefined(arch: str) -> bool | None:
        if deadline - time.monotonic() < max(1.0, each):
            return None
        checked.append(arch)
        return still(arch)

    def said(arch: str = "") -> SinceArch:
        return SinceArch(name, arch, tuple(checked), seconds=round(time.monotonic() - started, 2),
                         compiled_by=compiled_by if arch else "", own=own)

    if not newer or undefined(newer[-1]) is not False:
        return said()
    for arch in newer[:-1]:
        answer = undefined(arch)
        if answer is None:
            return said()
        if answer is False:
            return said(arch)
    return said(newer[-1])


def header_text(file: str, folder: Path | None, readable: Sequence[str | Path]) -> str | None:
    """The text of the header a line marker names (relative: from `folder`), where it is a
    regular file of at most MAX_HEADER_BYTES inside one of `readable` (none given:
    `folder`); None for any other (a device, a FIFO, a file of the machine's)."""
    base = folder or Path.cwd()
    path = case_path(file, str(base))
    if not inside(path, list(readable) or [base]):
        return None
    try:
        return read_regular(Path(path), MAX_HEADER_BYTES).decode("utf-8", errors="replace")
    except UnreadableRecord:
        return None


def read_preprocessed(path: Path) -> str | None:
    """A preprocessor's output, where it is at most MAX_PREPROCESSED_BYTES (the search
    holds two of them in the worker's memory); None where it is larger or unreadable."""
    try:
        return read_regular(path, MAX_PREPROCESSED_BYTES).decode("utf-8", errors="replace")
    except UnreadableRecord:
        return None


def _found(name: str, arch: str, place: tuple[str, int], checked: tuple[str, ...],
           started: float, folder: Path | None,
           readable: Sequence[str | Path] = ()) -> SinceArch:
    file, line = place
    text = header_text(file, folder, readable)
    guard = enclosing_guard(text, line) if text is not None else None
    return SinceArch(name, arch, checked, "", os.path.normpath(file), line,
                     guard.text if guard else "",
                     guard.line if guard else 0, round(time.monotonic() - started, 2))
