"""Each host's addresses looked up once a run, one lookup at a time, for every HTTP(S)
request the tool makes itself (package indexes, Debian's archive).

A first run asks the same two or three hosts hundreds of times (a toolkit's components'
headers are read by byte ranges, eight at a time), and Python looks a host up again for
every connection. On a machine whose resolver drops queries that arrive together (seen on
this project's CI machines; common behind a NAT's connection tracking), glibc waits its
5 s timeout and asks again: eight requests of a toolkit's headers stalled 5.0 s together,
the longest wait before a first run's first compile. Asked once per host and port, under
a lock, such stalls cannot line up; an entry is asked again after `KEPT_S`, or at once
where none of its addresses took a connection.
"""

from __future__ import annotations

import functools
import http.client
import socket
import ssl
import threading
import time
import urllib.request
from typing import Any

KEPT_S = 300.0
# A lookup that failed is said again for this long without asking: eight requests to a
# host that does not resolve would otherwise wait their turns at the lock, 5 s or more each.
FAILED_KEPT_S = 30.0

_Address = tuple[Any, ...]  # getaddrinfo's (family, type, proto, canonname, sockaddr)
_known: dict[tuple[str, int], tuple[float, list[_Address] | OSError]] = {}
_lookup = threading.Lock()


def _kept(key: tuple[str, int]) -> list[_Address] | OSError | None:
    found = _known.get(key)
    if found is None:
        return None
    lasts = FAILED_KEPT_S if isinstance(found[1], OSError) else KEPT_S
    return found[1] if time.monotonic() - found[0] < lasts else None


def addresses(host: str, port: int) -> list[_Address]:
    """`host`'s stream addresses for `port`, as socket.create_connection would try them.
    A kept answer is read without the lock; lookups take it, one at a time."""
    key = (host, port)
    found = _kept(key)
    if found is None:
        with _lookup:
            found = _kept(key)
            if found is None:
                try:
                    found = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
                except OSError as exc:
                    found = exc
                _known[key] = (time.monotonic(), found)
    if isinstance(found, OSError):
        raise found
    return found


@functools.cache
def default_context() -> ssl.SSLContext:
    """The one verifying TLS context of this process's requests. urllib makes a new one per
    request where none is given (and from Python 3.12 per handler), each loading the
    system's certificates again (34 ms of CPU): a first run's hundreds of ranged header
    reads spent most of the run process's CPU there. Made as urllib makes it (Python's
    default HTTPS context, HTTP/1.1 by ALPN), so SSL_CERT_FILE and the like mean what they
    meant; read once, when first used."""
    context = ssl._create_default_https_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def forget(host: str, port: int) -> None:
    with _lookup:
        _known.pop((host, port), None)


def connect(address: tuple[str, int], timeout: float | None = None,
            source_address: tuple[str, int] | None = None, *_: Any, **__: Any
            ) -> socket.socket:
    """socket.create_connection's work with the looked-up addresses kept: each tried in
    order; where none connects, the host is looked up again next time."""
    host, port = address
    failure: OSError | None = None
    for family, kind, proto, _name, where in addresses(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(where)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    forget(host, port)
    raise failure or OSError(f"{host}: no address to connect to")


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class HTTPHandler(urllib.request.HTTPHandler):
    """urllib's HTTP with the kept addresses."""

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPConnection, req)


class HTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's HTTPS with the kept addresses; `context_for` gives each request's TLS
    context by its URL (None: the handler's own)."""

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req, context=self.context_for(req.full_url))

    def context_for(self, url: str) -> Any:
        return self._context  # type: ignore[attr-defined]

