"""A project's own configuration: ``cudamatrix.toml`` (or ``[tool.cudamatrix]`` in
pyproject.toml), found from the current folder upwards, as ruff and pytest find theirs.

It names the project's case folders and what it changes of the default matrix (its
tiers, its default tier), inheriting everything it does not set; the known-bug corpus
is opt-in (``known_bugs = true`` or ``--known-bugs``). Without one, ``cudamatrix init``
writes a starter.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from .. import __version__
from ..common.keys import check_keys
from ..common.tomlfile import load_toml
from ..errors import UserError
from .declarations import (
    LIBRARY,
    PROJECT,
    RUNNER,
    SCHEMA_FOLDER,
    TIER,
    declared_defaults,
    json_schema,
    schema_line,
)
from .defaults import CONFIG, DEFAULT_MATRIX, STARTER_CASES
from .options import declared_tiers
from .runners import Runner, read_runners
from .sources import SourceSpec

KEYS = PROJECT.names()
# A [paths] name, as a case writes it in braces ({ggml}).
PATH_NAME = re.compile(r"[a-z][a-z0-9_]*")
# The keys of a tier a project may set (the others come from the default tier of that name).
TIER_KEYS = TIER.names()


@dataclass(frozen=True)
class Project:
    config: Path | None
    cases: tuple[Path, ...] = ()
    known_bugs: bool = False
    matrix: Path = DEFAULT_MATRIX
    # Tables laid over the matrix file before it is read (tiers, default_tier).
    overrides: dict[str, Any] = field(default_factory=dict)
    # [paths]: trees outside the case folders the project names (``ggml =
    # "../llama.cpp/ggml"``), by name, as absolute folders: a case writes ``{ggml}/...``.
    paths: dict[str, Path] = field(default_factory=dict)
    # [runners.NAME]: the CI's GPU runners `cudamatrix plan` sends cells to (none: one).
    runners: tuple[Runner, ...] = ()


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


def project_root(start: Path) -> Path:
    """The project's root: the folder holding the configuration nearest above `start`, else
    `start` itself (a run of --corpus alone). A repro line names its paths from here and is
    run here (config/repro_line.py), wherever in the project the run was started."""
    config = find_project(start).config
    return config.parent if config is not None else start.resolve()


def read_project(path: Path, table: dict[str, Any]) -> Project:
    def fail(where: str, message: str) -> UserError:
        return UserError(f"{path}: {where}: {message}")

    check_keys("cudamatrix" if path.name == "pyproject.toml" else "config", table, KEYS, fail)
    base = path.parent
    given = table
    table = {**declared_defaults(PROJECT), **table}  # each declared default, once
    cases = table["cases"]
    if isinstance(cases, str):
        cases = [cases]
    if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
        raise fail("cases", f"expected folder names, got {cases!r}")
    folders = tuple(base / c for c in cases)
    for folder in folders:
        if not folder.is_dir():
            raise fail("cases", f"{folder} is not a folder")
    known_bugs = table["known_bugs"]
    if not isinstance(known_bugs, bool):
        raise fail("known_bugs", f"expected true or false, got {known_bugs!r}")
    matrix = DEFAULT_MATRIX
    if "matrix" in table:
        matrix = base / str(table["matrix"])
    overrides: dict[str, Any] = {}
    if "default_tier" in given:  # else the matrix's own (the tool's: the declared one)
        overrides["default_tier"] = given["default_tier"]
    tiers = table.get("tiers", {})
    if not isinstance(tiers, dict):
        raise fail("tiers", "expected [tiers.<name>] tables")
    for name, tier in tiers.items():
        if not isinstance(tier, dict):
            raise fail(f"tiers.{name}", "expected a table")
        check_keys(f"tiers.{name}", tier, TIER_KEYS, fail)
    if tiers:
        overrides["tiers"] = tiers
    libraries = table.get("libraries", {})
    if libraries:
        overrides["libraries"] = _library_sources(libraries, base, fail)
    if not folders and not known_bugs:
        raise fail("cases", "names no case folder and known_bugs is off: nothing to run")
    runners = table.get("runners", {})
    if isinstance(runners, dict):
        for name, runner in runners.items():
            if isinstance(runner, dict):
                check_keys(f"runners.{name}", runner, RUNNER.names(), fail)
    return Project(path, folders, known_bugs, matrix, overrides,
                   _trees(table.get("paths", {}), base, fail), read_runners(runners, fail))


def _trees(table: Any, base: Path, fail: Callable[[str, str], UserError]) -> dict[str, Path]:
    """[paths]: each name a folder, relative to the configuration's folder or absolute.
    Only a project declares them: a case alone still cannot leave its corpus folder."""
    from ..stages.compile.flags import PLACEHOLDERS

    if not isinstance(table, dict):
        raise fail("paths", 'expected a table such as { ggml = "../llama.cpp/ggml" }')
    trees: dict[str, Path] = {}
    for name, value in table.items():
        if not PATH_NAME.fullmatch(name) or name in PLACEHOLDERS:
            raise fail(f"paths.{name}", "a name is lower-case letters, digits and '_' (not "
                       f"{', '.join(PLACEHOLDERS)}), written {{name}} in a case")
        if not isinstance(value, str) or not value:
            raise fail(f"paths.{name}", f"expected a folder, got {value!r:.60}")
        folder = (base / value).resolve()
        if not folder.is_dir():
            raise fail(f"paths.{name}", f"{folder} is not a folder")
        trees[name] = folder
    return trees


def _library_sources(table: Any, base: Path,
                     fail: Callable[[str, str], UserError]) -> dict[str, dict[str, Any]]:
    """A project's own versions of a library (``[libraries.cutlass.sources]``: a label such
    as "4.2.0+mine" mapped to a folder, file, sdist or git revision), its relative paths
    made absolute against the configuration's folder, where the user wrote them; and the
    project's own header libraries (``[libraries.NAME]`` with ``headers = true``,
    ``package``, ``versions``, ``include``), checked with the matrix."""
    if not isinstance(table, dict):
        raise fail("libraries", "expected [libraries.<name>.sources] tables")
    result: dict[str, dict[str, Any]] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise fail(f"libraries.{name}", "expected a table")
        check_keys(f"libraries.{name}", entry, LIBRARY.names(), fail)
        sources = entry.get("sources", {})
        if not isinstance(sources, dict):
            raise fail(f"libraries.{name}.sources", "expected \"<version label>\" = \"<source>\"")
        made: dict[str, str] = {}
        for label, text in sources.items():
            spec = SourceSpec.parse(str(text), f"{base}: libraries.{name}.sources.{label}")
            if spec.scheme in ("path", "file"):
                spec = SourceSpec(spec.scheme, str((base / spec.value).resolve()))
            made[str(label)] = str(spec)
        result[str(name)] = {**{k: v for k, v in entry.items() if k != "sources"},
                             "sources": made}
    return result


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
    libraries = {name: dict(entry) for name, entry in merged.get("libraries", {}).items()}
    for name, entry in overrides.get("libraries", {}).items():
        known = libraries.setdefault(name, {})
        known["sources"] = {**known.get("sources", {}), **entry.get("sources", {})}
        for key in ("headers", "package", "include"):  # a project's own header library
            if key in entry:
                known[key] = entry[key]
        # Versions beyond the matrix's own (`cudamatrix bisect` over a library's releases).
        extra = [v for v in entry.get("versions", []) if v not in known.get("versions", [])]
        if extra:
            known["versions"] = [*known.get("versions", []), *extra]
    merged["libraries"] = libraries
    return merged


STARTER = """\
# cudamatrix: which CUDA toolkits, GPU archs and drivers your kernels build and run on.
# Everything not set here comes from the tool's default matrix (`cudamatrix validate`
# prints what a run would cover). Edit freely; `cudamatrix run` reads this file.

