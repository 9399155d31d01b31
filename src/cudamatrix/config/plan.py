"""Expanding a tier of the matrix and the corpus into cells, then narrowing the selection."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version

from ..common.versions import INSTALLED, LIBRARY_AXES, PYTHON, Arch
from ..errors import UserError
from ..stages.frontends import frontend, registered
from .corpus import Case, Variant
from .defaults import KNOWN_BUGS
from .matrix import Matrix, Tier, row_matches
from .torch_cuda import ALL, TORCH, unpaired

# What a cell's toolkit column shows when its frontend brings its own compiler.
BUNDLED = "bundled"


@functools.lru_cache(maxsize=1 << 16)  # asked for each cell's folder, record and report
def cell_slug(cell_id: str) -> str:
    """A file name for a cell id, one to one: the id made readable (letters, digits,
    '.', '-', '_'; at most 120 of them) and a hash of the whole id, so case ``p__a``
    variant ``b`` and case ``p`` variant ``a__b`` never share a folder."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", cell_id.replace("/", "__").replace("@", "__at__"))
    digest = hashlib.sha256(cell_id.encode()).hexdigest()[:12]
    return f"{readable[:120]}-{digest}"


@dataclass(frozen=True, order=True)
class Cell:
    """One (case, variant) x toolkit x arch x library-version point of the matrix."""

    case: str
    variant: str
    toolkit: str
    arch: str
    frontend: str
    library: str | None = None
    library_version: str | None = None
    # The runner (GPU and driver) it ran on, set only where one report merges the same
    # cells from several runners: then each runner's result is a cell of its own.
    runner: str = ""
    # nvcc's host compiler where the tier makes it an axis (tier.host_compiler).
    host_compiler: str | None = None
    # The Python whose headers it is built against ("3.13"), where its frontend includes
    # them and the tier or variant names one; None: the interpreter running it (the
    # "installed" value, whose cell keeps the id it had before the axis).
    python: str | None = None

    @property
    def id(self) -> str:
        parts = [self.case, self.variant, self.toolkit, self.arch]
        if self.library:
            parts.append(f"{self.library}-{self.library_version}")
        if self.host_compiler:
            parts.append(self.host_compiler)
        if self.python:
            parts.append(f"py{self.python}")
        return "/".join(parts) + (f"@{self.runner}" if self.runner else "")

    @property
    def slug(self) -> str:
        """The cell's file name (see cell_slug)."""
        return cell_slug(self.id)

    def axes(self) -> dict[str, str | None]:
        """Values for `when`/`only`/exclude matching; the driver is added once one is seen."""
        values: dict[str, str | None] = {
            "case": self.case,
            "variant": self.variant,
            "frontend": self.frontend,
            "toolkit": None if self.toolkit == BUNDLED else self.toolkit,
            "arch": self.arch,
        }
        if self.library:
            values[self.library] = self.library_version
        if self.host_compiler:
            values["host_compiler"] = self.host_compiler
        if self.python or _includes_python(self.frontend):
            values[PYTHON] = self.python or INSTALLED
        return values

    def sort_key(self) -> tuple[str, str, tuple[int, ...], Arch, str, str, str,
                                tuple[int, ...]]:
        toolkit = () if self.toolkit == BUNDLED else tuple(int(p) for p in self.toolkit.split("."))
        python = tuple(int(p) for p in self.python.split(".")) if self.python else ()
        return (self.case, self.variant, toolkit, Arch.parse(self.arch),
                self.library_version or "", self.runner, self.host_compiler or "", python)


@functools.lru_cache(maxsize=256)
def _includes_python(name: str) -> bool:
    """Whether a frontend's compiles include Python's headers (its cells have the python
    axis); a name no frontend registers (an audit's cells) does not."""
    spec = registered().get(name)
    return spec is not None and spec.python_headers


def _pythons(spec_includes_python: bool, variant: Variant, tier: Tier) -> list[str | None]:
    """The Pythons a variant's cells are built against: the variant's, narrowed to the
    tier's where the tier names some, else the tier's; None for the installed one (and
    for a frontend that includes no Python headers)."""
    if not spec_includes_python:
        return [None]
    wanted = [p for p in variant.python if not tier.pythons or p in tier.pythons] \
        if variant.python else list(tier.pythons) or [INSTALLED]
    return list(dict.fromkeys(None if p == INSTALLED else p for p in wanted))


