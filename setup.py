"""The one thing pyproject.toml cannot say: the commit a release is built from, written into
the package (config/data/release-commit) so that `cudamatrix init --ci github` pins the
reusable workflow by that commit, as zizmor asks, with the version in a comment. An sdist
carries the file its build wrote, so a wheel built from it (no git there) still knows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

RECORD = Path("cudamatrix") / "config" / "data" / "release-commit"
HERE = Path(__file__).resolve().parent


def _commit() -> str:
    """This source tree's commit: git's HEAD where it is a clean checkout, else the record an
    sdist carries; empty where neither is known."""
    carried = HERE / "src" / RECORD
    if carried.is_file():
        return carried.read_text().strip()
    try:
        head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=HERE,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    commit = head.stdout.strip()
    return commit if re.fullmatch(r"[0-9a-f]{40}", commit) else ""


class BuildWithCommit(build_py):
    def run(self) -> None:
        super().run()
        commit = _commit()
        if commit and not self.editable_mode:
            target = Path(self.build_lib) / RECORD
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(commit + "\n")


class SdistWithCommit(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        commit = _commit()
        if commit:
            target = Path(base_dir) / "src" / RECORD
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommit, "sdist": SdistWithCommit})