# Folders of cases: one folder per case, each with a case.toml and its sources.
cases = ["@@CASES@@"]

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
// `kernel = "saxpy"` in case.toml names it as C++ does (a template by its arguments,
// `saxpy<float>`); the tool finds the name the compiler gave it.
__global__ void saxpy(float a, const float* x, float* y, int n) {
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

BUILD_CASE = """\
title = "saxpy built by the project's own CMake build"
description = \"\"\"
A build case runs your build as you run it, once per toolkit, arch and host compiler:
the cell's toolkit is $CUDA_HOME (and $CUDACXX), its arch $CUDAARCHS (CMake),
$TORCH_CUDA_ARCH_LIST (PyTorch) or {gencode}/{cuda_arch} in a command, its host
compiler $CC/$CXX/$CUDAHOSTCXX. What the build makes (`outputs`) is audited: the SASS and
PTX of every module, and whether they can run on the cell's arch. On a GPU every module is
loaded by the driver and `test` runs. To build your whole repository instead of this
folder, name it: project = "path:../.." (or an sdist, a git checkout at a revision).
\"\"\"

[[variant]]
name = "cmake"
frontend = "build"
timeout = 600
# Planned only where an nvcc and the static runtime it links come from PyPI's wheels, so a
# first run builds every cell on any machine: the 13.x wheels have both; the 12.8 wheels
# have no nvcc, and 12.4's (Debian's nvcc over the wheels) no libcudadevrt. With NVIDIA's
# images (--provider docker --docker-flavour nvidia) or a host install (--provider host),
# delete this line to build it on 12.x as well.
only = { toolkit = ">=13" }
  [variant.build]
  commands = ["cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release", "cmake --build build"]
  outputs = ["build/*.so"]
  # Build tools from PyPI, on PATH for the commands (so a machine without CMake builds too).
  requires = ["cmake==3.31.6", "ninja==1.11.1.4"]
  test = "{python} check.py build/libsaxpy.so"
"""

CMAKE_LISTS = """\
cmake_minimum_required(VERSION 3.18)
project(saxpy LANGUAGES CXX CUDA)
# CMAKE_CUDA_ARCHITECTURES comes from $CUDAARCHS: one arch per cell.
add_library(saxpy SHARED saxpy_check.cu)
set_target_properties(saxpy PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
"""

SAXPY_CHECK = """\
// The example kernel behind a C entry point the test calls: 0 when every element is right.
#include <cuda_runtime.h>

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" int saxpy_check(int n) {
    float *x, *y;
    if (cudaMallocManaged(&x, n * sizeof(float)) || cudaMallocManaged(&y, n * sizeof(float)))
        return 1;
    for (int i = 0; i < n; ++i) { x[i] = float(i); y[i] = 1.0f; }
    saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += y[i] != 2.0f * float(i) + 1.0f;
    cudaFree(x);
    cudaFree(y);
    return wrong ? 3 : 0;
}
"""

CHECK_PY = """\
\"\"\"The build case's test: load the library the build made and run its check.\"\"\"
import ctypes
import sys

status = ctypes.CDLL(sys.argv[1]).saxpy_check(1 << 20)
sys.exit(f"saxpy_check returned {status}" if status else 0)
"""


WORKFLOW_REPOSITORY = "cudamatrix/cudamatrix"
# Where `init --ci NAME` writes; GITHUB_HOSTED is `--ci github --no-gpu`'s, a name of its
# own so that the compile-only workflow and the GPU one can stand side by side (a project
# that gets a GPU runner later adds the GPU workflow with init, and keeps or drops this).
GITHUB_HOSTED = "github-hosted"
CI_FILES = {"github": Path(".github") / "workflows" / "cudamatrix.yml",
            GITHUB_HOSTED: Path(".github") / "workflows" / "cudamatrix-compile.yml",
            "gitlab": Path(".gitlab-ci.yml")}


def release_commit() -> str:
    """The commit this cudamatrix was built from: the record its build wrote (setup.py), else
    the HEAD of the git checkout it runs from (an editable install); empty where neither is
    known. Never $GITHUB_SHA: in a user's CI that is the user's commit, not this tool's."""
    from ..common.revision import git_head

    record = files("cudamatrix.config") / "data" / "release-commit"
    if record.is_file():
        said = record.read_text().strip()
        return said if re.fullmatch(r"[0-9a-f]{40}", said) else ""
    return git_head(Path(__file__).parent)


def github_caller(workflow: str | None = None) -> str:
    """The caller workflow `init --ci github` writes: cudamatrix's reusable workflow at this
    release, pinned by the commit it was built from with the version in a comment (as
    zizmor's unpinned-uses asks and as this repository pins its own actions), or at
    `workflow` (``OWNER/REPO/.github/workflows/cudamatrix.yml@REF``) as given."""
    template = (files("cudamatrix.config") / "data" / "ci" / "github-caller.yml").read_text()
    commit = release_commit()
    path = f"{WORKFLOW_REPOSITORY}/.github/workflows/cudamatrix.yml"
    uses = workflow or (f"{path}@{commit} # v{__version__}" if commit
                        else f"{path}@v{__version__}")
    # Put into YAML as a plain `uses:` value: a newline would add keys of its own
    # (`secrets: inherit`), a quote or a comment mark would change what it says.
    if workflow is not None and not re.fullmatch(
            r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+/[A-Za-z0-9_./\-]+@[A-Za-z0-9_./\-]+", uses):
        raise UserError(f"--workflow {uses!r:.80}: expected OWNER/REPO/PATH@REF "
                        "(letters, digits, '.', '_', '-', '/'), such as "
                        f"{path}@v{__version__}")
    return template.replace("@@WORKFLOW@@", uses).replace("@@VERSION@@", __version__)


def github_hosted(workflow: str | None = None) -> str:
    """The workflow `init --ci github --no-gpu` writes: the matrix compiled and audited on
    GitHub's ubuntu-latest runners (`plan --cpu`, its shards, one merged report), for a
    project with no GPU runner yet. It calls no reusable workflow (a GPU runner's defences,
    its fork gate and per-trust caches, have nothing to guard here), so its actions are
    pinned by commit in the file and the release every job installs is its pin."""
    if workflow is not None:
        raise UserError(f"--workflow {workflow!r:.80}: the GPU workflow's reusable workflow; "
                        "--no-gpu writes a workflow that calls none (its steps are in the file)")
    tiers, _ = declared_tiers()
    template = (files("cudamatrix.config") / "data" / "ci" / "github-hosted.yml").read_text()
    return template.replace("@@VERSION@@", __version__).replace("@@TIERS@@", ", ".join(tiers))


def gitlab_pipeline(workflow: str | None = None) -> str:
    """The `.gitlab-ci.yml` `init --ci gitlab` writes: a plan job and the trigger of the
    child pipeline it writes, every job installing this release (`CUDAMATRIX`). GitLab has
    no reusable workflow to pin: the scripts come with the release, in the child pipeline
    `plan --ci gitlab` writes, so the pin is the release itself."""
    if workflow is not None:
        raise UserError(f"--workflow {workflow!r:.80}: GitHub's reusable workflow, for --ci "
                        "github; a GitLab pipeline pins the release (its CUDAMATRIX variable)")
    template = (files("cudamatrix.config") / "data" / "ci" / "gitlab-ci.yml").read_text()
    return template.replace("@@VERSION@@", __version__)


# What `init --ci NAME` writes into CI_FILES[NAME], from --workflow (or None).
CI_WRITERS: dict[str, Callable[[str | None], str]] = {
    "github": github_caller, GITHUB_HOSTED: github_hosted, "gitlab": gitlab_pipeline}


def ci_file_key(ci: str, no_gpu: bool) -> str:
    """Which of CI_FILES `init --ci CI [--no-gpu]` writes: --no-gpu is GitHub's hosted
    runners' workflow, and refused by name for any other CI (it would be ignored)."""
    if ci not in ("github", "gitlab"):
        raise UserError(f"--ci {ci}: unknown; known: github, gitlab")
    if not no_gpu:
        return ci
    if ci != "github":
        raise UserError(f"--no-gpu with --ci {ci}: a compile-only workflow is written for "
                        "--ci github (GitHub-hosted runners) only")
    return GITHUB_HOSTED


def init_project(folder: Path, ci: str | None = None, workflow: str | None = None,
                 no_gpu: bool = False) -> list[Path]:
    """Write a starter configuration and two example cases (a kernel, a build) into
    `folder`, and with `ci` a workflow that runs them in that CI (with `no_gpu`, GitHub's
    compile-only one for hosted runners); never overwrite. Where the configuration is
    there already, `ci` adds only the workflow."""
    starter = {
        folder / CONFIG: STARTER.replace("@@CASES@@", STARTER_CASES),
        folder / STARTER_CASES / "saxpy" / "case.toml": SAXPY_CASE,
        folder / STARTER_CASES / "saxpy" / "saxpy.cu": SAXPY,
        folder / STARTER_CASES / "saxpy-build" / "case.toml": BUILD_CASE,
        folder / STARTER_CASES / "saxpy-build" / "CMakeLists.txt": CMAKE_LISTS,
        folder / STARTER_CASES / "saxpy-build" / "saxpy_check.cu": SAXPY_CHECK,
        folder / STARTER_CASES / "saxpy-build" / "check.py": CHECK_PY,
    }
    schemas = folder.joinpath(*SCHEMA_FOLDER)
    starter.update({schemas / f"{which}.json": json.dumps(json_schema(which), indent=2) + "\n"
                    for which in ("case", "project")})
    if ci is None and no_gpu:
        raise UserError("--no-gpu: says which CI workflow to write; give it with --ci github")
    wanted = {} if ci is not None and (folder / CONFIG).exists() else starter
    if ci is not None:
        key = ci_file_key(ci, no_gpu)
        wanted = {**wanted, folder / CI_FILES[key]: CI_WRITERS[key](workflow)}
    existing = [p for p in wanted if os.path.lexists(p)]
    if existing:
        raise UserError(f"{existing[0]}: already exists; cudamatrix init writes only new files")
    for path in wanted:  # every refusal before the first file is written
        _writable_inside(folder, path)
    for path, text in wanted.items():
        # The line editors read (Taplo, Even Better TOML): every key checked as it is typed.
        which = {CONFIG: "project", "case.toml": "case"}.get(path.name)
        if which is not None:
            relative = os.path.relpath(schemas / f"{which}.json", path.parent)
            text = schema_line(relative if relative.startswith("..") else f"./{relative}") + text
        _make_folders(folder, path.parent)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
    return [p.relative_to(folder) for p in wanted]


def _writable_inside(folder: Path, path: Path) -> None:
    """`path` can be written where `folder` is, through no link: each part of the way that
    exists is a real folder of the project (a `.github` that is a link would write the
    workflow wherever it points), and the deepest one that exists is writable."""
    deepest = folder
    for part in path.relative_to(folder).parts[:-1]:
        step = deepest / part
        if os.path.islink(step):
            raise UserError(f"{step}: a link; cudamatrix init writes only inside {folder}, "
                            "never through one")
        if not step.exists():
            break
        if not step.is_dir():
            raise UserError(f"{step}: not a folder")
        deepest = step
    if not folder.is_dir():
        raise UserError(f"{folder}: not a folder")
    if not os.access(deepest, os.W_OK | os.X_OK) or not _really_writable(deepest):
        raise UserError(f"{deepest}: not writable; nothing was written")


def _really_writable(folder: Path) -> bool:
    """Whether a file can be made in `folder` (as root, os.access says yes to a read-only
    mount): made and removed at once."""
    try:
        probe = folder / f".cudamatrix-init-{os.getpid()}"
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    os.close(descriptor)
    probe.unlink()
    return True


def _make_folders(folder: Path, target: Path) -> None:
    """The folders down to `target`, each made here (never followed through a link)."""
    current = folder
    for part in target.relative_to(folder).parts:
        current = current / part
        if os.path.islink(current):
            raise UserError(f"{current}: a link; cudamatrix init writes only inside {folder}")
        current.mkdir(exist_ok=True)
