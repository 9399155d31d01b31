"""The declared matrix (the package's ``data/matrix.toml``): axes, constraints, tiers, validated."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from ..common.keys import check_keys
from ..common.tomlfile import load_toml
from ..common.versions import (
    HOST_COMPILER,
    NAMED_VALUES,
    PYTHON,
    Arch,
    axis_matches,
    check_specifier,
    parse_version,
    version_matches,
)
from ..errors import UserError
from .declarations import LIBRARY, LIBRARY_NAME_PATTERN, TIER
from .sources import SourceSpec
from .torch_cuda import PAIRINGS

# The libraries a frontend brings an axis for (common/versions.py's LIBRARY_AXES); any
# other [libraries.NAME] a variant names itself (`libraries = ["cccl"]`): a header library
# (`headers = true`), or a Python package installed for the cell with its dependencies,
# which a build variant's commands import (a torch wheel a setup.py builds against).
ROW_KEYS = ("case", "variant", "frontend", "toolkit", "arch", "host_compiler", PYTHON)
LIBRARY_NAME = re.compile(LIBRARY_NAME_PATTERN)
LIBRARY_KEYS = ("package", "versions", "requires", "constraint", "headers_from", "sources",
                "headers", "include", "files")


@dataclass(frozen=True)
class Toolkit:
    version: str
    ptx_isa: str
    min_driver: str | None = None
    pins: Mapping[str, str] = field(default_factory=dict)
    # Debian suite whose non-free nvidia-cuda-toolkit gives this release a real nvcc.
    debian: str | None = None
    # The newest GCC major this release's nvcc accepts as its host compiler.
    gcc_max: int | None = None

    @property
    def major(self) -> int:
        return Version(self.version).major


@dataclass(frozen=True)
class ArchSupport:
    arch: Arch
    first: Version
    last: Version | None = None

    def known_to(self, toolkit: str) -> bool:
        version = Version(toolkit)
        return self.first <= version and (self.last is None or version <= self.last)


@dataclass(frozen=True)
class Library:
    name: str
    package: str
    versions: tuple[str, ...]
    # Installed beside the package (pins its dependencies cannot express).
    requires: tuple[str, ...] = ()
    # (versions, toolkits, reason): library versions matching `versions` exist only for
    # toolkits matching `toolkits`; other cells are impossible and pruned at plan time.
    constraints: tuple[tuple[str, str, str], ...] = ()
    # Wheels whose C/C++ headers (their include/ folders) a build of this library's output
    # needs, fetched without their dependencies and without anything else of theirs: a
    # torch wheel's headers for a PyTorch extension, not its 2 GB of libraries.
    headers_from: tuple[str, ...] = ()
    # Versions that come from elsewhere than the package index: a label (a PEP 440 version,
    # e.g. "4.2.0+mybranch") mapped to a source (path:, file:, sdist:, git:; sources.py).
    sources: Mapping[str, str] = field(default_factory=dict)
    # A header library: its wheel's include folders go on every compile's include path
    # ahead of the toolkit's (a newer CCCL than the toolkit ships, a header-only library).
    headers: bool = False
    # Where its headers sit in the wheel (globs, relative to the wheel's root), where not
    # every `include` folder of it.
    include: tuple[str, ...] = ()
    # The package by CUDA major, where the name differs (nvidia-cuda-cccl-cu12, then
    # nvidia-cuda-cccl): a version's package is that of its own major.
    packages: Mapping[str, str] = field(default_factory=dict)
    # Files of the wheel kept beside a header library's headers, or beside those of its
    # headers_from wheels (globs): what a frontend or a case's build reads of that release
    # (torch's cpp_extension.py and TorchConfig.cmake, its flags).
    files: tuple[str, ...] = ()

    def impossible(self, version: str, toolkit: str) -> str | None:
        """Why this library version cannot be paired with this toolkit, or None."""
        for versions, toolkits, reason in self.constraints:
            if version_matches(versions, version) and not version_matches(toolkits, toolkit):
                return f"{self.name} {version} with toolkit {toolkit}: {reason}"
        return None

    def package_for(self, cuda_major: int) -> str:
        return self.packages.get(str(cuda_major)) or self.package.format(major=cuda_major)

    def package_of(self, version: str) -> str:
        """The package a header library's version comes from (its major's, where the
        package is named per CUDA major)."""
        if self.packages:
            major = str(Version(version).major)
            if major in self.packages:
                return self.packages[major]
        return self.package.format(major=Version(version).major)


@dataclass(frozen=True)
class Tier:
    name: str
    toolkits: tuple[str, ...]
    archs: tuple[str, ...]
    libraries: Mapping[str, tuple[str, ...]]
    include: tuple[Mapping[str, str], ...] = ()
    exclude: tuple[Mapping[str, str], ...] = ()
    cases: tuple[str, ...] = ()
    # nvcc's host compilers (programs on PATH): each nvcc cell once per compiler; empty:
    # one cell, with the newest GCC the toolkit accepts.
    host_compilers: tuple[str, ...] = ()
    # Which toolkits each torch release is planned with (config/torch_cuda.py): "all",
    # "major" (its CUDA's major) or "exact" (its CUDA's major.minor).
    torch_pairing: str = "all"
    # The Pythons whose headers a cell of a frontend that includes them is built against
    # ("installed", "3.13"): each such cell once per Python; empty: the installed one.
    pythons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Matrix:
    path: Path
    toolkits: Mapping[str, Toolkit]
    archs: Mapping[str, ArchSupport]
    wheels: Mapping[int, tuple[str, ...]]
    drivers: Mapping[str, str]
    driver_cuda: Mapping[str, str]
    libraries: Mapping[str, Library]
    tiers: Mapping[str, Tier]
    default_tier: str

    def arch_known(self, toolkit: str, arch: str) -> bool:
        return self.archs[arch].known_to(toolkit)

    def arch_disagreements(self, toolkit: str, accepted: Sequence[str],
                           tool: str = "ptxas") -> list[str]:
        """Where a toolkit's own tool (its ptxas; its NVRTC, which names plain archs only)
        and this file's arch table (which prunes cells at plan time) disagree: an arch kept
        that the tool refuses, or one pruned that it builds. Said at run time, so a wrong
        row in the table never goes unseen."""
        said = []
        for name, support in self.archs.items():
            if tool != "ptxas" and support.arch.suffix:
                continue
            if support.known_to(toolkit) and name not in accepted:
                said.append(f"{self.path.name} keeps {name} for toolkit {toolkit}, whose "
                            f"{tool} refuses it")
            elif not support.known_to(toolkit) and name in accepted:
                said.append(f"{self.path.name} prunes {name} for toolkit {toolkit}, whose "
                            f"{tool} builds it")
        return said

    def wheel_requirements(self, toolkit: str) -> list[str]:
        """The pinned requirement strings that make up one toolkit's wheel environment."""
        info = self.toolkits[toolkit]
        packages = self.wheels.get(info.major)
        if packages is None:
            raise UserError(f"{self.path}: no [wheels.{info.major}] entry for toolkit {toolkit}")
        return [f"{name}{info.pins.get(name, f'=={toolkit}.*')}" for name in packages]

    def driver_supports(self, driver_version: str) -> str | None:
        """The CUDA version a driver supports, from its branch (``580.95`` -> ``13.0``)."""
        return self.driver_cuda.get(driver_version.split(".")[0])

    def choosing(self, tier: str | None, versions: Mapping[str, Sequence[str]]) -> Matrix:
        """This matrix with these releases of these libraries in place of the tier's
        (``--library cutlass==3.7.0``): a release the file does not list is fetched from the
        index as the listed ones are."""
        if not versions:
            return self
        unknown = sorted(set(versions) - set(self.libraries))
        if unknown:
            raise UserError(f"--library {unknown[0]}: unknown library (known: "
                            f"{', '.join(sorted(self.libraries))})")
        for name, chosen in versions.items():
            for version in chosen:
                if self.libraries[name].headers and version in NAMED_VALUES:
                    continue
                try:
                    parse_version(version, what="version")
                except ValueError as exc:
                    raise UserError(f"--library {name}=={version}: {exc}") from None
        named = self.tier(tier)
        libraries = {**self.libraries, **{
            name: replace(self.libraries[name], versions=tuple(chosen))
            for name, chosen in versions.items()}}
        chosen_tier = replace(named, libraries={**named.libraries, **{
            name: tuple(chosen) for name, chosen in versions.items()}})
        return replace(self, libraries=libraries, tiers={**self.tiers, named.name: chosen_tier})

    def tier(self, name: str | None) -> Tier:
        chosen = name or self.default_tier
        if chosen not in self.tiers:
            raise UserError(f"{self.path}: unknown tier {chosen!r} "
                            f"(declared: {', '.join(self.tiers)})")
        return self.tiers[chosen]


