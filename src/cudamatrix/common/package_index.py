"""The package indexes as pip is told to ask them, for every download the tool makes itself
(a project's releases, an sdist, a wheel's headers read by byte ranges).

pip reads its index from ``$PIP_INDEX_URL`` or its configuration (``index-url``), and
more from ``extra-index-url``; a company mirror needs credentials, which pip takes from
the URL itself (``https://user:token@host/simple``), ``~/.netrc`` (or ``$NETRC``) or
keyring. A tool that asks PyPI alone where pip is pointed elsewhere fails on exactly the
machines that have a mirror, so every index request goes through here: the same indexes,
in pip's order (the index, then each extra one), the same credentials. A project's page is
PEP 691's JSON where the index serves it, else PEP 503's HTML (a ``file://`` index, an
older mirror); the projects' releases and files are those of every index that lists the
project.
"""

from __future__ import annotations

import base64
import functools
import html.parser
import json
import netrc
import os
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.tags import Tag, sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from ..errors import EnvironmentUnavailable, RunOutOfTime
from . import bounded_fetch, host_addresses

PYPI = "https://pypi.org/simple"
# The most of one answer read into memory: PyPI's largest project page (JSON) is a few
# megabytes; an endless page was a MemoryError.
MAX_PAGE_BYTES = 64 << 20
JSON_LISTING = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60


class IndexUnreachable(EnvironmentUnavailable):
    """No index answered a request (the network, a refusal, an unreadable page)."""


@dataclass(frozen=True)
class Indexes:
    """Where pip looks for wheels: the index it asks first and the extra ones (URLs,
    credentials included), its find-links (folders of files, or pages of links), whether
    --no-index turned the indexes off, and the hosts it trusts without a valid certificate."""

    primary: str
    extra: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    trusted_hosts: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        if self.no_index:
            return ()
        return tuple(dict.fromkeys((self.primary, *self.extra)))


def _pip_config() -> dict[str, str]:
    """pip's configuration as `pip config list` prints it (global, user, site files)."""
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for line in done.stdout.splitlines():
        key, equals, value = line.partition("=")
        if equals and not key.startswith(":env:"):  # the environment is read directly
            found[key.split(".", 1)[-1]] = value.strip().strip("'\"")
    return found


_TRUE = frozenset({"1", "true", "yes", "on", "y"})


@functools.cache
def configured() -> Indexes:
    """Where pip would look, each setting as pip reads it: its environment variable, else
    its configuration files: $PIP_INDEX_URL or `index-url` (else PyPI), `extra-index-url`,
    `find-links`, `no-index` and `trusted-host` (lists whitespace-separated)."""
    names = ("index-url", "extra-index-url", "find-links", "no-index", "trusted-host")

    def variable(name: str) -> str | None:
        return os.environ.get("PIP_" + name.upper().replace("-", "_"))

    config = _pip_config() if any(variable(n) is None for n in names) else {}

    def setting(name: str) -> str:
        said = variable(name)
        return said if said is not None else config.get(name, "")

    primary = setting("index-url") or PYPI
    return Indexes(primary.rstrip("/"), tuple(u.rstrip("/") for u in setting(
                       "extra-index-url").split()),
                   find_links=tuple(setting("find-links").split()),
                   no_index=setting("no-index").strip().lower() in _TRUE,
                   trusted_hosts=tuple(setting("trusted-host").split()))


def _trusted(url: str) -> bool:
    """Whether pip would take `url`'s host without checking its certificate."""
    parts = urllib.parse.urlsplit(url)
    for host in configured().trusted_hosts:
        name, _, port = host.partition(":")
        if parts.hostname == name and (not port or str(parts.port) == port):
            return True
    return False


@functools.cache
def _unverified_context() -> ssl.SSLContext:
    return ssl._create_unverified_context()  # pip's --trusted-host, said by the user


def _context(url: str) -> ssl.SSLContext | None:
    """The context an HTTPS `url` is asked with (None for any other scheme)."""
    if not url.startswith("https:"):
        return None
    return _unverified_context() if _trusted(url) else host_addresses.default_context()


def _netrc_login(host: str) -> tuple[str, str] | None:
    try:
        found = netrc.netrc(os.environ.get("NETRC")).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return (found[0], found[2] or "") if found else None


def _keyring_login(url: str, host: str) -> tuple[str, str] | None:
    try:
        import keyring  # optional, as it is for pip
    except ImportError:
        return None
    for service in (url, host):
        try:
            found = keyring.get_credential(service, None)
        except Exception:  # a keyring backend may raise anything
            return None
        if found is not None:
            return str(found.username), str(found.password)
    return None


