"""Release-ready (issue 25, point 5): `python -m build` makes an sdist and a wheel that pass
`twine check`; the wheel installs into a fresh virtual environment, knows its version (from
the one place it is written), and README's first section, followed as a newcomer follows
it (issue 51), reaches a first report there."""

from __future__ import annotations

import os
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
    for command in _first_ten_minutes():
        if command.startswith("python -m pip install cudamatrix"):
            continue  # done above, from the wheel (README: "or its wheel")
        if command.startswith(("cd ", "mkdir ")):
            continue  # the project's folder: `project`
        words = command.split()
        assert words[0] == "cudamatrix", command
        # A newcomer's Docker engine, if any, has no cudamatrix base image, so `--provider
        # auto` takes the wheels; CI's engine has one (the container tests build it), which
        # would put the run in containers, where a build case does not run.
        done = subprocess.run([str(env / "bin" / "cudamatrix"), *words[1:]], cwd=project,
                              capture_output=True, text=True, check=False, timeout=1500,
                              env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none"})
        assert done.returncode == 0, (command, done.stdout[-3000:] + done.stderr[-3000:])
    caller = (project / ".github" / "workflows" / "cudamatrix.yml").read_text()
    assert f"cudamatrix=={cudamatrix.__version__}" in caller
    # The wheel, built from the sdist where there is no git, knows the commit it came from:
    # the caller pins the reusable workflow by it (issue 56, point 4).
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert f"cudamatrix.yml@{head} # v{cudamatrix.__version__}" in caller, caller
    # The first screen README shows: both example cases pass, then where the reports are.
    assert re.search(r"pass=2 .*\(2 cells", done.stdout), done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("reports: "), done.stdout
    assert (project / "reports" / "latest" / "COMPATIBILITY.md").exists()
    # The files init wrote name their schemas, which the wheel ships and prints.
    assert (project / "cudamatrix.toml").read_text().startswith("#:schema ")
    schema = subprocess.run([str(env / "bin" / "cudamatrix"), "schema", "case"],
                            capture_output=True, text=True, check=True).stdout
    assert '"$schema": "https://json-schema.org/draft/2020-12/schema"' in schema


def _first_ten_minutes() -> list[str]:
    """The commands of README's first section, in order, without their comments: the
    block is a console session, each command after its `$ ` prompt, what it prints not."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Your first ten minutes", 1)[1]
    block = section.split("```", 2)[1]
    commands = [line[2:].split("#", 1)[0].strip() for line in block.splitlines()
                if line.startswith("$ ")]
    found = [c for c in commands if c]
    assert found[-1].startswith("cudamatrix run"), found
    return found