# The top-level tables and values of matrix.toml.
MATRIX_KEYS = ("schema", "default_tier", "toolkits", "archs", "wheels", "drivers", "driver_cuda",
               "libraries", "tiers")


class _Reader:
    def __init__(self, path: Path, given_by: Mapping[str, Path] | None = None) -> None:
        self.path = path
        # The tables and keys a project laid over the matrix (`tiers.pr.arch`, a library of
        # its own), by the file that gave them: an error there names that file.
        self.given_by = dict(given_by or {})

    def fail(self, where: str, message: str) -> UserError:
        owner = next((file for place, file in self.given_by.items()
                      if where == place or where.startswith(place + ".")), self.path)
        return UserError(f"{owner}: {where}: {message}")

    def table(self, raw: Mapping[str, Any], key: str) -> dict[str, Any]:
        value = raw.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, "expected a table")
        return value

    def strings(self, where: str, value: Any) -> tuple[str, ...]:
        """A list of strings (a version list, requirements): anything else named."""
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"expected a list of strings, got {value!r:.60}")
        return tuple(value)

    def version(self, where: str, text: Any) -> Version:
        try:
            return parse_version(str(text), what="version")
        except ValueError as exc:
            raise self.fail(where, str(exc)) from None

    def toolkits(self, raw: Mapping[str, Any]) -> dict[str, Toolkit]:
        result = {}
        for version, entry in self.table(raw, "toolkits").items():
            where = f"toolkits.{version!r}"
            self.version(where, version)
            if not isinstance(entry, dict) or "ptx_isa" not in entry:
                raise self.fail(where, "needs ptx_isa")
            check_keys(where, entry, ("ptx_isa", "min_driver", "pins", "debian", "gcc_max"),
                       self.fail)
            pins = entry.get("pins", {})
            if not isinstance(pins, dict):
                raise self.fail(f"{where}.pins",
                                f"expected a table of specifiers, got {pins!r:.60}")
            for package, spec in pins.items():
                try:
                    check_specifier("toolkit", spec)
                except ValueError as exc:
                    raise self.fail(f"{where}.pins.{package}", str(exc)) from None
            gcc_max = entry.get("gcc_max")
            if gcc_max is not None and (isinstance(gcc_max, bool) or not isinstance(gcc_max, int)):
                raise self.fail(f"{where}.gcc_max", f"expected a GCC major, got {gcc_max!r}")
            result[version] = Toolkit(version, str(entry["ptx_isa"]), entry.get("min_driver"),
                                      dict(pins), entry.get("debian"), gcc_max)
        if not result:
            raise self.fail("toolkits", "declares no toolkit")
        return dict(sorted(result.items(), key=lambda kv: Version(kv[0])))

    def archs(self, raw: Mapping[str, Any]) -> dict[str, ArchSupport]:
        result = {}
        for name, entry in self.table(raw, "archs").items():
            where = f"archs.{name}"
            try:
                arch = Arch.parse(name)
            except ValueError as exc:
                raise self.fail(where, str(exc)) from None
            if not isinstance(entry, dict) or "first" not in entry:
                raise self.fail(where, "needs first = \"<toolkit>\"")
            check_keys(where, entry, ("first", "last"), self.fail)
            last = entry.get("last")
            result[name] = ArchSupport(arch, self.version(f"{where}.first", entry["first"]),
                                       self.version(f"{where}.last", last) if last else None)
        return dict(sorted(result.items(), key=lambda kv: kv[1].arch))

    def libraries(self, raw: Mapping[str, Any]) -> dict[str, Library]:
        result = {}
        for name, entry in self.table(raw, "libraries").items():
            if not LIBRARY_NAME.fullmatch(name):
                raise self.fail(f"libraries.{name}", "a library's name is lower-case letters, "
                                "digits and '_', starting with a letter")
            if not isinstance(entry, dict):
                raise self.fail(f"libraries.{name}", "expected a table")
            check_keys(f"libraries.{name}", entry, LIBRARY_KEYS, self.fail)
            headers = entry.get("headers", LIBRARY.key("headers").default)
            if not isinstance(headers, bool):
                raise self.fail(f"libraries.{name}.headers", f"expected true or false, got "
                                f"{headers!r:.60}")
            sources = entry.get("sources", {})
            if not isinstance(sources, dict):
                raise self.fail(f"libraries.{name}.sources", "expected a table of "
                                "\"<version label>\" = \"<source>\"")
            for label, spec in sources.items():
                SourceSpec.parse(str(spec), f"{self.path}: libraries.{name}.sources.{label}")
            versions = tuple(dict.fromkeys([
                *self.strings(f"libraries.{name}.versions", entry.get("versions", [])),
                *map(str, sources)]))
            for v in versions:
                if not (headers and v in NAMED_VALUES):  # a header library may name the
                    self.version(f"libraries.{name}.versions", v)  # toolkit's own as one
            requires = self.strings(f"libraries.{name}.requires", entry.get("requires", []))
            constraints = []
            rows = entry.get("constraint", [])
            if not isinstance(rows, list):
                raise self.fail(f"libraries.{name}.constraint", "expected [[...constraint]] "
                                "tables")
            for i, row in enumerate(rows):
                where = f"libraries.{name}.constraint[{i}]"
                if not isinstance(row, dict) or set(row) != {"versions", "toolkit", "reason"}:
                    raise self.fail(where, "expected { versions = \"...\", toolkit = \"...\", "
                                    "reason = \"...\" }")
                for key in ("versions", "toolkit"):
                    try:
                        SpecifierSet(str(row[key]))
                    except InvalidSpecifier:
                        raise self.fail(f"{where}.{key}", f"not a version specifier: "
                                        f"{row[key]!r}") from None
                constraints.append((str(row["versions"]), str(row["toolkit"]),
                                    str(row["reason"])))
            headers_from = self.strings(f"libraries.{name}.headers_from",
                                        entry.get("headers_from", []))
            package = entry.get("package", name)
            packages: dict[str, str] = {}
            if isinstance(package, dict):
                if not package or not all(str(k).isdigit() and isinstance(v, str)
                                          for k, v in package.items()):
                    raise self.fail(f"libraries.{name}.package", "expected a package name, or "
                                    "a table of CUDA major = package name")
                packages = {str(k): v for k, v in package.items()}
                package = packages[max(packages, key=int)]
            result[name] = Library(name, str(package), versions, requires,
                                   tuple(constraints), headers_from,
                                   {str(k): str(v) for k, v in sources.items()},
                                   headers=headers,
                                   include=self.include_globs(f"libraries.{name}.include",
                                                              entry.get("include", [])),
                                   files=self.include_globs(f"libraries.{name}.files",
                                                            entry.get("files", [])),
                                   packages=packages)
        return result

    def include_globs(self, where: str, value: Any) -> tuple[str, ...]:
        """A header library's include folders: globs inside its wheel's files
        (``pkg/data/inc``), never empty, absolute or climbing out (they passed, and the run
        then died in Path.glob)."""
        globs = tuple(self.strings(where, value))
        for glob in globs:
            parts = glob.replace("\\", "/").split("/")
            if not glob.strip() or glob.startswith(("/", "~")) or ".." in parts:
                raise self.fail(where, f"{glob!r:.80} is no folder inside the wheel (give it "
                                "relative to the wheel's root, such as \"pkg/data/include\")")
        return globs

    def axis(self, where: str, value: Any, known: list[str], what: str) -> tuple[str, ...]:
        if value == "*":
            return tuple(known)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"expected a list of {what}s or \"*\", got {value!r}")
        unknown = [v for v in value if v not in known]
        if unknown:
            raise self.fail(where, f"unknown {what}(s) {', '.join(unknown)} "
                            f"(declared: {', '.join(known)})")
        return tuple(value)

    def rows(self, where: str, value: Any, libraries: Sequence[str] = ()
             ) -> tuple[dict[str, str], ...]:
        if not isinstance(value, list):
            raise self.fail(where, "expected a list of tables")
        rows = []
        for i, row in enumerate(value):
            if not isinstance(row, dict) or not row:
                raise self.fail(f"{where}[{i}]", "expected a non-empty table")
            check_keys(f"{where}[{i}]", row, (*ROW_KEYS, *libraries), self.fail)
            rows.append({k: str(v) for k, v in row.items()})
        return tuple(rows)

    def tiers(self, raw: Mapping[str, Any], toolkits: list[str], archs: list[str],
              libraries: Mapping[str, Library]) -> dict[str, Tier]:
        result = {}
        for name, entry in self.table(raw, "tiers").items():
            where = f"tiers.{name}"
            if not isinstance(entry, dict):
                raise self.fail(where, f"expected a table, got {entry!r:.60}")
            check_keys(where, entry, ("toolkit", "arch", "include", "exclude", "case",
                                      "host_compiler", "torch_pairing", PYTHON, *libraries),
                       self.fail)
            pythons = entry.get(PYTHON, [])
            refused = TIER.key(PYTHON).refusal(pythons)
            if refused:
                raise self.fail(f"{where}.{PYTHON}", refused)
            pairing = entry.get("torch_pairing", PAIRINGS[0])
            if pairing not in PAIRINGS:
                raise self.fail(f"{where}.torch_pairing", f"expected one of "
                                f"{', '.join(map(repr, PAIRINGS))}, got {pairing!r:.60}")
            compilers = entry.get("host_compiler", [])
            if not isinstance(compilers, list) or not all(
                    isinstance(c, str) and HOST_COMPILER.fullmatch(c) for c in compilers):
                raise self.fail(f"{where}.host_compiler", "expected programs such as "
                                f"[\"g++-11\", \"clang++-19\"], got {compilers!r}")
            libs = {lib: self.axis(f"{where}.{lib}", entry.get(lib, "*"),
                                   list(libraries[lib].versions), f"{lib} version")
                    for lib in libraries}
            tier = Tier(
                name=name,
                toolkits=self.axis(f"{where}.toolkit", entry.get("toolkit", "*"), toolkits,
                                   "toolkit"),
                archs=self.axis(f"{where}.arch", entry.get("arch", "*"), archs, "arch"),
                libraries=libs,
                include=self.rows(f"{where}.include", entry.get("include", []), list(libraries)),
                exclude=self.rows(f"{where}.exclude", entry.get("exclude", []), list(libraries)),
                cases=self.strings(f"{where}.case", entry.get("case", [])),
                host_compilers=tuple(compilers),
                torch_pairing=pairing,
                pythons=tuple(dict.fromkeys(pythons)),
            )
            result[name] = tier
        if not result:
            raise self.fail("tiers", "declares no tier")
        return result


