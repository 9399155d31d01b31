"""Each host looked up once for the tool's own HTTP requests (common/host_addresses.py):
a resolver that drops queries arriving together stalled a first run's eight concurrent
header reads for glibc's 5 s timeout. Against a real HTTP server on this machine, named
`localhost`, with the lookups counted (and slowed, so that concurrent ones overlap)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cudamatrix.common import host_addresses, package_index
from cudamatrix.providers import debian


@pytest.fixture
def server() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every lookup of a name, each taking 0.2 s (the system's, IPv4 only)."""
    asked: list[str] = []
    looking = socket.getaddrinfo

    def counted(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(str(host))
        time.sleep(0.2)
        return [a for a in looking(host, port, *args, **kwargs) if a[0] == socket.AF_INET]

    monkeypatch.setattr(socket, "getaddrinfo", counted)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    host_addresses._known.clear()
    yield asked
    host_addresses._known.clear()


def test_concurrent_requests_to_one_host_look_it_up_once(server: int,
                                                         lookups: list[str]) -> None:
    url = f"http://localhost:{server}/simple/x/"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: package_index.get(url), range(16)))
    assert all(a[0] == 200 and a[2] == b"ok" for a in answers)
    assert lookups == ["localhost"]


def test_debians_archive_is_asked_the_same_way(server: int, lookups: list[str]) -> None:
    for _ in range(3):
        assert debian._fetch(f"http://localhost:{server}/dists/trixie/InRelease", 100,
                             "a test's bound") == b"ok"
    assert lookups == ["localhost"]


def test_a_host_that_stops_answering_is_looked_up_again(server: int,
                                                        lookups: list[str]) -> None:
    url = f"http://localhost:{server}/page"
    assert package_index.get(url)[2] == b"ok"
    # The kept address no longer takes connections (say the host moved): the request fails,
    # and the next one asks the resolver again rather than the dead address for 5 minutes.
    host_addresses._known[("localhost", server)] = (
        time.monotonic(), [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 9))])
    with pytest.raises(package_index.IndexUnreachable):
        package_index.get(url)
    assert package_index.get(url)[2] == b"ok"
    assert lookups == ["localhost", "localhost"]
