"""HTTPS to a package index as the tool asks it (common/package_index.py): against a real
TLS server on this machine with a certificate made here by openssl. Its own certificate
authority (SSL_CERT_FILE) is taken, a host pip is told to trust is asked without checking,
any other is refused; and the system's certificates are loaded once per process, not once
per request (each load cost 34 ms of CPU: a first run's ranged header reads spent about
40 CPU seconds in them)."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import host_addresses, package_index
from cudamatrix.common.package_index import Indexes, IndexUnreachable

BODY = b"a page over TLS"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def _serve(certificate: tuple[Path, Path]) -> Iterator[str]:
    """An HTTPS server answering every GET with BODY; its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/to/"):  # a redirect to the URL after it
                self.send_response(302)
                self.send_header("Location", urllib.parse.unquote(self.path[4:]))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(*certificate)
    httpd.socket = served.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[str]:
    yield from _serve(certificate)


@pytest.fixture
def other_tls_server(certificate: tuple[Path, Path]) -> Iterator[str]:
    yield from _serve(certificate)


@pytest.fixture
def fresh_contexts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Contexts made anew for the test (and again after it, for the tests after); no proxy
    between the tool and the server on this machine."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    cached = [getattr(module, name) for module, name in (
        (host_addresses, "default_context"), (package_index, "_verifying_context"),
        (package_index, "_unverified_context"), (package_index, "configured"))
        if hasattr(module, name)]
    for made in cached:
        made.cache_clear()
    yield
    for made in cached:
        made.cache_clear()


def test_the_certificates_are_loaded_once_for_many_requests(
        tls_server: str, certificate: tuple[Path, Path], fresh_contexts: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    monkeypatch.setattr(package_index, "configured", lambda: Indexes(tls_server + "/simple"))
    loads: list[object] = []
    loading = ssl.SSLContext.load_default_certs

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(self)
        loading(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", counted)
    for piece in range(5):
        status, _, body = package_index.get(f"{tls_server}/piece/{piece}",
                                            {"Range": f"bytes={piece}-"})
        assert (status, body) == (200, BODY)
    assert len(loads) == 1


def test_a_certificate_nobody_vouches_for_is_refused_unless_its_host_is_trusted(
        tls_server: str, fresh_contexts: None, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-bundle.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    monkeypatch.setattr(package_index, "configured", lambda: Indexes(tls_server + "/simple"))
    with pytest.raises(IndexUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        package_index.get(f"{tls_server}/page")
    port = tls_server.rsplit(":", 1)[1]
    monkeypatch.setattr(package_index, "configured", lambda: Indexes(
        tls_server + "/simple", trusted_hosts=(f"127.0.0.1:{port}",)))
    assert package_index.get(f"{tls_server}/page")[2] == BODY
    # Trusting it never made the verifying context lax: another host is still refused.
    monkeypatch.setattr(package_index, "configured", lambda: Indexes(
        tls_server + "/simple", trusted_hosts=("127.0.0.2",)))
    with pytest.raises(IndexUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        package_index.get(f"{tls_server}/page")


def test_a_trusted_host_redirecting_elsewhere_does_not_take_its_trust_along(
        tls_server: str, other_tls_server: str, fresh_contexts: None,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-bundle.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    port = tls_server.rsplit(":", 1)[1]
    monkeypatch.setattr(package_index, "configured", lambda: Indexes(
        tls_server + "/simple", trusted_hosts=(f"127.0.0.1:{port}",)))
    to_itself = f"{tls_server}/to/" + urllib.parse.quote(f"{tls_server}/page", safe="")
    assert package_index.get(to_itself)[2] == BODY
    elsewhere = f"{tls_server}/to/" + urllib.parse.quote(f"{other_tls_server}/page", safe="")
    with pytest.raises(IndexUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
        package_index.get(elsewhere)
