"""One reader of the network, common/bounded_fetch.py (issue 79, "a bounded reader"): every
answer read there within the bound its caller gives, and no module opens a URL or reads
an answer around it."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import cudamatrix
from cudamatrix.common import bounded_fetch
from debian_archive import Archive, endless, served, without_proxy

PACKAGE = Path(cudamatrix.__file__).parent
READER = "common/bounded_fetch.py"
# What opens a URL or reads an HTTP answer: urllib's openers, http.client's connections and
# answers, and the HTTP clients of PyPI; `do_open` is urllib's handlers' own.
OPENING = {"urlopen", "build_opener", "urlretrieve", "OpenerDirector", "getresponse",
           "HTTPConnection", "HTTPSConnection", "do_open", "request"}
CLIENTS = {"requests", "httpx", "urllib3", "aiohttp", "pycurl", "http.client", "socket"}
PROGRAMS = {"curl", "wget"}
# host_addresses.py is urllib's transport, not a reader: its connections reach the hosts
# at their kept addresses (`do_open` with them) and read no answer; the answers its
# handlers open are read by bounded_fetch alone.
TRANSPORT = {"common/host_addresses.py": {"do_open", "http.client", "socket"},
             # Unix sockets between the run and its own cell servers (a path in the
             # run's own folder), never the network.
             "orchestrator/executors/gpus.py": {"socket"},
             "orchestrator/executors/local.py": {"socket"},
             "stages/runtime/forkserver.py": {"socket"},
             "stages/runtime/gpu_server.py": {"socket"}}


@pytest.fixture
def archive(monkeypatch: pytest.MonkeyPatch) -> Iterator[Archive]:
    without_proxy(monkeypatch)
    with served(Archive()) as made:
        yield made


def test_an_answer_past_its_bound_is_refused(archive: Archive, tmp_path: Path) -> None:
    archive.answers.update({"said": b"x" * 2000, "endless": endless(b"x" * 1000, 1 << 20),
                            "fits": b"x" * 1000})
    for path in ("said", "endless"):  # a length said up front, and none said
        with pytest.raises(bounded_fetch.AnswerRefused,
                           match=f"/{path}: an answer over 1000 bytes, more than a test's"):
            bounded_fetch.fetch(f"{archive.url}/{path}", 1000, "a test's bound", 10)
        target = tmp_path / path
        with pytest.raises(bounded_fetch.AnswerRefused, match="more than a test's bound"):
            bounded_fetch.download(f"{archive.url}/{path}", target, 1000, "a test's bound", 10)
        assert not target.exists()  # nothing half-written is left
    assert bounded_fetch.fetch(f"{archive.url}/fits", 1000, "x", 10).body == b"x" * 1000
    got = bounded_fetch.download(f"{archive.url}/fits", tmp_path / "fits", 1000, "x", 10)
    assert got.size == 1000 and (tmp_path / "fits").read_bytes() == b"x" * 1000


def test_no_answer_is_one_line(archive: Archive, tmp_path: Path) -> None:
    assert bounded_fetch.fetch(f"{archive.url}/missing", 10, "x", 10).status == 404
    with pytest.raises(bounded_fetch.FetchFailed, match="missing: HTTP 404"):
        bounded_fetch.download(f"{archive.url}/missing", tmp_path / "m", 10, "x", 10)
    with pytest.raises(bounded_fetch.FetchFailed, match="Connection refused") as failed:
        bounded_fetch.fetch("http://127.0.0.1:9/x", 10, "x", 10)
    assert "\n" not in str(failed.value)


def _program(word: str) -> str:
    """The program a string names where it starts a command: `/usr/bin/curl`, `curl -s URL`
    and `curl` all name curl."""
    first = word.strip().split(" ", 1)[0]
    return first.rpartition("/")[2]


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "config/data" not in path.as_posix():
            yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def bypasses(sources: Iterator[tuple[str, ast.Module]]) -> list[str]:
    """Where a module opens a URL, reads an HTTP answer or imports an HTTP client around the
    bounded reader, as ``path:line: what``."""
    found = []
    for where, tree in sources:
        if where == READER:
            continue
        allowed = TRANSPORT.get(where, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                name = called.rpartition(".")[2]
                # `request` only as an HTTP client's (requests.request, http.client's
                # connection.request), not a method of that name on anything else.
                if name in OPENING - allowed and (name != "request" or called.startswith(
                        ("requests.", "httpx.", "urllib3."))):
                    found.append(f"{where}:{node.lineno}: calls {called}")
            elif isinstance(node, ast.Import | ast.ImportFrom):
                modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                           else [node.module or ""])
                for module in modules:
                    client = module if module in CLIENTS else module.split(".")[0]
                    if client in CLIENTS - allowed:
                        found.append(f"{where}:{node.lineno}: imports {module}")
                if isinstance(node, ast.ImportFrom):
                    found += [f"{where}:{node.lineno}: imports {alias.name}"
                              for alias in node.names if alias.name in OPENING - allowed]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    _program(node.value) in PROGRAMS):
                found.append(f"{where}:{node.lineno}: runs {node.value}")
    return found


def test_no_module_reads_the_network_around_the_bounded_reader() -> None:
    assert bypasses(_sources()) == []


BYPASSES = {
    "urllib's urlopen read whole": """
        import urllib.request
        def page(url):
            with urllib.request.urlopen(url) as answer:
                return answer.read()
        """,
    "an opener of one's own": """
        from urllib.request import build_opener
        def page(url):
            return build_opener().open(url).read()
        """,
    "an HTTP client from PyPI": """
        import requests
        def page(url):
            return requests.get(url).content
        """,
    "http.client by hand": """
        import http.client
        def page(host):
            connection = http.client.HTTPSConnection(host)
            connection.request("GET", "/")
            return connection.getresponse().read()
        """,
    "curl run for it": """
        import subprocess
        def page(url):
            return subprocess.run(["curl", url], capture_output=True).stdout
        """,
    "curl named by its path": """
        import subprocess
        def page(url):
            return subprocess.run(["/usr/bin/curl", url], capture_output=True).stdout
        """,
    "wget in a shell's line": """
        import os
        def page(url):
            return os.popen("wget -qO- " + url).read()
        """,
    "a socket of one's own": """
        import socket
        def page(host):
            return socket.create_connection((host, 80)).recv(1 << 30)
        """,
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_a_bypass_in_a_scratch_module_is_found(name: str) -> None:
    """The walk is shown to fail: each bypass, put in a module of its own, is named."""
    tree = ast.parse(textwrap.dedent(BYPASSES[name]))
    assert bypasses(iter([("providers/scratch.py", tree)])) != [], name
