"""Every pip setting that decides where wheels come from is honoured by the tool's own
downloads as pip honours it (issue 56, point 8): a header library served from a find-links
wheelhouse (an offline, air-gapped CI's set-up) and from a file:// index, `no-index`, and
`trusted-host`, read from the environment or pip's configuration."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.common.package_index import Indexes, IndexUnreachable, configured, listing
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.matrix import Library
from cudamatrix.providers.wheels import prepare_header_library

HEADER = "#pragma once\n#define EVILHDR_VERSION 100\n"


def _wheel(folder: Path, version: str = "1.0.0") -> Path:
    """A header-only wheel as a packager makes one: its headers, METADATA, WHEEL, RECORD."""
    name = f"evilhdr-{version}"
    files = {"evilhdr/include/evilhdr.h": HEADER.encode(),
             f"{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: evilhdr\nVersion: "
                                           f"{version}\n".encode(),
             f"{name}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                        b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")

    record = "".join(f"{path},sha256={digest(data)},{len(data)}\n"
                     for path, data in files.items())
    record += f"{name}.dist-info/RECORD,,\n"
    path = folder / f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
        archive.writestr(f"{name}.dist-info/RECORD", record)
    return path


@pytest.fixture
def pip_says(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """pip's settings as the test sets them, read afresh (no configuration file of this
    machine's in the way)."""
    for name in ("INDEX_URL", "EXTRA_INDEX_URL", "FIND_LINKS", "NO_INDEX", "TRUSTED_HOST"):
        monkeypatch.setenv(f"PIP_{name}", "")
    configured.cache_clear()
    yield monkeypatch
    configured.cache_clear()


def _headers(cache: Path) -> Path:
    library = Library("evilhdr", "evilhdr", ("1.0",), headers=True)
    made = prepare_header_library(library, "1.0", cache, InputLedger())
    (folder,) = made.include_dirs
    return Path(folder)


def test_a_header_library_from_a_find_links_wheelhouse_with_no_index(
        tmp_path: Path, pip_says: pytest.MonkeyPatch) -> None:
    house = tmp_path / "wheelhouse"
    house.mkdir()
    _wheel(house)
    pip_says.setenv("PIP_FIND_LINKS", str(house))
    pip_says.setenv("PIP_NO_INDEX", "1")
    said = configured()
    assert said.no_index and said.all() == () and said.find_links == (str(house),)
    found = listing("EvilHdr")
    assert found.versions == ("1.0.0",) and found.files[0]["url"].startswith("file://")
    folder = _headers(tmp_path / "cache")
    assert (folder / "evilhdr.h").read_text() == HEADER


def test_a_header_library_from_a_file_index(tmp_path: Path,
                                            pip_says: pytest.MonkeyPatch) -> None:
    index = tmp_path / "simple"
    (index / "evilhdr").mkdir(parents=True)
    wheel = _wheel(index / "evilhdr")
    (index / "evilhdr" / "index.html").write_text(
        f'<html><body><a href="{wheel.name}">{wheel.name}</a></body></html>')
    pip_says.setenv("PIP_INDEX_URL", index.as_uri())
    folder = _headers(tmp_path / "cache")
    assert (folder / "evilhdr.h").read_text() == HEADER


def test_a_find_links_page_and_pip_configuration(tmp_path: Path,
                                                 pip_says: pytest.MonkeyPatch) -> None:
    """find-links may be a page of links; pip.conf's settings count where no variable is
    set; nothing at all to ask is one line saying so."""
    house = tmp_path / "house"
    house.mkdir()
    wheel = _wheel(house, "2.0.0")
    page = tmp_path / "links.html"
    page.write_text(f'<a href="house/{wheel.name}">{wheel.name}</a><a href="x/other-1.0.tar.gz">'
                    "other-1.0.tar.gz</a>")
    found = listing("evilhdr", Indexes("https://unused.invalid/simple", find_links=(
        page.as_uri(),), no_index=True))
    assert found.versions == ("2.0.0",)
    assert found.files[0]["url"] == (house / wheel.name).as_uri()
    for name in ("FIND_LINKS", "NO_INDEX", "TRUSTED_HOST", "INDEX_URL", "EXTRA_INDEX_URL"):
        pip_says.delenv(f"PIP_{name}")
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nfind-links = {house}\nno-index = true\n"
                      "trusted-host = mirror.internal:8443\n")
    pip_says.setenv("PIP_CONFIG_FILE", str(config))
    configured.cache_clear()
    said = configured()
    assert said.find_links == (str(house),) and said.no_index
    assert said.trusted_hosts == ("mirror.internal:8443",)
    assert package_index._trusted("https://mirror.internal:8443/simple/x/")
    assert not package_index._trusted("https://mirror.internal/simple/x/")
    with pytest.raises(IndexUnreachable, match="no-index"):
        listing("evilhdr", Indexes("https://pypi.org/simple", no_index=True))