def load_matrix(path: Path, overrides: Mapping[str, Any] | None = None,
                overrides_file: Path | None = None) -> Matrix:
    """The matrix in `path`, with a project's tables (its tiers) laid over it; an error in
    what the project gave names `overrides_file` (its cudamatrix.toml), not the matrix."""
    raw = load_toml(path)
    given_by: dict[str, Path] = {}
    if overrides:
        from .project import merge_matrix

        if overrides_file is not None:
            given_by = _given_by(raw, overrides, overrides_file)
        raw = merge_matrix(raw, dict(overrides))
    reader = _Reader(path, given_by)
    check_keys("matrix", raw, MATRIX_KEYS, reader.fail)
    if raw.get("schema") != 1:
        raise reader.fail("schema", f"unsupported schema {raw.get('schema')!r} (this tool reads 1)")
    toolkits = reader.toolkits(raw)
    archs = reader.archs(raw)
    libraries = reader.libraries(raw)
    wheels: dict[int, tuple[str, ...]] = {}
    for major, entry in reader.table(raw, "wheels").items():
        if not major.isdigit() or not isinstance(entry, dict) \
                or not isinstance(entry.get("packages"), list):
            raise reader.fail(f"wheels.{major}", "expected [wheels.<major>] packages = [...]")
        wheels[int(major)] = tuple(entry["packages"])
    drivers = {k: str(v) for k, v in reader.table(raw, "drivers").items()}
    for label, version in drivers.items():
        reader.version(f"drivers.{label}", version)
    driver_cuda = {k: str(v) for k, v in reader.table(raw, "driver_cuda").items()}
    tiers = reader.tiers(raw, list(toolkits), list(archs), libraries)
    default = raw.get("default_tier", next(iter(tiers)))
    if not isinstance(default, str) or default not in tiers:
        raise reader.fail("default_tier", f"{default!r} is not a declared tier")
    matrix = Matrix(path, toolkits, archs, wheels, drivers, driver_cuda, libraries, tiers,
                    default)
    for tier in tiers.values():
        _check_includes(reader, matrix, tier)
    return matrix


