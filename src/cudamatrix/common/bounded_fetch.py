"""Every answer the tool reads from the network, read here and nowhere else, each bounded.

A server, or anyone between the runner and a plain-http mirror, decides how long an
answer is: an endless InRelease read whole reached 2.7 GB and a MemoryError traceback
(issue 79, point 2). So no module opens a URL itself (tests/unit/test_fetch_bounds.py
walks the package for it): it asks `fetch` for an answer of at most so many bytes, or
`download` for a file of at most so many, and an answer past its bound is refused in one
line, having read one block past it at most. The bound is the caller's, because only it
knows what the answer is (a project's page, a signed release file, a .deb of a stanza's
Size); the words saying what the bound stands for are its too.
"""

from __future__ import annotations

import hashlib
import http.client
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EnvironmentUnavailable, without_credentials
from . import host_addresses
from .interruption import stop_if_out_of_time, time_left

# Read this much at a time: an answer's bound is checked after every block, and no
# buffer of the bound's size is made up front (urllib's read(n) makes one of n bytes).
BLOCK_BYTES = 1 << 20


class FetchFailed(EnvironmentUnavailable):
    """No answer: the network, a refused connection, a timeout, a name that does not
    resolve, a connection cut mid-answer."""


class AnswerRefused(EnvironmentUnavailable):
    """An answer that came but is not taken: past its bound, outside its signature, or not
    the bytes its hash says. Someone between here and the source may be answering instead
    of it, so what waited for it is not prepared (an error), never quietly skipped."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer read whole within its bound: status, headers (lower-case names), body
    (empty for an error status: its body is not read)."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Downloaded:
    """A download written whole: its size and SHA-256, taken as it was written (every
    download of the tool is checked against a hash it was given)."""

    size: int
    sha256: str


def shown(request: urllib.request.Request | str) -> str:
    """A request's URL as a message may show it: never its credentials."""
    url = request.full_url if isinstance(request, urllib.request.Request) else request
    return without_credentials(url)


def amount(size: int) -> str:
    """A bound in the words a message gives it: MiB where whole, else bytes."""
    return f"{size >> 20} MiB" if size >= 1 << 20 and size % (1 << 20) == 0 else f"{size} bytes"


def _opener(handlers: Sequence[urllib.request.BaseHandler]) -> urllib.request.OpenerDirector:
    """urllib's opener with `handlers` (package_index's: pip's credentials, redirects and
    trusted hosts), else this process's kept addresses and TLS context."""
    if not handlers:
        handlers = (host_addresses.HTTPHandler(),
                    host_addresses.HTTPSHandler(context=host_addresses.default_context()))
    return urllib.request.build_opener(*handlers)


def _past(request: urllib.request.Request | str, max_bytes: int, bound: str) -> AnswerRefused:
    return AnswerRefused(f"{shown(request)}: an answer over {amount(max_bytes)}, more than "
                         f"{bound}")


def _said_length(headers: Any) -> int | None:
    said = str(headers.get("Content-Length") or "").strip()
    return int(said) if said.isdigit() else None


def _next_block(answer: Any, size: int) -> bytes:
    """The answer's next bytes, at most `size`, as soon as some came (read1), never past
    the run's --run-timeout: the socket's timeout bounds each wait, not the answer, and a
    source sending a byte at a time kept a fetch going long past the run's limit."""
    time_left(1.0)  # RunOutOfTime where the run's limit is spent
    return bytes(getattr(answer, "read1", answer.read)(size))


def fetch(request: urllib.request.Request | str, max_bytes: int, bound: str, timeout: float,
          handlers: Sequence[urllib.request.BaseHandler] = ()) -> Answer:
    """The answer to `request`, its body at most `max_bytes` (`bound` says what that is, as
    "any index page"): AnswerRefused past it, FetchFailed where none came. An HTTP error
    status is an answer, its body unread."""
    try:
        with _opener(handlers).open(request, timeout=time_left(timeout)) as answer:
            said = _said_length(answer.headers)
            if said is not None and said > max_bytes:  # said up front: nothing read
                raise _past(request, max_bytes, bound)
            blocks, size = [], 0
            while block := _next_block(answer, min(BLOCK_BYTES, max_bytes + 1 - size)):
                blocks.append(block)
                size += len(block)
                if size > max_bytes:
                    raise _past(request, max_bytes, bound)
            status = getattr(answer, "status", None) or 200  # a file:// answer has none
            return Answer(int(status), {k.lower(): v for k, v in answer.headers.items()},
                          b"".join(blocks))
    except urllib.error.HTTPError as exc:
        return Answer(exc.code, {k.lower(): v for k, v in (exc.headers or {}).items()}, b"")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        stop_if_out_of_time()  # the run's --run-timeout ended it: said so, not the source
        raise FetchFailed(f"{shown(request)}: {exc}") from None


def download(request: urllib.request.Request | str, target: Path, max_bytes: int, bound: str,
             timeout: float, handlers: Sequence[urllib.request.BaseHandler] = ()
             ) -> Downloaded:
    """`request`'s answer streamed into `target`, at most `max_bytes` (`bound` says what
    that is): AnswerRefused past it, FetchFailed where none came or its status is not 200;
    on either, nothing is left at `target`."""
    digest = hashlib.sha256()
    size = 0
    try:
        with _opener(handlers).open(request, timeout=time_left(timeout)) as answer:
            status = getattr(answer, "status", None) or 200
            if status != 200:
                raise FetchFailed(f"{shown(request)}: HTTP {status}")
            said = _said_length(answer.headers)
            if said is not None and said > max_bytes:
                raise _past(request, max_bytes, bound)
            with target.open("wb") as out:
                while block := _next_block(answer, min(BLOCK_BYTES, max_bytes + 1 - size)):
                    size += len(block)
                    if size > max_bytes:
                        raise _past(request, max_bytes, bound)
                    digest.update(block)
                    out.write(block)
    except EnvironmentUnavailable:
        target.unlink(missing_ok=True)
        raise
    except urllib.error.HTTPError as exc:
        target.unlink(missing_ok=True)
        raise FetchFailed(f"{shown(request)}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        target.unlink(missing_ok=True)
        stop_if_out_of_time()  # the run's --run-timeout ended it: said so, not the source
        raise FetchFailed(f"{shown(request)}: {exc}") from None
    return Downloaded(size, digest.hexdigest())
