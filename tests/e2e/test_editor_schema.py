"""The files `cudamatrix init` writes, opened as an editor opens them (issue 56, point 7):
Taplo, which Even Better TOML runs, follows each file's `#:schema` line to the installed
release's schema that init wrote beside them, offline, and marks an unknown key."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, cudamatrix

TAPLO = REPO / "tools" / "taplo" / "node_modules" / ".bin" / "taplo"


def _taplo(project: Path, *files: str) -> subprocess.CompletedProcess[str]:
    if not shutil.which("node") or not TAPLO.exists():
        pytest.skip("Taplo's npm package is not installed (nox -s tests installs it)")
    # No network: a schema URL would fail to load here, as on an air-gapped machine.
    return subprocess.run([str(TAPLO), "lint", "--no-auto-config", *files], cwd=project,
                          capture_output=True, text=True, check=False, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(project),
                               "https_proxy": "http://127.0.0.1:9", "no_proxy": ""})


def test_an_editor_checks_every_key_of_what_init_wrote_offline(tmp_path: Path) -> None:
    assert cudamatrix("init", cwd=tmp_path).code == 0
    files = ["cudamatrix.toml", "cudamatrix-cases/saxpy/case.toml",
             "cudamatrix-cases/saxpy-build/case.toml"]
    for name in files:
        assert (tmp_path / name).read_text().startswith("#:schema ."), name
    clean = _taplo(tmp_path, *files)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    case = tmp_path / "cudamatrix-cases" / "saxpy" / "case.toml"
    case.write_text(case.read_text().replace('frontend = "nvrtc"',
                                             'frontend = "nvrtc"\nfrontnd_typo = 1'))
    marked = _taplo(tmp_path, "cudamatrix-cases/saxpy/case.toml")
    assert marked.returncode != 0 and "frontnd_typo" in marked.stdout + marked.stderr
