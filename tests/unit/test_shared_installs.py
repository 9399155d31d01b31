"""One install for the libraries that install the same thing (issue 72): cutlass_python
and cutlass_torch are one nvidia-cutlass with cuda-python<13, and every cutlass_torch
version reads the same torch headers; a first run installed each twice, beside its
compiles on 2 cores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.providers import wheels


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Path]]:
    """What prepare_library would install and extract, where (nothing fetched)."""
    seen: dict[str, list[Path]] = {"install": [], "headers": []}

    def install(target: Path, requirements: Sequence[str], **_: object) -> Path:
        seen["install"].append(target)
        return target

    def headers(target: Path, *_: object) -> tuple[str, ...]:
        seen["headers"].append(target)
        return (str(target),)

    monkeypatch.setattr(wheels, "install", install)
    monkeypatch.setattr(wheels, "wheel_headers", headers)
    monkeypatch.setattr(wheels, "installed_packages", lambda root: {})
    monkeypatch.setattr(wheels, "_installed_version", lambda package: None)
    return seen


def test_libraries_installing_the_same_package_share_one_install(
        tmp_path: Path, recorded: dict[str, list[Path]]) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    python = wheels.prepare_library(matrix, "cutlass_python", "3.5.0", 12, tmp_path,
                                    InputLedger())
    torch = wheels.prepare_library(matrix, "cutlass_torch", "3.5.0", 12, tmp_path,
                                   InputLedger())
    assert recorded["install"][0] == recorded["install"][1] == tmp_path / "libraries" / \
        "cutlass_python-3.5.0"
    assert python.python_path == torch.python_path
    # Each keeps its own name and what makes it itself: the torch headers.
    assert (python.name, torch.name) == ("cutlass_python", "cutlass_torch")
    assert torch.include_dirs and not python.include_dirs
    # Another version is another install; a library of its own keeps its own folder.
    wheels.prepare_library(matrix, "cutlass_python", "3.4.1", 12, tmp_path, InputLedger())
    wheels.prepare_library(matrix, "cute_dsl", "4.8.1", 12, tmp_path, InputLedger())
    assert recorded["install"][2:] == [tmp_path / "libraries" / "cutlass_python-3.4.1",
                                       tmp_path / "libraries" / "cute_dsl-4.8.1"]


def test_versions_reading_the_same_headers_extract_them_once(
        tmp_path: Path, recorded: dict[str, list[Path]]) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    for version in ("3.4.1", "3.5.0"):
        wheels.prepare_library(matrix, "cutlass_torch", version, 12, tmp_path, InputLedger())
    assert len(recorded["headers"]) == 2 and recorded["headers"][0] == recorded["headers"][1]
