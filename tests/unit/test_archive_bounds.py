"""An sdist is bounded by its own size and member count before its members are read
(issue 68, points 10 and 13): a small zip bomb is refused at the ratio header wheels are
held to (stages/binaries/inputs.py's one mechanism), and a tar of a million members is
refused at the count while its headers stream, not after every header was kept."""

from __future__ import annotations

import io
import tarfile
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from cudamatrix.config import sources
from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.stages.binaries.inputs import RATIO_CEILING, RATIO_FROM_BYTES, inflation_limit


def test_the_limit_is_a_ratio_with_a_floor_and_a_ceiling() -> None:
    assert inflation_limit(1, 1 << 40) == RATIO_FROM_BYTES
    assert inflation_limit(10 << 20, 1 << 40) == RATIO_CEILING * (10 << 20)
    assert inflation_limit(1 << 30, 8 << 30) == 8 << 30


def test_a_small_zip_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    """96 MiB of zeros in a 100 kB zip: within the 8 GiB every source may take, far past
    50 times its own size (and the 64 MiB any archive may take)."""
    bomb = tmp_path / "bomb-1.0.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(3):
            archive.writestr(f"bomb-1.0/zeros-{number}", b"\0" * (32 << 20))
    assert bomb.stat().st_size < 200_000
    with pytest.raises(EnvironmentUnavailable) as caught:
        sources._unpack(bomb, tmp_path / "out")
    assert str(caught.value).startswith("bomb-1.0.zip: ")
    assert "50 times" in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob("out.partial-*"))


def test_a_tar_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb-1.0.tar.gz"
    with tarfile.open(bomb, "w:gz") as archive:
        info = tarfile.TarInfo("bomb-1.0/zeros")
        info.size = 96 << 20
        archive.addfile(info, io.BytesIO(b"\0" * info.size))
    with pytest.raises(EnvironmentUnavailable, match=r"^bomb-1\.0\.tar\.gz: .*50 times"):
        sources._unpack(bomb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_tar_of_too_many_members_is_refused_while_they_stream(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 empty members over a limit of 100: refused at the 101st, having kept about
    a hundred headers, not 20,000 (a million kept 481 MB before)."""
    many = tmp_path / "many-1.0.tar.gz"
    with tarfile.open(many, "w:gz") as archive:
        for number in range(20_000):
            archive.addfile(tarfile.TarInfo(f"many-1.0/f{number}"), io.BytesIO())
    monkeypatch.setattr(sources, "MAX_UNPACKED_FILES", 100)
    tracemalloc.start()
    try:
        with pytest.raises(EnvironmentUnavailable, match=r"^many-1\.0\.tar\.gz: "):
            sources._unpack(many, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20, f"{peak} bytes kept before the refusal"
    assert not (tmp_path / "out").exists()


def test_a_real_sdist_still_unpacks(tmp_path: Path) -> None:
    sdist = tmp_path / "ok-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        data = b"print('hi')\n"
        info = tarfile.TarInfo("ok-1.0/setup.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    folder = sources._unpack(sdist, tmp_path / "out")
    assert (folder / "setup.py").read_bytes() == b"print('hi')\n"
