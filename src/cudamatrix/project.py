"""A project's own configuration: ``cudamatrix.toml`` (or ``[tool.cudamatrix]`` in
pyproject.toml), found from the current folder upwards, as ruff and pytest find theirs.

It names the project's case folders and what it changes of the default matrix (its
tiers, its default tier), inheriting everything it does not set; the known-bug corpus
is opt-in (``known_bugs = true`` or ``--known-bugs``). Without one, ``cudamatrix init``
writes a starter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .defaults import DEFAULT_MATRIX
from .errors import UserError
from .keys import check_keys
from .tomlfile import load_toml

CONFIG = "cudamatrix.toml"
KEYS = ("cases", "known_bugs", "matrix", "default_tier", "tiers")
# The keys of a tier a project may set (the others come from the default tier of that name).
TIER_KEYS = ("toolkit", "arch", "include", "exclude", "case", "cutlass", "cupy", "cute_dsl",
             "cutlass_python", "cutlass_torch")


@dataclass(frozen=True)
class Project:
    config: Path | None
    cases: tuple[Path, ...] = ()
    known_bugs: bool = False
    matrix: Path = DEFAULT_MATRIX
    # Tables laid over the matrix file before it is read (tiers, default_tier).
    overrides: dict[str, Any] = field(default_factory=dict)


def _config_table(path: Path) -> dict[str, Any] | None:
    raw = load_toml(path)
    if path.name == "pyproject.toml":
        table = raw.get("tool", {}).get("cudamatrix")
        return table if isinstance(table, dict) else None
    return raw


def find_project(start: Path) -> Project:
    """The project whose configuration is nearest above `start`, or none."""
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        for name in (CONFIG, "pyproject.toml"):
            path = candidate / name
            if path.is_file():
                table = _config_table(path)
                if table is not None:
                    return read_project(path, table)
    return Project(config=None)


def read_project(path: Path, table: dict[str, Any]) -> Project:
    def fail(where: str, message: str) -> UserError:
        return UserError(f"{path}: {where}: {message}")

    check_keys("cudamatrix" if path.name == "pyproject.toml" else "config", table, KEYS, fail)
    base = path.parent
    cases = table.get("cases", [])
    if isinstance(cases, str):
        cases = [cases]
    if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
        raise fail("cases", f"expected folder names, got {cases!r}")
    folders = tuple(base / c for c in cases)
    for folder in folders:
        if not folder.is_dir():
            raise fail("cases", f"{folder} is not a folder")
    known_bugs = table.get("known_bugs", False)
    if not isinstance(known_bugs, bool):
        raise fail("known_bugs", f"expected true or false, got {known_bugs!r}")
    matrix = DEFAULT_MATRIX
    if "matrix" in table:
        matrix = base / str(table["matrix"])
    overrides: dict[str, Any] = {}
    if "default_tier" in table:
        overrides["default_tier"] = table["default_tier"]
    tiers = table.get("tiers", {})
    if not isinstance(tiers, dict):
        raise fail("tiers", "expected [tiers.<name>] tables")
    for name, tier in tiers.items():
        if not isinstance(tier, dict):
            raise fail(f"tiers.{name}", "expected a table")
        check_keys(f"tiers.{name}", tier, TIER_KEYS, fail)
    if tiers:
        overrides["tiers"] = tiers
    if not folders and not known_bugs:
        raise fail("cases", "names no case folder and known_bugs is off: nothing to run")
    return Project(path, folders, known_bugs, matrix, overrides)


def merge_matrix(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """The matrix file's tables with a project's laid over them: a project's tier keeps
    every key of the default tier of that name that it does not set."""
    merged = dict(raw)
    if "default_tier" in overrides:
        merged["default_tier"] = overrides["default_tier"]
    tiers = dict(merged.get("tiers", {}))
    for name, tier in overrides.get("tiers", {}).items():
        tiers[name] = {**tiers.get(name, {}), **tier}
    merged["tiers"] = tiers
    return merged


STARTER = """\
# cudamatrix: which CUDA toolkits, GPU archs and drivers your kernels build and run on.
# Everything not set here comes from the tool's default matrix (`cudamatrix validate`
# prints what a run would cover). Edit freely; `cudamatrix run` reads this file.

# Folders of cases: one folder per case, each with a case.toml and its sources.
cases = ["cudamatrix-cases"]

# The tool's own corpus of known CUDA bugs, run beside your cases (or: --known-bugs).
known_bugs = false

# The pr tier (the default) trimmed to what you support; other keys come from the
# default pr tier. Toolkits: 11.8, 12.0-12.9, 13.0-13.5; archs: sm_70 ... sm_120a.
[tiers.pr]
toolkit = ["12.4", "12.8", "13.0"]
arch = ["sm_80", "sm_90"]
"""

SAXPY = """\
// An example kernel: edit it, or copy this folder for a kernel of your own.
// extern "C" keeps the name unmangled, so `kernel = "saxpy"` in case.toml finds it
// (NVRTC and the driver look kernels up by their symbol name).
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

SAXPY_CASE = """\
title = "saxpy through NVRTC (as CuPy and numba-cuda compile)"

[[variant]]
name = "nvrtc"
source = "saxpy.cu"
frontend = "nvrtc"
kernel = "saxpy"
  # The build must contain a fused multiply-add, or the case fails.
  [[variant.artifact]]
  in = "ptx"
  contains = "fma.rn.f32"
  # On a GPU: launch it and check the result.
  [variant.run]
  grid = [4]
  block = [256]
  args = [{ value = 2.0, dtype = "float32" },
          { name = "x", dtype = "float32", shape = [1024] },
          { name = "y", dtype = "float32", shape = [1024], inout = true },
          { value = 1024, dtype = "int32" }]
  check = { y = "2.0 * x + y_in" }
"""

NVCC_CASE = """\
title = "saxpy built by nvcc (as a setup.py or CMake build would)"

[[variant]]
name = "nvcc"
source = "saxpy.cu"
frontend = "nvcc"
kernel = "saxpy"
flags = ["-O3"]
  [[variant.artifact]]
  in = "sass"
  contains = "FFMA"
"""


def init_project(folder: Path) -> list[Path]:
    """Write a starter configuration and two example cases into `folder`; never overwrite."""
    files = {
        folder / CONFIG: STARTER,
        folder / "cudamatrix-cases" / "saxpy" / "case.toml": SAXPY_CASE,
        folder / "cudamatrix-cases" / "saxpy" / "saxpy.cu": SAXPY,
        folder / "cudamatrix-cases" / "saxpy-nvcc" / "case.toml": NVCC_CASE,
        folder / "cudamatrix-cases" / "saxpy-nvcc" / "saxpy.cu": SAXPY,
    }
    existing = [p for p in files if p.exists()]
    if existing:
        raise UserError(f"{existing[0]}: already exists; cudamatrix init writes only new files")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return [p.relative_to(folder) if p.is_relative_to(folder) else p for p in files]

