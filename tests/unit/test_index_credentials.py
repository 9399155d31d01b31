"""Credentials are never shown or sent further than pip would (issue 57, points 3 and 4): a
token given as the whole userinfo (`https://TOKEN@host/simple`, as many private indexes
issue them) is masked in every message, record and report, and the Authorization header is
dropped on a redirect to another host (two real servers on this machine)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from cudamatrix.common import package_index
from cudamatrix.common.package_index import Indexes, IndexUnreachable, listing
from cudamatrix.errors import (
    EnvironmentUnavailable,
    Failure,
    UserError,
    without_credentials,
    without_userinfo,
)

TOKEN = "pypi-AgEIcHlwaS5vcmcCJDk5OTk5OTk5"


@pytest.mark.parametrize("text", [
    f"https://{TOKEN}@private.example/simple",
    f"https://ci-bot:{TOKEN}@private.example:8443/simple",
    f"pip could not install x: Looking in indexes: https://{TOKEN}@host/simple | ERROR",
    # A password holding a raw `@` (pip reads userinfo up to the authority's last `@`): the
    # first `@` ended the match and left the password's rest shown.
    f"https://ci-bot:p@ss-{TOKEN}@private.example/simple",
    f"https://ci-bot:p@ss@{TOKEN}@private.example/simple?x=y#z",
])
def test_no_message_holds_a_token(text: str) -> None:
    shown = [package_index._shown(text)] if " " not in text else []
    for said in (str(UserError(text)), str(EnvironmentUnavailable(text)), str(Failure(text)),
                 str(IndexUnreachable(text)), without_credentials(text), *shown):
        assert TOKEN not in said and "***@" in said, said
    assert TOKEN not in without_userinfo(text)
    if " " not in text:
        assert without_userinfo(text).startswith("https://private.example") or \
            without_userinfo(text).startswith("https://host"), without_userinfo(text)


def _server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_token_stays_with_its_host_across_a_redirect() -> None:
    seen: list[str] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b'<a href="x-1.0-py3-none-any.whl">x-1.0-py3-none-any.whl</a>')

        def log_message(self, *args: object) -> None:
            pass

    other = _server(Elsewhere)
    target = next(other)
    asked: list[str] = []

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.headers.get("Authorization", ""))
            self.send_response(302)
            # Another host (localhost, not 127.0.0.1): as a CDN in front of files is.
            self.send_header("Location", target.replace("127.0.0.1", "localhost") + self.path)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    index = _server(Index)
    base = next(index)
    try:
        found = listing("x", Indexes(base.replace("http://", f"http://{TOKEN}@") + "/simple"))
    finally:
        for server in (index, other):
            next(server, None)
    assert found.versions == ("1.0",)
    assert asked and asked[0].startswith("Basic ")  # the index itself gets the token
    assert seen == [""]  # the other host never does
