"""Every read of an index's or an archive's data is bounded (issue 57, points 9 and 10): an
endless page, a RECORD that claims gigabytes, a listing pointing at a device and an archive
that unpacks past any source are each one line, not a MemoryError or a full disk."""

from __future__ import annotations

import http.server
import threading
import zipfile
from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.config import sources
from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers import wheel_index


def test_an_endless_page_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Endless(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(b"<a>" * 10_000)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(package_index, "MAX_PAGE_BYTES", 100_000)
    try:
        with pytest.raises(package_index.IndexUnreachable, match="more than any index page"):
            package_index.get(f"http://127.0.0.1:{server.server_address[1]}/simple/x/")
    finally:
        server.shutdown()
        server.server_close()


def test_a_record_claiming_too_much_is_refused(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x-1.0.dist-info/RECORD", "a,sha256=b,1\n" * 200_000)
    monkeypatch.setattr(wheel_index, "MAX_RECORD_BYTES", 1 << 20)
    with zipfile.ZipFile(wheel) as archive, \
            pytest.raises(EnvironmentUnavailable, match="more than any wheel's RECORD"):
        wheel_index._record_hashes(archive)


def test_an_archive_past_any_source_is_not_unpacked(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb-1.0.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb-1.0/zeros", b"\0" * (8 << 20))
    monkeypatch.setattr(sources, "MAX_UNPACKED_BYTES", 1 << 20)
    with pytest.raises(EnvironmentUnavailable, match="more than a source archive holds"):
        sources._unpack(bomb, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert bomb.stat().st_size < 100_000  # a small download, a large unpacking


def test_a_listing_pointing_at_a_device_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    listing = package_index.Listing(("1.0",), ({
        "filename": "x-1.0.tar.gz", "url": "file:///dev/zero", "hashes": {"sha256": "00"},
        "yanked": False},))
    monkeypatch.setattr(sources, "_index_listing", lambda name, said: listing)
    with pytest.raises(EnvironmentUnavailable, match="is not a file"):
        sources._pypi_sdist("x==1.0", tmp_path)
