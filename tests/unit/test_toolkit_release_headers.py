"""A wheels toolkit's other components' headers (release_headers.py), against a real HTTP
index on this machine and a real pip: they land in the toolkit's tree beside the compilers'
install, each component's wheel read once; a second preparation asks for nothing; a failed
install or metapackage leaves no staging behind; another process's staging is left alone and
a killed run's (by age) removed."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import os
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers.release_headers import HEADERS_MARKER
from cudamatrix.providers.wheels import prepare_toolkit

COMPILERS = "nvidia-fake-nvcc-cu12"
HEADERS = "nvidia-fake-curand-cu12"


def _wheel(dist: str, version: str, members: dict[str, bytes], metadata: str = "") -> bytes:
    """A wheel of `members`, its METADATA and RECORD (each file's SHA-256, as pip writes)."""
    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    info = f"{dist}-{version}.dist-info"
    files = {**members,
             f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
                                  + metadata).encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(f"{n},sha256={digest(d)},{len(d)}\n" for n, d in files.items())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return buffer.getvalue()


@dataclass
class _Index:
    files: dict[str, bytes] = field(default_factory=dict)
    asked: list[tuple[float, str]] = field(default_factory=list)


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Index]:
    """A PEP 503 index: CUDA 12.4's metapackage naming two components, the compilers'
    wheel and a component with a header."""
    served = _Index()
    wheels = {
        "cuda_toolkit-12.4.1-py3-none-any.whl": _wheel(
            "cuda_toolkit", "12.4.1", {}, f'Requires-Dist: {COMPILERS}==12.4.1; extra == "all"\n'
            f'Requires-Dist: {HEADERS}==10.3.5; extra == "all"\n'),
        "nvidia_fake_nvcc_cu12-12.4.1-py3-none-any.whl": _wheel(
            "nvidia_fake_nvcc_cu12", "12.4.1",
            {"nvidia/cuda_nvcc/include/own.h": b"#pragma once\n"}),
        "nvidia_fake_curand_cu12-10.3.5-py3-none-any.whl": _wheel(
            "nvidia_fake_curand_cu12", "10.3.5",
            {"nvidia/curand/include/curand_kernel.h": b"#pragma once\n",
             "nvidia/curand/lib/libcurand.so.10": b"\0" * 4096}),
    }
    served.files = wheels

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.asked.append((time.monotonic(), self.path))
            parts = [p for p in self.path.split("/") if p]
            if parts[:1] == ["simple"] and len(parts) == 2:
                project = parts[1]
                links = "".join(
                    f'<a href="/files/{n}#sha256={hashlib.sha256(d).hexdigest()}">{n}</a>'
                    for n, d in wheels.items()
                    if package_index.normal_name(n.split("-")[0]) == project)
                if not links:
                    self.send_error(404)
                    return
                self._answer(200, f"<html><body>{links}</body></html>".encode(),
                             "text/html")
                return
            data = wheels.get(parts[-1]) if parts[:1] == ["files"] else None
            if data is None:
                self.send_error(404)
                return
            wanted = self.headers.get("Range")
            if wanted:
                first, _, last = wanted.removeprefix("bytes=").partition("-")
                start = len(data) - int(last) if not first else int(first)
                end = len(data) - 1 if not first or not last else min(int(last), len(data) - 1)
                self._answer(206, data[max(start, 0):end + 1], "application/octet-stream",
                             {"Content-Range": f"bytes {max(start, 0)}-{end}/{len(data)}"})
                return
            self._answer(200, data, "application/octet-stream")

        def _answer(self, status: int, body: bytes, kind: str,
                    more: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (more or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    for variable, value in (("PIP_INDEX_URL", f"http://127.0.0.1:{httpd.server_address[1]}/simple"),
                            ("PIP_EXTRA_INDEX_URL", ""), ("PIP_FIND_LINKS", ""),
                            ("PIP_NO_INDEX", ""), ("PIP_TRUSTED_HOST", ""),
                            ("PIP_NO_CACHE_DIR", "1")):
        monkeypatch.setenv(variable, value)
    package_index.configured.cache_clear()
    try:
        yield served
    finally:
        package_index.configured.cache_clear()
        httpd.shutdown()
        httpd.server_close()


class _OneToolkit:
    """What prepare_toolkit asks of a matrix: the compilers' requirements of a release."""

    def wheel_requirements(self, toolkit: str) -> list[str]:
        return [f"{COMPILERS}=={toolkit}.*"]


def test_the_headers_land_beside_the_compilers_once(index: _Index,
                                                               tmp_path: Path) -> None:
    prepare_toolkit(_OneToolkit(), "12.4", tmp_path, InputLedger())  # type: ignore[arg-type]
    root = tmp_path / "toolkits" / "wheels-12.4"
    assert (root / "nvidia/curand/include/curand_kernel.h").is_file()
    assert (root / "nvidia/cuda_nvcc/include/own.h").is_file()
    assert not (root / "nvidia/curand/lib").exists()  # headers only
    assert (root / HEADERS_MARKER).is_file()
    assert not list(tmp_path.glob("toolkits/*partial*"))  # no staging left behind
    # read once
    assert [p for _, p in index.asked if p.rstrip("/").endswith(HEADERS)] == [
        f"/simple/{HEADERS}/"]
    index.asked.clear()
    prepare_toolkit(_OneToolkit(), "12.4", tmp_path, InputLedger())  # type: ignore[arg-type]
    assert index.asked == []  # prepared: nothing asked again


def test_a_failed_install_leaves_no_staging_and_no_headers_marker(index: _Index,
                                                                  tmp_path: Path) -> None:
    del index.files["nvidia_fake_nvcc_cu12-12.4.1-py3-none-any.whl"]
    with pytest.raises(EnvironmentUnavailable, match="pip could not install"):
        prepare_toolkit(_OneToolkit(), "12.4", tmp_path, InputLedger())  # type: ignore[arg-type]
    assert not list(tmp_path.glob("toolkits/*partial*"))
    assert not (tmp_path / "toolkits" / "wheels-12.4" / HEADERS_MARKER).exists()


def test_the_side_fetchs_failure_is_the_toolkits_one_line(index: _Index,
                                                         tmp_path: Path) -> None:
    del index.files["cuda_toolkit-12.4.1-py3-none-any.whl"]
    with pytest.raises(EnvironmentUnavailable, match=r"cuda-toolkit==12\.4"):
        prepare_toolkit(_OneToolkit(), "12.4", tmp_path, InputLedger())  # type: ignore[arg-type]
    assert not list(tmp_path.glob("toolkits/*partial*"))


def test_another_processs_staging_is_left_alone_and_a_killed_runs_removed(
        index: _Index, tmp_path: Path) -> None:
    """Stagings are told apart by age, not by a process id that may be another
    container's: a fresh one beside is another run's, at work; a day-old one is a leftover."""
    toolkits = tmp_path / "toolkits"
    working = toolkits / "wheels-12.4.headers.partial-4242"
    killed = toolkits / "wheels-12.4.headers-partial-4243"  # the name before this change
    for folder in (working, killed):
        (folder / "nvidia-fake").mkdir(parents=True)
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(killed, (day_ago, day_ago))
    prepare_toolkit(_OneToolkit(), "12.4", tmp_path, InputLedger())  # type: ignore[arg-type]
    assert working.is_dir()
    assert not killed.exists()
    assert (toolkits / "wheels-12.4" / "nvidia/curand/include/curand_kernel.h").is_file()
