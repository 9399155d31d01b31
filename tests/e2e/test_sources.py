"""A PyPI sdist as the code under test (issue 14, point 2): checked against the real
index's sha256, kept, and reused where no index answers; a damaged copy never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.config.sources import SourceSpec, fetch
from cudamatrix.errors import EnvironmentUnavailable


def test_a_pypi_sdist_is_checked_against_the_index_and_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SourceSpec.parse("sdist:cuvec==6.0.1", "x")
    got = fetch(spec, tmp_path, tmp_path / "cache")
    assert got.digest == "bd6c1e4f3704372e9e60fa9234e9c420620bef1376e774903ded004959ae0e29"
    assert (got.path / "pyproject.toml").is_file()
    # Fetched and checked once, it builds where no index answers (a GPU runner) ...
    monkeypatch.setattr(package_index, "configured",
                        lambda: package_index.Indexes("http://127.0.0.1:9/simple"))
    assert fetch(spec, tmp_path, tmp_path / "cache").digest == got.digest
    # ... but a damaged copy is never used, and without the index it cannot be replaced.
    archive = tmp_path / "cache" / "sources" / "downloads" / "cuvec-6.0.1.tar.gz"
    damaged = bytearray(archive.read_bytes())
    damaged[100] ^= 0xFF
    archive.write_bytes(bytes(damaged))
    with pytest.raises(EnvironmentUnavailable, match="the index did not answer"):
        fetch(spec, tmp_path, tmp_path / "cache")
