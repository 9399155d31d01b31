"""A maintainer's own project (issue 14): the tool installed from this checkout into a
fresh virtualenv, run from an empty folder outside the repository, on the starter that
`cudamatrix init` writes; and a wrong expectation on a first run fails loudly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, cudamatrix, write_case

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= %s; }\n'


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install <checkout>` into a new virtualenv: the cudamatrix command it puts on PATH."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", str(REPO)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv / "bin" / "cudamatrix"


def _in(folder: Path, command: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "1", "CUDAMATRIX_PROVIDER": "wheels"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(command), *args], cwd=folder, capture_output=True, text=True,
                          env=env, timeout=900, check=False)


def test_init_then_run_in_an_empty_folder_outside_the_checkout(installed: Path,
                                                                tmp_path: Path) -> None:
    folder = tmp_path / "mylib"
    folder.mkdir()
    version = _in(folder, installed, "--version")
    assert version.returncode == 0 and version.stdout.startswith("cudamatrix ")
    nothing = _in(folder, installed, "run")
    assert nothing.returncode == 2 and "cudamatrix init" in nothing.stderr
    made = _in(folder, installed, "init")
    assert made.returncode == 0, made.stdout + made.stderr
    assert (folder / "cudamatrix.toml").is_file()
    again = _in(folder, installed, "init")
    assert again.returncode == 2 and "already exists" in again.stderr
    # A plain run on init's own tier runs whole on a machine without a GPU (issue 70, 1):
    # its build case is planned where the wheels build it (13.x), every cell builds.
    run = _in(folder, installed, "run")
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    cells = {c["id"]: c for c in
             json.loads((folder / "reports" / "latest" / "results.json").read_text())["cells"]}
    assert {i: c["outcome"] for i, c in cells.items()} == {
        **{f"saxpy/nvrtc/{t}/{a}": "pass" for t in ("12.4", "12.8", "13.0")
           for a in ("sm_80", "sm_90")},
        "saxpy-build/cmake/13.0/sm_80": "pass", "saxpy-build/cmake/13.0/sm_90": "pass"}
    assert "skip=0" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]
    # The build case is the project's CMake build, its library audited for the cell's arch.
    built = cells["saxpy-build/cmake/13.0/sm_80"]["stages"]
    assert built[1]["details"]["modules"][0]["ships"].startswith("SASS sm_80")
    # The starter's own tier is the project's: its toolkits and archs, nothing else.
    listed = _in(folder, installed, "list").stdout.split()
    assert len(listed) == 8 and all("/sm_80" in c or "/sm_90" in c for c in listed)
    with_bugs = _in(folder, installed, "list", "--known-bugs", "--toolkit", "13.0")
    assert any(c.startswith("marlin-sm75/") for c in with_bugs.stdout.split())


def test_a_wrong_expectation_fails_on_its_first_run(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    toml = """
        title = "expected to fail, but fine"
        [[variant]]
        name = "v"
        source = "k.cu"
        frontend = "nvrtc"
        expect = [{ outcome = "fail", stage = "compile" }]
    """
    write_case(corpus, "wrong", toml, {"k.cu": KERNEL % "undefined_name"})
    args = ("run", "--corpus", str(corpus), "--case", "wrong", "--toolkit", "12.4",
            "--arch", "sm_80")
    broken = cudamatrix(*args, out=tmp_path / "broken")
    assert broken.cells()["wrong/v/12.4/sm_80"]["outcome"] == "xfail"
    (corpus / "wrong" / "k.cu").write_text(KERNEL % "2.0f")
    first = cudamatrix(*args, out=tmp_path / "first")
    cell = first.cells()["wrong/v/12.4/sm_80"]
    assert first.code == 1 and cell["outcome"] == "fail"
    assert "check the expectation" in cell["reason"]
    fixed = cudamatrix(*args, "--baseline", str(tmp_path / "broken" / "results.json"),
                       out=tmp_path / "fixed")
    assert fixed.code == 0, fixed.output[-2000:]
    assert fixed.cells()["wrong/v/12.4/sm_80"]["outcome"] == "xpass"
