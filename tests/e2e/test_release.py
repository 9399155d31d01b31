"""Release-ready (issue 25, point 5): `python -m build` makes an sdist and a wheel that pass
`twine check`; the wheel installs into a fresh virtual environment, knows its version (from
the one place it is written), and its `cudamatrix init` and a run work there."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import cudamatrix
from conftest import REPO


def test_sdist_and_wheel_build_check_install_and_run(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True)
    (sdist,) = dist.glob("cudamatrix-*.tar.gz")
    (wheel,) = dist.glob("cudamatrix-*-py3-none-any.whl")
    assert sdist.name == f"cudamatrix-{cudamatrix.__version__}.tar.gz"
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                              str(sdist), str(wheel)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                   check=True)
    said = subprocess.run([str(env / "bin" / "cudamatrix"), "--version"], capture_output=True,
                          text=True, check=True).stdout
    assert said.strip() == f"cudamatrix {cudamatrix.__version__}"
    project = tmp_path / "mylib"
    project.mkdir()
    init = subprocess.run([str(env / "bin" / "cudamatrix"), "init", "--ci", "github"],
                          cwd=project, capture_output=True, text=True, check=False)
    assert init.returncode == 0, init.stdout + init.stderr
    assert f"cudamatrix=={cudamatrix.__version__}" in (
        project / ".github" / "workflows" / "cudamatrix.yml").read_text()
    run = subprocess.run([str(env / "bin" / "cudamatrix"), "run", "--toolkit", "13.0",
                          "--arch", "sm_80", "--case", "saxpy", "--no-gpu"], cwd=project,
                         capture_output=True, text=True, check=False, timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"pass=1 .*\(1 cells", run.stdout), run.stdout
    assert (project / "reports" / "latest" / "badge.json").exists()