def _given_by(raw: Mapping[str, Any], overrides: Mapping[str, Any], file: Path
              ) -> dict[str, Path]:
    """Where each table or key a project laid over the matrix is named in an error: a tier
    or library of its own whole, one it amends by the keys it gives."""
    given: dict[str, Path] = {}
    if "default_tier" in overrides:
        given["default_tier"] = file
    for table in ("tiers", "libraries"):
        own = raw.get(table, {})
        for name, entry in dict(overrides.get(table, {})).items():
            if name not in own or not isinstance(entry, Mapping):
                given[f"{table}.{name}"] = file
            else:
                given.update({f"{table}.{name}.{key}": file for key in entry})
    return given


def _check_includes(reader: _Reader, matrix: Matrix, tier: Tier) -> None:
    """An include row must name a real toolkit x arch cell that the toolkit can build."""
    for i, row in enumerate(tier.include):
        where = f"tiers.{tier.name}.include[{i}]"
        toolkit, arch = row.get("toolkit"), row.get("arch")
        if toolkit is None or arch is None:
            raise reader.fail(where, "an include row needs both toolkit and arch")
        if toolkit not in matrix.toolkits:
            raise reader.fail(where, f"unknown toolkit {toolkit!r}")
        if arch not in matrix.archs:
            raise reader.fail(where, f"unknown arch {arch!r}")
        if not matrix.arch_known(toolkit, arch):
            support = matrix.archs[arch]
            raise reader.fail(where, f"impossible cell: toolkit {toolkit} cannot build {arch} "
                              f"(first toolkit {support.first}"
                              + (f", last {support.last}" if support.last else "") + ")")
    for i, row in enumerate(tier.exclude):
        for key, value in row.items():
            if key in ("toolkit", "arch", PYTHON) or key in matrix.libraries:
                try:
                    check_specifier(key, value)
                except ValueError as exc:
                    raise reader.fail(f"tiers.{tier.name}.exclude[{i}].{key}", str(exc)) from None


def row_matches(row: Mapping[str, str], values: Mapping[str, str | None]) -> bool:
    """GitHub-style include/exclude matching; version and arch axes accept specifiers."""
    for key, wanted in row.items():
        actual = values.get(key)
        if key in ("case", "variant", "frontend"):
            if actual != wanted:
                return False
        elif not axis_matches(key, wanted, actual):
            return False
    return True
