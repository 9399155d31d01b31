"""GPU architectures, toolkit versions and the specifiers that select them.

Case files and the matrix both say things like ``arch = "<sm_80"`` or
``toolkit = ">=12.4,<12.7"``. Toolkit, driver and library versions are PEP 440
versions, so `packaging` decides them; architectures are not, so they get a
small ordering of their own: by compute capability, with the arch-specific
(``a``) and family (``f``) suffixes kept for exact matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, total_ordering

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_ARCH_RE = re.compile(r"^sm_(\d{2,3})([af]?)$")
_CLAUSE_RE = re.compile(r"^\s*(<=|>=|==|!=|<|>)?\s*(\S+)\s*$")

# A header library's value that stands for the toolkit's own copy (its own CCCL): the
# cell compiles with nothing put ahead of the toolkit's include folders.
TOOLKIT_OWN = "toolkit"
# A library's value that stands for the copy installed beside this tool (the GPU
# machine's own torch): nothing fetched, its files read where they are.
INSTALLED = "installed"
# The values of a library axis that are no release: each matches only itself.
NAMED_VALUES = (TOOLKIT_OWN, INSTALLED)
# The library axes a frontend brings (matrix.toml [libraries.NAME]); the one list the
# matrix reader, the declarations (tiers' keys) and `when` tables read.
LIBRARY_AXES = ("cupy", "cutlass", "cute_dsl", "cutlass_python", "cutlass_torch", "torch")
# Axes whose values are PEP 440 versions (everything but arch).
VERSION_AXES = ("toolkit", "driver", *LIBRARY_AXES)
# nvcc's host compiler, by the program a case or tier names: g++-12, clang++-19, g++.
HOST_COMPILER = re.compile(r"(g\+\+|clang\+\+)(-\d+)?")
NAME_AXES = ("host_compiler",)  # compared by name, not as versions
# The Python whose headers a cell's extension is built against, where its frontend
# includes them (torch-extension): the interpreter running the cell (INSTALLED), or a
# release "3.N" whose headers come from Debian. Compared as a version ("3.13", ">=3.13"),
# "installed" only by itself.
PYTHON = "python"
PYTHON_VALUE = re.compile(rf"{INSTALLED}|3\.\d{{1,2}}")
WHEN_KEYS = ("arch", *VERSION_AXES, *NAME_AXES, PYTHON)
# An expectation may also depend on the GPU a cell ran on (known only at run time).
EXPECT_KEYS = (*WHEN_KEYS, "gpu_arch")
ARCH_AXES = ("arch", "gpu_arch")


@total_ordering
@dataclass(frozen=True)
class Arch:
    """A real GPU architecture as nvcc names it: ``sm_90a`` is capability 9.0, arch-specific."""

    name: str
    capability: int
    suffix: str

    @classmethod
    def parse(cls, text: str) -> Arch:
        return _parse_arch(text)

    @property
    def compute(self) -> str:
        """The virtual architecture NVRTC and ptxas pair with this one."""
        return f"compute_{self.capability}{self.suffix}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Arch):
            return NotImplemented
        return (self.capability, self.suffix) < (other.capability, other.suffix)

    def __str__(self) -> str:
        return self.name


@lru_cache(maxsize=1024)
def _parse_arch(text: str) -> Arch:
    """Cached: planning a tier asks for the same few archs tens of thousands of times."""
    match = _ARCH_RE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a GPU architecture (expected e.g. sm_80, sm_90a)")
    return Arch(text.strip(), int(match.group(1)), match.group(2))


def parse_version(text: str, *, what: str = "version") -> Version:
    try:
        return Version(str(text))
    except InvalidVersion as exc:
        raise ValueError(f"{text!r} is not a valid {what}") from exc


@lru_cache(maxsize=4096)
def arch_matches(spec: str, arch: Arch) -> bool:
    """True when every comma-separated clause of `spec` holds for `arch`.

    A bare name (``sm_90a``) and ``==`` compare names exactly, so ``sm_90`` does
    not select ``sm_90a``; ordering operators compare capabilities, so
    ``>=sm_90`` selects both.
    """
    for clause in spec.split(","):
        match = _CLAUSE_RE.match(clause)
        if not match:
            raise ValueError(f"bad arch specifier clause {clause!r}")
        op, value = match.group(1) or "==", Arch.parse(match.group(2))
        if op == "==":
            ok = arch.name == value.name
        elif op == "!=":
            ok = arch.name != value.name
        elif op == "<":
            ok = arch.capability < value.capability
        elif op == "<=":
            ok = arch.capability <= value.capability
        elif op == ">":
            ok = arch.capability > value.capability
        else:
            ok = arch.capability >= value.capability
        if not ok:
            return False
    return True


@lru_cache(maxsize=4096)
def version_matches(spec: str, version: str) -> bool:
    """PEP 440 matching, where a bare ``12.4`` means ``==12.4``; cached, as planning a
    tier matches the same few specifiers against the same few versions again and again."""
    text = spec.strip()
    if text and text[0].isdigit():
        text = "==" + text
    if spec.strip() in NAMED_VALUES or version in NAMED_VALUES:  # a value, not a version
        return spec.strip() == version
    try:
        specifier = SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise ValueError(f"bad version specifier {spec!r}") from exc
    try:
        parsed = Version(version)
    except InvalidVersion:  # a value that is no version (`toolkit`) meets no specifier
        return False
    return specifier.contains(parsed, prereleases=True)


def check_specifier(key: str, spec: str | Sequence[str]) -> None:
    """Raise ValueError if `spec` can never be evaluated for axis `key`."""
    if not isinstance(spec, str | list | tuple):
        raise ValueError(f"expected a string or a list of strings, got {spec!r:.60}")
    for one in [spec] if isinstance(spec, str) else spec:
        if not isinstance(one, str):
            raise ValueError(f"expected a string, got {one!r:.60}")
        if key in NAME_AXES:
            if not HOST_COMPILER.fullmatch(one):
                raise ValueError(f"{one!r} is not a host compiler program (g++-12, clang++-19)")
        elif key in ARCH_AXES:
            arch_matches(one, Arch.parse("sm_80"))
        elif key == PYTHON:  # "installed", or a specifier of versions
            if one.strip() == TOOLKIT_OWN:
                raise ValueError(f"{one!r} is not a Python (installed, 3.13, >=3.13)")
            version_matches(one, "3.13")
        elif one.strip() not in NAMED_VALUES:  # a header library's own value, or a specifier
            version_matches(one, "1.0")


def axis_matches(key: str, spec: str | Sequence[str], value: str | None) -> bool:
    """Does one axis value satisfy a `when` entry (a specifier, or a list of alternatives)?"""
    if value is None:
        return False
    alternatives = [spec] if isinstance(spec, str) else list(spec)
    if key in ARCH_AXES:
        arch = Arch.parse(value)
        return any(arch_matches(one, arch) for one in alternatives)
    if key in NAME_AXES:
        return value in alternatives
    return any(version_matches(one, value) for one in alternatives)


def sass_runs_on(target: Arch, gpu: Arch) -> bool:
    """Can a cubin built for `target` run on `gpu`? Same major, not newer; `a` needs exact."""
    if target.suffix == "a":
        return target.capability == gpu.capability
    return target.capability // 10 == gpu.capability // 10 and target.capability <= gpu.capability
