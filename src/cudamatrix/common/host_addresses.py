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

import http.client
import socket
import threading
import time
import urllib.request
from typing import Any

KEPT_S = 300.0

_Address = tuple[Any, ...]  # getaddrinfo's (family, type, proto, canonname, sockaddr)
_known: dict[tuple[str, int], tuple[float, list[_Address]]] = {}
_lookup = threading.Lock()


def addresses(host: str, port: int) -> list[_Address]:
    """`host`'s stream addresses for `port`, as socket.create_connection would try them."""
    key = (host, port)
    with _lookup:
        found = _known.get(key)
        if found is not None and time.monotonic() - found[0] < KEPT_S:
            return found[1]
        looked = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        _known[key] = (time.monotonic(), looked)
        return looked


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


def urlopen(url: str, timeout: float) -> Any:
    """urllib.request.urlopen of `url` with the kept addresses."""
    return urllib.request.build_opener(HTTPHandler(), HTTPSHandler()).open(url, timeout=timeout)