def _variant_cells(case: Case, variant: Variant, toolkits: Sequence[str], archs: Sequence[str],
                   tier: Tier, host_compilers: Sequence[str] = ()) -> list[Cell]:
    spec = frontend(variant.frontend)
    # The frontend's own library axis (CUTLASS, CuPy), or the header library it names.
    library = spec.library or next(iter(variant.libraries), None)
    versions: Sequence[str | None] = tier.libraries.get(library, ()) if library else (None,)
    chosen_toolkits = (BUNDLED,) if spec.toolkit_free else toolkits
    # The host-compiler axis multiplies the cells that run nvcc, unless the variant names
    # its own compiler (then that is its only one).
    compilers: Sequence[str | None] = (None,)
    if host_compilers and "nvcc" in spec.needs and not variant.host_compiler:
        compilers = host_compilers
    # The python axis multiplies only the cells whose frontend includes Python's headers.
    pythons = _pythons(spec.python_headers, variant, tier)
    cells = []
    for toolkit in chosen_toolkits:
        for arch in archs:
            for version in versions:
                for compiler in compilers:
                    for python in pythons:
                        cell = Cell(case.id, variant.name, toolkit, arch, variant.frontend,
                                    library if version else None, version,
                                    host_compiler=compiler, python=python)
                        if variant.selects(cell.axes()):
                            cells.append(cell)
    return cells


def _check_libraries(matrix: Matrix, case: Case, variant: Variant) -> None:
    """A variant's libraries are the matrix's: header libraries, or for a build variant a
    Python package its commands import (installed for the cell, on their PYTHONPATH)."""
    for name in variant.libraries:
        library = matrix.libraries.get(name)
        where = f"{case.directory / 'case.toml'}: variant {variant.name!r}.libraries"
        if library is None:
            headers = ", ".join(n for n, lib in matrix.libraries.items() if lib.headers)
            raise UserError(f"{where}: unknown library {name!r} (header libraries of "
                            f"{matrix.path.name}: {headers or 'none'}; a project declares "
                            f"its own as [libraries.{name}] headers = true)")
        if library.headers:
            continue
        if name in LIBRARY_AXES:
            raise UserError(f"{where}: {name} is not a header library (its frontend's axis)")
        if not frontend(variant.frontend).builds_project:
            raise UserError(f"{where}: {name} is a Python package (no headers = true): only a "
                            "build variant ([variant.build]) imports one, from its "
                            "PYTHONPATH")


def expand(matrix: Matrix, tier: Tier, cases: Sequence[Case], *,
           toolkits: Sequence[str] = (), archs: Sequence[str] = (),
           host_compilers: Sequence[str] = (), prune: bool = True,
           cache: Path) -> list[Cell]:
    """All cells of a tier; `toolkits`/`archs` replace the tier's axis lists when given;
    cells that cannot exist (`impossible`) are left out unless `prune` is false. `cache`:
    where the torch releases' CUDA is kept, always the run's --cache: a default here read
    and wrote the user's ~/.cache/cudamatrix behind a run told to keep its cache elsewhere."""
    for value, known, what in ((toolkits, matrix.toolkits, "toolkit"),
                               (archs, matrix.archs, "arch")):
        unknown = [v for v in value if v not in known]
        if unknown:
            raise UserError(f"unknown {what}(s) {', '.join(unknown)} "
                            f"(available in {matrix.path}: {', '.join(known)})")
    axis_toolkits = list(toolkits) or list(tier.toolkits)
    axis_archs = list(archs) or list(tier.archs)
    compilers = list(host_compilers) or list(tier.host_compilers)
    in_tier = [c for c in cases if not tier.cases or c.id in tier.cases]
    cells: set[Cell] = set()
    for case in in_tier:
        for variant in case.variants:
            _check_libraries(matrix, case, variant)
            cells.update(_variant_cells(case, variant, axis_toolkits, axis_archs, tier,
                                        compilers))
    for row in tier.include:
        for case in in_tier:
            if "case" in row and row["case"] != case.id:
                continue
            for variant in case.variants:
                if "variant" in row and row["variant"] != variant.name:
                    continue
                cells.update(_variant_cells(case, variant, [row["toolkit"]], [row["arch"]], tier,
                                            compilers))
    kept = [c for c in cells if not any(row_matches(r, c.axes()) for r in tier.exclude)]
    pairings = torch_pairings(tier, in_tier)
    return sorted((c for c in kept if not prune or impossible(
        matrix, c, pairings.get((c.case, c.variant), ALL), cache) is None), key=Cell.sort_key)


def torch_pairings(tier: Tier, cases: Sequence[Case]) -> dict[tuple[str, str], str]:
    """Each variant's torch_pairing: its own, else its tier's."""
    return {(case.id, v.name): v.torch_pairing or tier.torch_pairing
            for case in cases for v in case.variants}


def impossible(matrix: Matrix, cell: Cell, pairing: str, cache: Path) -> str | None:
    """Why a cell cannot exist, or None: its toolkit cannot build its arch (the matrix's
    first and last toolkit of each arch; each toolkit's own ptxas is checked against it
    when prepared), matrix.toml's library constraints rule the pair out, or `pairing`
    (a tier's or variant's torch_pairing) pairs its torch with other toolkits."""
    if cell.toolkit == BUNDLED:
        return None
    support = matrix.archs.get(cell.arch)
    if support is not None and not support.known_to(cell.toolkit):
        if Version(cell.toolkit) < support.first:
            return f"{cell.arch} first came with CUDA {support.first}"
        return f"CUDA {support.last} was the last to build {cell.arch}"
    library = matrix.libraries.get(cell.library or "")
    if library is None or not cell.library_version:
        return None
    why = library.impossible(cell.library_version, cell.toolkit)
    if why is None and cell.library == TORCH and pairing != ALL:
        why = unpaired(cell.library_version, cell.toolkit, pairing, cache)
    return why


