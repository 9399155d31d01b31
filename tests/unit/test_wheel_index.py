"""Reading a wheel's headers from the index by byte ranges (providers/wheel_index.py),
against a real HTTP server on this machine that serves ranges as PyPI's file host does."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers.release_headers import is_header
from cudamatrix.providers.wheel_index import (
    IndexUnreachable,
    IndexWheel,
    chosen_version,
    extract_members,
)


def _urlsafe_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(members: dict[str, bytes], record: dict[str, bytes] | None = None) -> bytes:
    """A wheel of `members`, its RECORD listing `record` (each member's own bytes unless
    told otherwise)."""
    listed = {**members, **(record or {})}
    lines = [f"{name},sha256={_urlsafe_sha256(data)},{len(data)}" for name, data in listed.items()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("pkg-1.0.dist-info/RECORD", "\n".join(lines) + "\n")
    return buffer.getvalue()


class _Served:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.ranges = True


@pytest.fixture
def server() -> Iterator[tuple[str, _Served]]:
    served = _Served()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = served.files[self.path]
            asked = self.headers.get("Range", "")
            served.requests.append(asked)
            if not (served.ranges and asked.startswith("bytes=")):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            first, _, last = asked[len("bytes="):].partition("-")
            if not first:
                start, end = max(0, len(data) - int(last)), len(data) - 1
            else:
                start, end = int(first), min(int(last), len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            self.wfile.write(data[start:end + 1])

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()


def _index_wheel(base: str, served: _Served, data: bytes) -> IndexWheel:
    served.files["/pkg.whl"] = data
    return IndexWheel("pkg", Version("1.0"), "pkg-1.0-py3-none-any.whl", f"{base}/pkg.whl")


def test_headers_are_read_by_ranges_without_the_libraries(server: tuple[str, _Served],
                                                          tmp_path: Path) -> None:
    base, served = server
    library = bytes(range(256)) * 40_000  # 10 MB of "library", stored, never fetched
    headers = {f"nvidia/cu13/include/h{n}.h": f"#define H{n} {n}\n".encode() * 50
               for n in range(30)}
    data = _wheel({"nvidia/cu13/lib/libbig.so": library, **headers,
                   "nvidia/cu13/include/__init__.py": b""})
    wheel = _index_wheel(base, served, data)
    written = extract_members(wheel, is_header, tmp_path)
    assert sorted(written) == sorted(headers)
    for name, text in headers.items():
        assert (tmp_path / name).read_bytes() == text
    assert not (tmp_path / "nvidia" / "cu13" / "lib").exists()
    assert not (tmp_path / "nvidia" / "cu13" / "include" / "__init__.py").exists()
    # The tail, then one request for the headers that lie together (RECORD among them).
    assert len(served.requests) <= 3, served.requests


def test_a_member_that_does_not_match_its_record_is_refused(server: tuple[str, _Served],
                                                            tmp_path: Path) -> None:
    base, served = server
    data = _wheel({"nvidia/include/a.h": b"#define A 1\n"},
                  record={"nvidia/include/a.h": b"#define A 2\n"})
    with pytest.raises(EnvironmentUnavailable, match="does not match the hash"):
        extract_members(_index_wheel(base, served, data), is_header, tmp_path)


def test_a_server_without_ranges_is_said_so(server: tuple[str, _Served],
                                            tmp_path: Path) -> None:
    """Where no range is served, the caller fetches the wheel whole (pip): said by type."""
    base, served = server
    served.ranges = False
    data = _wheel({"nvidia/include/a.h": b"#define A 1\n"})
    with pytest.raises(IndexUnreachable, match="no byte ranges"):
        extract_members(_index_wheel(base, served, data), is_header, tmp_path)


def test_a_member_path_out_of_the_folder_is_never_written(server: tuple[str, _Served],
                                                          tmp_path: Path) -> None:
    base, served = server
    data = _wheel({"nvidia/include/../../../escaped.h": b"x", "/abs/include/a.h": b"y",
                   "nvidia/include/ok.h": b"z"})
    written = extract_members(_index_wheel(base, served, data), is_header, tmp_path / "t")
    assert written == ["nvidia/include/ok.h"]
    assert not (tmp_path / "escaped.h").exists()


def test_a_release_pin_means_its_last_build_and_a_range_its_first() -> None:
    versions = [Version(v) for v in ("13.0.39", "13.0.88", "13.1.80", "13.2.51")]
    assert chosen_version(versions, SpecifierSet("==13.0.*")) == Version("13.0.88")
    assert chosen_version(versions, SpecifierSet(">=13.0.88,<14")) == Version("13.0.88")
    assert chosen_version(versions, SpecifierSet("==12.4.*")) is None


def test_only_an_include_folders_files_are_headers() -> None:
    assert is_header("nvidia/cu13/include/curand_kernel.h")
    assert is_header("nvidia/cublas/include/cublasLt.h")
    assert not is_header("nvidia/cublas/include/__init__.py")
    assert not is_header("nvidia/cublas/lib/libcublas.so.12")
    assert not is_header("include.h")
