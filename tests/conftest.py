"""Shared helpers: every test drives the real command line, real compilers and real wheels."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.common.locks import folder_lock
from cudamatrix.config.options import CACHE_ENV, PROVIDER_ENV

REPO = Path(__file__).resolve().parents[1]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes


@dataclass
class Run:
    code: int
    output: str
    out: Path

    @property
    def results(self) -> dict[str, Any]:
        return json.loads((self.out / "results.json").read_text())

    def cells(self) -> dict[str, dict[str, Any]]:
        return {c["id"]: c for c in self.results["cells"]}


def cudamatrix(*args: str, out: Path | None = None, cwd: Path = REPO,
               timeout: float = 1800, env: dict[str, str] | None = None) -> Run:
    command = [sys.executable, "-m", "cudamatrix", *args]
    if out is not None:
        command += ["--out", str(out)]
    # The wheels provider unless a test asks for another: a Docker engine that CI started
    # for the container tests must not turn every other test into a container run.
    variables = {**os.environ, "CI": "1", PROVIDER_ENV: "wheels", **(env or {})}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=variables, check=False)
    return Run(done.returncode, done.stdout + done.stderr, out or REPO)


# One kernel, `k.cu`, built by nvcc and by NVRTC then ptxas: the smallest case that asks
# both compilers of a toolkit (write_case(root, name, TWO_COMPILERS_CASE, {"k.cu": ADD})).
ADD_KERNEL = "__global__ void add(float *x) { x[threadIdx.x] += 1.0f; }\n"
TWO_COMPILERS_CASE = """\
title = "one kernel, two compilers"

[[variant]]
name = "nvcc"
source = "k.cu"
frontend = "nvcc"

[[variant]]
name = "nvrtc-ptxas"
source = "k.cu"
frontend = "nvrtc"
arch_flag = false
kernel = "add"
"""


# A one-kernel case that NVRTC compiles: `k` scales x by what %s gives ("2.0f"; a name
# that does not exist makes the cell a compile failure).
SCALE_KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= %s; }\n'


def scale_case(title: str = "t", variant: str = "v", extra: str = "") -> str:
    """case.toml of one variant compiling k.cu (SCALE_KERNEL) with NVRTC; `extra`: more
    lines of the variant's table."""
    return (f'title = "{title}"\n[[variant]]\nname = "{variant}"\nsource = "k.cu"\n'
            f'frontend = "nvrtc"\n{extra}\n')


def write_case(root: Path, name: str, toml: str, files: dict[str, str | bytes]) -> None:
    """A case folder: case.toml (dedented) and its files, text or bytes."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(textwrap.dedent(toml))
    for relative, content in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


# The machine's cache, as the run would find it before any test points it elsewhere.
SHARED_CACHE = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "cudamatrix")
# What a test's own cache shares with every other test, by link: downloads, each checked
# against its hashes when it is prepared (toolkit and library wheels, Debian's packages,
# build tools, sdists, upstream sources). Everything else (compiled cells, CuPy's kernel
# cache, the links a run lays out) is the test's own, so no test's verdict comes from
# what another left in the cache.
SHARED_DOWNLOADS = ("toolkits", "tools", "libraries", "debian", "clang", "build-tools",
                    "sources", "audit-wheels", "realworld", "downloads")


def private_cache(root: Path) -> Path:
    """A cache of its own under `root` sharing the prepared downloads by link: a test can
    inspect or damage its compile cache alone."""
    own = root / "cache"
    own.mkdir()
    for name in SHARED_DOWNLOADS:
        (SHARED_CACHE / name).mkdir(parents=True, exist_ok=True)
        (own / name).symlink_to(SHARED_CACHE / name)
    return own


# The browser every page test drives: Debian's Chromium (`nox -s tests` installs it as root).
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def chromium() -> str:
    """Chromium's path, or the test is skipped saying how to get it."""
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("no Chromium here: apt-get install chromium (`nox -s tests` does, as root)")
    return found


def _end_to_end(path: Path) -> bool:
    return path.is_relative_to(REPO / "tests" / "e2e")