def ruled_out(matrix: Matrix, tier: Tier, cases: Sequence[Case], *,
              toolkits: Sequence[str] = (), archs: Sequence[str] = (),
              host_compilers: Sequence[str] = (), cache: Path) -> list[tuple[Cell, str]]:
    """The cells the matrix's constraints rule out of a selection, each with the reason
    (`sm_90a first came with CUDA 12.0`): kept in the results as skips, never dropped."""
    found = []
    pairings = torch_pairings(tier, cases)
    for cell in expand(matrix, tier, cases, toolkits=toolkits, archs=archs,
                       host_compilers=host_compilers, prune=False, cache=cache):
        why = impossible(matrix, cell, pairings.get((cell.case, cell.variant), ALL), cache)
        if why:
            found.append((cell, why))
    return found


def pruned(matrix: Matrix, tier: Tier, cases: Sequence[Case], *, toolkits: Sequence[str] = (),
           archs: Sequence[str] = (), host_compilers: Sequence[str] = (),
           cache: Path) -> dict[str, int]:
    """The cells the constraints removed from a selection, counted by reason."""
    counts: dict[str, int] = {}
    for _, why in ruled_out(matrix, tier, cases, toolkits=toolkits, archs=archs,
                            host_compilers=host_compilers, cache=cache):
        counts[why] = counts.get(why, 0) + 1
    return counts


@functools.cache
def known_bug_ids() -> frozenset[str]:
    """The case ids of the tool's own known-bug corpus."""
    return frozenset(p.parent.name for p in KNOWN_BUGS.glob("*/case.toml"))


def check_excludes(matrix: Matrix, tier: Tier, cases: Sequence[Case], cache: Path) -> None:
    """Every exclude row of a tier must remove at least one cell of the full tier (`cache`:
    the run's, where a torch pairing is read)."""
    unfiltered = replace(tier, exclude=())  # every axis kept (its Pythons, its compilers)
    cells = expand(matrix, unfiltered, cases, cache=cache)
    loaded = {c.id for c in cases}
    used = {v.frontend for c in cases for v in c.variants}
    for i, row in enumerate(tier.exclude):
        # The default tiers' rows about the known-bug corpus hold only where it is run.
        if "case" in row and row["case"] not in loaded and row["case"] in known_bug_ids():
            continue
        # A row about a frontend no loaded case uses (a project without CuPy cases under
        # the default tiers' CuPy rows) has nothing to remove; a misspelt one is caught.
        if isinstance(row.get("frontend"), str) and row["frontend"] not in used:
            if row["frontend"] not in registered():
                raise UserError(f"{matrix.path}: tiers.{tier.name}.exclude[{i}]: unknown "
                                f"frontend {row['frontend']!r} (known: {', '.join(registered())})")
            continue
        if not any(row_matches(row, c.axes()) for c in cells):
            raise UserError(f"{matrix.path}: tiers.{tier.name}.exclude[{i}] {dict(row)} "
                            "matches no cell")


def check_only(matrix: Matrix, cases: Sequence[Case]) -> None:
    """Every variant's `only` must select at least one cell of the whole matrix (every
    toolkit, arch and library version): one that selects none is a typo, not a choice."""
    everything = Tier("all", tuple(matrix.toolkits), tuple(matrix.archs),
                      {name: lib.versions for name, lib in matrix.libraries.items()}, (), (), ())
    for case in cases:
        for variant in case.variants:
            # A driver or GPU is known only on a runner: such an `only` is judged there;
            # a tier's Pythons are any "3.N": one it names is judged with its tier.
            if not variant.only or set(variant.only) & {"driver", "gpu_arch", PYTHON}:
                continue
            if not _variant_cells(case, variant, everything.toolkits, everything.archs,
                                  everything):
                raise UserError(f"{case.directory / 'case.toml'}: variant {variant.name!r}: "
                                f"only = {dict(variant.only)} selects no cell of "
                                f"{matrix.path}")


def shard(cells: Sequence[Cell], index: int, count: int) -> list[Cell]:
    """Deterministic round-robin slice ``index`` (1-based) of ``count`` shards."""
    if not 1 <= index <= count:
        raise UserError(f"--shard {index}/{count}: expected 1 <= i <= n")
    ordered = sorted(cells, key=Cell.sort_key)
    return [c for i, c in enumerate(ordered) if i % count == index - 1]