def authorized(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A request of `url` with the credentials pip would send: those in the URL, else
    ~/.netrc's for its host, else keyring's; the URL itself without them."""
    parts = urllib.parse.urlsplit(url)
    login: tuple[str, str] | None = None
    if parts.username is not None:
        login = (urllib.parse.unquote(parts.username),
                 urllib.parse.unquote(parts.password or ""))
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    elif parts.scheme in ("http", "https") and parts.hostname:
        login = _netrc_login(parts.hostname) or _keyring_login(url, parts.hostname)
    request = urllib.request.Request(url, headers=dict(headers or {}))
    if login is not None:
        token = base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    return request


def get(url: str, headers: dict[str, str] | None = None, timeout: float = TIMEOUT_S
        ) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and body of `url`, asked as pip would ask it, at
    most MAX_PAGE_BYTES read (bounded_fetch)."""
    try:
        got = bounded_fetch.fetch(authorized(url, headers), MAX_PAGE_BYTES, "any index page",
                                  timeout, _handlers())
    except RunOutOfTime:
        raise  # the run's limit ended it: said so, not the index's fault
    except EnvironmentUnavailable as exc:
        raise IndexUnreachable(str(exc)) from None
    except ValueError as exc:  # no URL a request can be made of
        raise IndexUnreachable(f"{_shown(url)}: {exc}") from None
    return got.status, got.headers, got.body


def download(url: str, target: Path, max_bytes: int, bound: str, timeout: float
             ) -> bounded_fetch.Downloaded:
    """`url` streamed into `target` with pip's credentials, at most `max_bytes` (`bound`
    says what that is): bounded_fetch.download's errors."""
    try:
        request = authorized(url)
    except ValueError as exc:  # no URL a request can be made of
        raise bounded_fetch.FetchFailed(f"{_shown(url)}: {exc}") from None
    return bounded_fetch.download(request, target, max_bytes, bound, timeout, _handlers())


def _shown(url: str) -> str:
    """A URL as a message may show it: never its userinfo, whole (`https://TOKEN@host`, the
    form many private indexes issue, is a secret with no password part), as pip masks it."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects as pip follows them: the credentials go to the host they were meant for,
    never on to another one (urllib alone keeps the Authorization header)."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        made = super().redirect_request(req, fp, code, msg, headers, newurl)
        if made is not None:
            before, after = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
            if (before.scheme, before.hostname, before.port) != (
                    after.scheme, after.hostname, after.port):
                made.headers.pop("Authorization", None)
                made.unredirected_hdrs.pop("Authorization", None)
        return made


class _ContextPerHost(host_addresses.HTTPSHandler):
    """Each HTTPS request with its own host's context, a redirect's too: a trusted host that
    redirects elsewhere does not take its trust along (one context for the whole opener,
    chosen by the first URL, asked the redirect's host without checking its certificate)."""

    def context_for(self, url: str) -> ssl.SSLContext | None:
        return _context(url)


def _handlers() -> tuple[urllib.request.BaseHandler, ...]:
    """urllib's handlers with pip's rules for redirects and trusted hosts, each host looked
    up once (host_addresses.py): what bounded_fetch opens an index's URLs with."""
    return (_SameHostRedirects(), host_addresses.HTTPHandler(),
            _ContextPerHost(context=host_addresses.default_context()))


class _Anchors(html.parser.HTMLParser):
    """PEP 503's page: each <a> a file, its hash in the URL's fragment."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            self._open = {"url": found.get("href") or "", "filename": "",
                          "yanked": "data-yanked" in found}

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["filename"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            entry, self._open = self._open, None
            url, _, fragment = str(entry["url"]).partition("#")
            name, _, value = fragment.partition("=")
            entry["url"], entry["hashes"] = url, ({name: value} if value else {})
            entry["filename"] = str(entry["filename"]).strip()
            self.files.append(entry)


def _joined(base: str, href: str) -> str | None:
    """`href` of a page at `base` as an absolute URL, or None where it is none a request
    could be made to (``http://[::1``, a port that is no number): such a link is passed
    over, as pip passes over it, never a ValueError while a toolkit is prepared."""
    try:
        url = urllib.parse.urljoin(base, href)
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (read for its check: a port that is no number raises)
    except ValueError:
        return None
    return url


def _joined_all(base: str, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's files whose URLs join `base` (absolute), the others passed over."""
    kept = []
    for entry in files:
        url = _joined(base, str(entry.get("url", "")))
        if url is not None:
            kept.append({**entry, "url": url})
    return kept


def _folder_files(folder: str) -> list[dict[str, Any]]:
    """A find-links folder's files by name, each by its real path's URL; a link that
    loops (to itself, or round a chain) names no file and is passed over."""
    found: list[dict[str, Any]] = []
    for name in sorted(os.listdir(folder)):
        try:
            real = Path(folder, name).resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        found.append({"filename": name, "hashes": {}, "yanked": False, "url": real.as_uri()})
    return found


def _name_and_version(filename: str) -> tuple[str, str] | None:
    """A wheel's or an sdist's project (normalised) and version, by its file name."""
    try:
        if filename.endswith(".whl"):
            name, version = parse_wheel_filename(filename)[:2]
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return str(name), str(version)


def _version_of(filename: str) -> str | None:
    parsed = _name_and_version(filename)
    return parsed[1] if parsed else None


@dataclass(frozen=True)
class Listing:
    """A project's releases and files across every index that lists it; each file's URL
    absolute (and asked with its own host's credentials)."""

    versions: tuple[str, ...]
    files: tuple[dict[str, Any], ...]


def _page(index: str, project: str) -> tuple[list[str], list[dict[str, Any]]] | None:
    """One index's page of `project`: (versions, files), or None where it lists none."""
    url = f"{index}/{canonicalize_name(project)}/"
    asked = url
    if url.startswith("file:"):  # a folder of pages, as pip reads one: its index.html
        asked = url + "index.html"
        if not os.path.isfile(urllib.request.url2pathname(urllib.parse.urlsplit(asked).path)):
            return None
    status, headers, body = get(asked, {"Accept": f"{JSON_LISTING}, text/html;q=0.1"})
    if status == 404:
        return None
    if status != 200:
        raise IndexUnreachable(f"{_shown(url)}: HTTP {status}")
    if "json" in headers.get("content-type", ""):
        try:
            data = json.loads(body)
            files = [dict(f) for f in data["files"]]
        except (ValueError, KeyError, TypeError):
            raise IndexUnreachable(f"{_shown(url)}: an unreadable listing") from None
        versions = [str(v) for v in data.get("versions", [])]
    else:
        anchors = _Anchors()
        anchors.feed(body.decode(errors="replace"))
        files = anchors.files
        versions = []
    files = _joined_all(url, files)
    if not versions:  # PEP 503 and pre-PEP 700 indexes: the releases are the files'
        versions = [v for v in (_version_of(str(f.get("filename", ""))) for f in files) if v]
    return list(dict.fromkeys(versions)), files


def _linked(place: str, project: str) -> list[dict[str, Any]]:
    """The files of `project` one find-links place offers, as pip reads it: a folder (a path
    or a file:// URL) by its files' names, else a page (HTML) by its links' names."""
    wanted = canonicalize_name(project)
    folder = place
    if place.startswith("file:"):
        folder = urllib.request.url2pathname(urllib.parse.urlsplit(place).path)
    if "://" not in place or place.startswith("file:"):
        if os.path.isdir(folder):
            return [entry for entry in _folder_files(folder)
                    if _project_of(str(entry["filename"])) == wanted]
        if not os.path.isfile(folder):
            return []  # pip passes over a find-links place that is not there (or a loop)
        place = Path(folder).resolve().as_uri()
    status, _, body = get(place, {"Accept": "text/html"})
    if status != 200:
        raise IndexUnreachable(f"{_shown(place)}: HTTP {status}")
    anchors = _Anchors()
    anchors.feed(body.decode(errors="replace"))
    found = _joined_all(place, anchors.files)
    for entry in found:
        entry["filename"] = entry["filename"] or entry["url"].rsplit("/", 1)[-1]
    return [entry for entry in found if _project_of(str(entry["filename"])) == wanted]


def _project_of(filename: str) -> str | None:
    parsed = _name_and_version(filename)
    return parsed[0] if parsed else None


def listing(project: str, indexes: Indexes | None = None) -> Listing:
    """`project` as every configured index and find-links place lists it; IndexUnreachable
    where none answers, an empty listing where they answer but none lists it."""
    indexes = indexes or configured()
    versions: list[str] = []
    files: list[dict[str, Any]] = []
    failures: list[str] = []
    answered = False
    for index in indexes.all():
        try:
            page = _page(index, project)
        except IndexUnreachable as exc:
            failures.append(str(exc))
            continue
        answered = True
        if page is not None:
            versions += page[0]
            files += page[1]
    for place in indexes.find_links:
        try:
            linked = _linked(place, project)
        except IndexUnreachable as exc:
            failures.append(str(exc))
            continue
        answered = True
        files += linked
        versions += [v for v in (_version_of(str(f["filename"])) for f in linked) if v]
    if not answered:
        raise IndexUnreachable("; ".join(failures) or "no package index configured (pip's "
                                                       "--no-index, and no find-links)")
    return Listing(tuple(dict.fromkeys(versions)), tuple(files))


@functools.cache
def installable_tags() -> frozenset[Tag]:
    """The wheel tags this Python installs, as pip would choose among a project's wheels:
    computed once (sys_tags asks the interpreter and the C library for ~1,000 tags; a
    first run asked for them anew for every project it looked up)."""
    return frozenset(sys_tags())


def normal_name(name: str) -> str:
    """A project's name as the simple API spells it (PEP 503)."""
    return str(canonicalize_name(name))