# Each end-to-end test runs with a cache folder of its own (the downloads shared by link),
# and so does each module's shared run (a module-scoped fixture): `cudamatrix` and the
# tool's code in the test process both read $CUDAMATRIX_CACHE, so no verdict a test checks
# can come from a compile another test left in the cache.
@pytest.fixture(scope="module", autouse=True)
def module_cache(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """The cache of the module's shared fixtures (made before them: autouse goes first)."""
    if not _end_to_end(Path(request.path)):
        yield None
        return
    cache = private_cache(tmp_path_factory.mktemp("module-cache"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(cache))
        yield cache


@pytest.fixture(autouse=True)
def own_cache(module_cache: Path | None, request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory,
              monkeypatch: pytest.MonkeyPatch) -> Path | None:
    if module_cache is None:
        return None
    cache = private_cache(tmp_path_factory.mktemp("test-cache"))
    monkeypatch.setenv(CACHE_ENV, str(cache))
    return cache


@pytest.fixture(scope="session")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The main job (`cudamatrix run`: the default tier, every seed case, as `nox -s
    matrix` runs it), run once per test session, whichever worker asks first (the other
    waits for it): test_default_tier checks its verdicts, and tests that compile the same
    shipped cells read its compile cache with --compile-cache-from, never writing it.
    An entry's key is the content of all that decides its compile, so reading it there
    gives the verdict compiling it here would: what those tests assert cannot change."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "main-job"
    with folder_lock(folder):
        said = folder / "said.json"
        if said.exists():
            code, output = json.loads(said.read_text())
            return Run(code, output, folder / "out")
        folder.mkdir(exist_ok=True)
        cache = private_cache(folder)
        run = cudamatrix("run", out=folder / "out", timeout=3000,
                         env={CACHE_ENV: str(cache)})
        said.write_text(json.dumps([run.code, run.output]))
        return run


def main_job_cache(run: Run) -> Path:
    """The compile cache the main job filled (beside its --out folder)."""
    return run.out.parent / "cache"


@pytest.fixture
def cache_copy(tmp_path: Path) -> Path:
    return private_cache(tmp_path)


@pytest.fixture
def run_cli():
    return cudamatrix


def cudamatrix_in_process(*args: str, env: dict[str, str] | None = None,
                          cwd: Path = REPO) -> Run:
    """The command line run in this process, as tox's `tox_project` runs tox: for a test
    that only reads files (validate, list, a refusal before any work), so the e2e lane is
    kept for compilers, builds, browsers and engines. The exit status as the process's,
    stdout and stderr together."""
    import contextlib
    import io

    from cudamatrix.cli import main

    said = io.StringIO()
    variables = {"CI": "1", PROVIDER_ENV: "wheels", **(env or {})}
    saved = {name: os.environ.get(name) for name in variables}
    here = os.getcwd()
    code = 0
    try:
        os.environ.update(variables)
        os.chdir(cwd)
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(here)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return Run(code, said.getvalue(), cwd)


def source_lines(pattern: re.Pattern[str], outside: str) -> list[str]:
    """Each line of the package's modules outside its `outside` package that `pattern`
    finds, as ``path:line: text``: what a test that keeps a rule of the code lists."""
    package = REPO / "src" / "cudamatrix"
    return [f"{path.relative_to(package)}:{number}: {line.strip()}"
            for path in sorted(package.rglob("*.py")) if outside not in path.parts
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(line)]


def matrix_copy(folder: Path, old: str, new: str) -> Path:
    """The default matrix with `old` replaced by `new` (once), written into `folder`."""
    from cudamatrix.config.defaults import DEFAULT_MATRIX

    text = DEFAULT_MATRIX.read_text()
    assert old in text
    path = folder / "matrix.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.fixture
def read_cli():
    """`cudamatrix ...` in this process (cudamatrix_in_process)."""
    return cudamatrix_in_process


def has_gpu() -> bool:
    from cudamatrix.orchestrator.gpu import probe

    return probe().present


def one_line_error(run: Run, *words: str) -> str:
    """The run ended in one line starting "error:", exit status 2, no traceback, each
    of `words` in that line; the line."""
    assert run.code == 2, run.output[-3000:]
    assert "Traceback" not in run.output, run.output[-3000:]
    error = [line for line in run.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1, run.output[-3000:]
    for word in words:
        assert word in error[0], error[0]
    return error[0]


# The end-to-end files that take minutes, longest first, as CI's last runs measured them
# on 2 cores (the main job and the container runs; the real-world kernels; the sharded
# run; a real sdist's build; Debian's nvcc; GitLab's and GitHub's pipelines rehearsed;
# the binding against each Python's headers): the lane's two workers take a file each
# in this order (`--no-loadscope-reorder`), so no file of minutes is started last and
# ends the lane alone, and the files that read the main job's cache start once it is
# made. xdist's own order (the most tests first) started a 142 s file last.
LONGEST_FILES = ("test_docker.py", "test_realworld.py", "test_ci_plan.py",
                 "test_build_frontend.py", "test_debian_nvcc.py", "test_gitlab.py",
                 "test_workflow.py", "test_torch_extension_python.py", "test_prebuilt.py",
                 "test_torch_extension.py", "test_compile_together.py", "test_web_report.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end lane's files in LONGEST_FILES's order, the rest after them as
    collected (a stable sort: a file's own tests keep their order)."""
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank))
               if _end_to_end(item.path) else -1)
