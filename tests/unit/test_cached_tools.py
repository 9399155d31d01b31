"""A cached tool is checked before it is run (issue 68, item 11): a dangling link beside
the cached cuobjdump, a 0-byte cuobjdump, or Debian's unpacked cuobjdump without its x bit
were an OSError traceback in `run` and `audit`. A broken one is fetched again (pip from a
local find-links folder of real wheels here: no network), or refused in one line naming
it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from base64 import urlsafe_b64encode
from pathlib import Path

import pytest

from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.errors import UserError
from cudamatrix.providers import debian
from cudamatrix.providers.sass_tools import older_cuobjdumps, prepare_sass_tools

PROGRAM = "#!/bin/sh\necho {name} read it\n"


def _wheel(folder: Path, project: str, program: str) -> None:
    """A real wheel of `project` 13.5.0 holding nvidia/cu13/bin/<program> (a shell script)."""
    dist = f"{project.replace('-', '_')}-13.5.0"
    files = {f"nvidia/cu13/bin/{program}": PROGRAM.format(name=program).encode(),
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {project}\n"
                                           "Version: 13.5.0\n".encode(),
             f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                        b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(
        f"{name},sha256={urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()}"
        f",{len(data)}\n" for name, data in files.items()) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as wheel:
        for name, data in {**files, f"{dist}.dist-info/RECORD": record.encode()}.items():
            wheel.writestr(name, data)


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip told to install from a folder of the two tools' wheels, and nowhere else."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    _wheel(folder, "nvidia-cuda-cuobjdump", "cuobjdump")
    _wheel(folder, "nvidia-cuda-nvdisasm", "nvdisasm")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def _runs(tool: str) -> str:
    return subprocess.run([tool], capture_output=True, text=True, check=True).stdout


def test_a_dangling_link_beside_the_cached_cuobjdump_is_no_traceback(
        tmp_path: Path, wheels: Path) -> None:
    tool = prepare_sass_tools(tmp_path / "cache", InputLedger())
    assert tool is not None
    (Path(tool).parent / "dangling").symlink_to(tmp_path / "gone")
    assert prepare_sass_tools(tmp_path / "cache", InputLedger()) == tool
    assert _runs(tool) == "cuobjdump read it\n"


@pytest.mark.parametrize("damage", ["empty", "a folder in its place"])
def test_a_broken_cached_cuobjdump_is_fetched_again(tmp_path: Path, wheels: Path,
                                                     damage: str) -> None:
    tool = prepare_sass_tools(tmp_path / "cache", InputLedger())
    assert tool is not None
    if damage == "empty":
        Path(tool).write_bytes(b"")
    else:
        Path(tool).unlink()
        Path(tool).mkdir()
    again = prepare_sass_tools(tmp_path / "cache", InputLedger())
    assert again is not None and _runs(again) == "cuobjdump read it\n"


def test_a_broken_cached_cuobjdump_that_cannot_be_fetched_is_one_line(
        tmp_path: Path, wheels: Path) -> None:
    tool = prepare_sass_tools(tmp_path / "cache", InputLedger())
    assert tool is not None
    Path(tool).write_bytes(b"")
    for wheel in wheels.iterdir():
        wheel.unlink()  # the index no longer has it
    with pytest.raises(UserError, match="cuobjdump: a cached tool that cannot be run "
                                        r"\(an empty file\)") as raised:
        prepare_sass_tools(tmp_path / "cache", InputLedger())
    assert "\n" not in str(raised.value)


def test_debians_cuobjdump_without_its_x_bit_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpacked once into the cache, then damaged; unpacking again cannot reach Debian's
    archive here (no network, its address pointed at nothing): one line naming it."""
    matrix = load_matrix(DEFAULT_MATRIX)
    cache = tmp_path / "cache"
    for version, toolkit in matrix.toolkits.items():
        if toolkit.debian:
            root = cache / "debian" / f"{toolkit.debian}-{version}"
            (root / "usr" / "bin").mkdir(parents=True)
            (root / debian.MARKER).write_text(json.dumps({"package": "nvidia-cuda-toolkit"}))
            (root / "usr" / "bin" / "cuobjdump").write_text(PROGRAM.format(name="cuobjdump"))
            (root / "usr" / "bin" / "cuobjdump").chmod(0o644)
    monkeypatch.setattr(debian, "ARCHIVE", "http://127.0.0.1:9")
    with pytest.raises(UserError, match=r"usr/bin/cuobjdump: a cached tool that cannot be "
                                        r"run \(not executable\)") as raised:
        older_cuobjdumps(matrix, cache, InputLedger())
    assert "\n" not in str(raised.value)
