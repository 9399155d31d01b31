"""A Debian archive of the tests' own, on 127.0.0.1: a throwaway GnuPG key that clearsigns
its InRelease, a Packages.xz and a .deb of nvidia-cuda-toolkit whose nvcc says when it was
run, and a server that answers what a test gives it for each path (or an endless body),
keeping the paths it was asked. What a man in the middle of a plain-http mirror can do,
done for real: only the key is not Debian's."""

from __future__ import annotations

import hashlib
import http.server
import lzma
import shutil
import subprocess
import tempfile
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

INDEX = "non-free/binary-amd64/Packages.xz"
NVCC = "usr/lib/nvidia-cuda-toolkit/bin/nvcc"
VERSION = "11.8.89~11.8.0-5~deb12u1"


def needs_tools() -> None:
    missing = [tool for tool in ("gpg", "gpgv", "gpgconf", "dpkg-deb") if not shutil.which(tool)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt-get install gpg gpgv dpkg)")


@dataclass
class Signer:
    """A throwaway key in a GnuPG home of its own: `keyring` is its public key, as gpgv
    reads a keyring."""

    home: Path
    keyring: Path

    def clearsign(self, text: bytes) -> bytes:
        done = subprocess.run(["gpg", "--batch", "--homedir", str(self.home), "--clearsign",
                               "--digest-algo", "SHA256"], input=text, capture_output=True,
                              check=True)
        return done.stdout


@contextmanager
def throwaway_signer() -> Iterator[Signer]:
    """A new key (ed25519, no passphrase) in a short-pathed home (gpg-agent's socket path
    must fit a sockaddr), its agent stopped and its home removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="gpg-", dir="/tmp"))
    home.chmod(0o700)
    try:
        subprocess.run(["gpg", "--batch", "--homedir", str(home), "--passphrase", "",
                        "--quick-gen-key", "cudamatrix test <archive@test.invalid>", "ed25519",
                        "sign", "never"], capture_output=True, check=True)
        keyring = home / "keyring.gpg"
        keyring.write_bytes(subprocess.run(["gpg", "--batch", "--homedir", str(home),
                                            "--export"], capture_output=True,
                                           check=True).stdout)
        yield Signer(home, keyring)
    finally:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"],
                       capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)


def nvcc_deb(folder: Path, marker: Path, said: str) -> bytes:
    """A .deb of nvidia-cuda-toolkit whose nvcc touches `marker` when run and prints `said`
    (as nvcc --version prints its release)."""
    root = folder / "deb"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(textwrap.dedent(f"""\
        Package: nvidia-cuda-toolkit
        Version: {VERSION}
        Architecture: amd64
        Maintainer: test <archive@test.invalid>
        Description: a test's nvcc
        """))
    nvcc = root / NVCC
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(f"#!/bin/sh\ntouch '{marker}'\necho '{said}'\n")
    nvcc.chmod(0o755)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root),
                    str(folder / "built.deb")], capture_output=True, check=True)
    data = (folder / "built.deb").read_bytes()
    shutil.rmtree(root)
    (folder / "built.deb").unlink()
    return data


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def packages_xz(deb: bytes, filename: str) -> tuple[bytes, bytes]:
    """A Packages index naming `deb` at `filename`: (the index, its .xz)."""
    text = textwrap.dedent(f"""\
        Package: nvidia-cuda-toolkit
        Version: {VERSION}
        Architecture: amd64
        Filename: {filename}
        Size: {len(deb)}
        SHA256: {sha256(deb)}

        """).encode()
    return text, lzma.compress(text, format=lzma.FORMAT_XZ)


def release_text(packages: bytes, packed: bytes) -> bytes:
    """An InRelease's text (unsigned) listing the index and its .xz by SHA-256 and size."""
    return textwrap.dedent(f"""\
        Origin: Debian
        Suite: oldstable
        Codename: bookworm
        SHA256:
         {sha256(packages)} {len(packages):>16} {INDEX.removesuffix('.xz')}
         {sha256(packed)} {len(packed):>16} {INDEX}
        """).encode()


Body = bytes | Callable[[], Iterator[bytes]]


@dataclass
class Archive:
    """The server's answers by path below the archive's root, and the paths asked."""

    answers: dict[str, Body] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    url: str = ""


@contextmanager
def served(archive: Archive) -> Iterator[Archive]:
    """`archive` answered on 127.0.0.1 (a random port) while the block runs: a path it
    lacks is a 404; a callable answer is streamed without a length, block by block, until
    it ends or the client goes."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.removeprefix("/debian/")
            archive.asked.append(path)
            body = archive.answers.get(path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            try:
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.end_headers()
                    for block in body():
                        self.wfile.write(block)
            except OSError:  # the client stopped reading: as it should
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    archive.url = f"http://127.0.0.1:{server.server_address[1]}/debian"
    try:
        yield archive
    finally:
        server.shutdown()
        server.server_close()


def endless(block: bytes = b"A" * (1 << 20), most: int = 64 << 20) -> Callable[[], Iterator[bytes]]:
    """A body that goes on: block after block, `most` bytes at the most (so that the code
    before the fix, which read it whole, ends too)."""

    def blocks() -> Iterator[bytes]:
        for _ in range(most // len(block)):
            yield block

    return blocks


def without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.delenv("NO_PROXY", raising=False)
