"""The package indexes as pip is told to ask them (common/package_index.py, issue 50 point
6): a company mirror as the index, an extra index behind credentials (in the URL, in
~/.netrc), PEP 503's HTML pages and a file:// index, against real HTTP servers on this
machine; the tool's downloads (an sdist's release list, a wheel's header listing) go
through them."""

from __future__ import annotations

import base64
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.common.package_index import Indexes, IndexUnreachable, configured, listing

LOGIN = ("ci-bot", "s3cret")


class _Index:
    """One index: its pages by path, and whether it wants LOGIN."""

    def __init__(self, private: bool) -> None:
        self.pages: dict[str, tuple[str, bytes]] = {}
        self.private = private
        self.seen_authorization: list[str] = []


@pytest.fixture
def indexes() -> Iterator[tuple[str, _Index, str, _Index]]:
    """A public mirror and a private extra index, each a real server."""
    made = []
    for private in (False, True):
        index = _Index(private)

        class Handler(http.server.BaseHTTPRequestHandler):
            served = index

            def do_GET(self) -> None:
                said = self.headers.get("Authorization", "")
                self.served.seen_authorization.append(said)
                wanted = "Basic " + base64.b64encode(":".join(LOGIN).encode()).decode()
                if self.served.private and said != wanted:
                    self.send_response(401)
                    self.end_headers()
                    return
                if self.path not in self.served.pages:
                    self.send_response(404)
                    self.end_headers()
                    return
                kind, body = self.served.pages[self.path]
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        made.append((f"http://127.0.0.1:{httpd.server_address[1]}/simple", index, httpd))
    try:
        yield made[0][0], made[0][1], made[1][0], made[1][1]
    finally:
        for _, _, httpd in made:
            httpd.shutdown()
            httpd.server_close()


def _json_page(files: list[str], versions: list[str]) -> tuple[str, bytes]:
    return package_index.JSON_LISTING, json.dumps({
        "versions": versions,
        "files": [{"filename": f, "url": f"../../files/{f}", "hashes": {"sha256": "ab"}}
                  for f in files]}).encode()


def test_the_extra_index_is_asked_with_the_credentials_of_its_url(
        indexes: tuple[str, _Index, str, _Index]) -> None:
    public, mirror, private, extra = indexes
    mirror.pages["/simple/mylib/"] = _json_page(["mylib-1.0.tar.gz"], ["1.0"])
    extra.pages["/simple/mylib/"] = _json_page(["mylib-1.1+corp.tar.gz"], ["1.1+corp"])
    with_login = private.replace("http://", f"http://{LOGIN[0]}:{LOGIN[1]}@")
    found = listing("MyLib", Indexes(public, (with_login,)))
    assert found.versions == ("1.0", "1.1+corp")
    assert [f["url"] for f in found.files] == [
        f"{public.rsplit('/simple', 1)[0]}/files/mylib-1.0.tar.gz",
        f"{with_login.rsplit('/simple', 1)[0]}/files/mylib-1.1+corp.tar.gz"]
    assert mirror.seen_authorization == [""]  # the public one is told nothing
    assert extra.seen_authorization[-1].startswith("Basic ")


def test_netrc_gives_the_login_and_a_refusal_never_shows_a_password(
        indexes: tuple[str, _Index, str, _Index], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, private, extra = indexes
    extra.pages["/simple/mylib/"] = _json_page(["mylib-2.0.tar.gz"], ["2.0"])
    with pytest.raises(IndexUnreachable, match="HTTP 401"):
        listing("mylib", Indexes(private))
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {LOGIN[0]} password {LOGIN[1]}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert listing("mylib", Indexes(private)).versions == ("2.0",)
    wrong = private.replace("http://", "http://ci-bot:wrong-pass@")
    with pytest.raises(IndexUnreachable) as said:
        listing("mylib", Indexes(wrong))
    assert "wrong-pass" not in str(said.value) and "ci-bot" not in str(said.value)
    assert "http://***@127.0.0.1" in str(said.value)  # the whole userinfo, as pip masks it


def test_pep_503_html_and_a_file_index_give_versions_from_the_files(tmp_path: Path) -> None:
    page = tmp_path / "simple" / "mylib" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<html><body>\n<a href="../../files/mylib-3.0-py3-none-any.whl#sha256=cd">'
                    'mylib-3.0-py3-none-any.whl</a>\n<a href="../../files/mylib-2.9.tar.gz'
                    '#sha256=ef" data-yanked="">mylib-2.9.tar.gz</a>\n</body></html>\n')
    found = listing("mylib", Indexes((tmp_path / "simple").as_uri()))
    assert found.versions == ("3.0", "2.9")
    assert found.files[0]["hashes"] == {"sha256": "cd"} and found.files[1]["yanked"]
    assert found.files[0]["url"] == (tmp_path / "files" / "mylib-3.0-py3-none-any.whl").as_uri()
    # A project the file index lacks is simply not listed there.
    assert listing("other", Indexes((tmp_path / "simple").as_uri())).versions == ()


def test_pips_own_configuration_names_the_indexes(tmp_path: Path) -> None:
    """PIP_CONFIG_FILE's index-url and extra-index-url, read by a fresh interpreter as a
    run would read them (the answer is kept for the process's life)."""
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://mirror.example/simple/\n"
                      "extra-index-url = https://corp.example/simple https://b.example/s\n")
    env = {"PIP_CONFIG_FILE": str(config), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    said = subprocess.run([sys.executable, "-c", "from cudamatrix.common.package_index import "
                           "configured; print(configured().all())"],
                          capture_output=True, text=True, check=True, env=env).stdout
    assert said.strip() == str(("https://mirror.example/simple", "https://corp.example/simple",
                                "https://b.example/s"))
    env["PIP_INDEX_URL"] = "https://env.example/simple"
    said = subprocess.run([sys.executable, "-c", "from cudamatrix.common.package_index import "
                           "configured; print(configured().primary)"],
                          capture_output=True, text=True, check=True, env=env).stdout
    assert said.strip() == "https://env.example/simple"
    assert configured().primary  # this process's own answer: whatever pip says here
