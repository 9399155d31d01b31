"""An index page or a find-links place is someone else's: a link that is no URL
(`<a href="http://[::1">`: urljoin's ValueError) or a find-links folder holding a link to
itself (pathlib's RuntimeError) was a traceback while a toolkit was prepared (issue 68,
item 12). The bad link is passed over, as pip passes over it; the good ones are listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.common.package_index import Indexes, listing

GOOD = "x-1.0-py3-none-any.whl"
BAD_HREFS = ["http://[::1", "http://[::1]:99999/x-2.0-py3-none-any.whl",
             "http://host:port/x-2.0-py3-none-any.whl"]


@pytest.mark.parametrize("href", BAD_HREFS)
def test_an_index_page_with_a_bad_link_lists_the_good_ones(tmp_path: Path, href: str) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "index.html").write_text(
        f'<a href="{href}">x-2.0-py3-none-any.whl</a><a href="{GOOD}#sha256=00">{GOOD}</a>')
    found = listing("x", Indexes(tmp_path.as_uri()))
    assert found.versions == ("1.0",)
    assert [f["filename"] for f in found.files] == [GOOD]


@pytest.mark.parametrize("href", BAD_HREFS)
def test_a_find_links_page_with_a_bad_link_lists_the_good_ones(tmp_path: Path,
                                                              href: str) -> None:
    page = tmp_path / "links.html"
    page.write_text(f'<a href="{href}">x-2.0-py3-none-any.whl</a><a href="{GOOD}">{GOOD}</a>')
    found = listing("x", Indexes("", find_links=(str(page),), no_index=True))
    assert [f["filename"] for f in found.files] == [GOOD]


def test_a_find_links_folder_linking_to_itself(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / GOOD).write_bytes(b"")
    (folder / "x-2.0-py3-none-any.whl").symlink_to("x-2.0-py3-none-any.whl")
    (folder / "loop").symlink_to(folder)
    for place in (str(folder), folder.as_uri(), str(folder / "loop")):
        found = listing("x", Indexes("", find_links=(place,), no_index=True))
        assert [f["filename"] for f in found.files] == [GOOD], place
