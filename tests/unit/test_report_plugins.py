"""A `cudamatrix.reports` plugin is someone else's code: a render that raises or returns
bytes is one line naming the plugin while the other reports are still written, and a file
name that is no plain name (`../escaped.csv`) is refused before anything is written outside
`--out` (issue 68, item 9). The plugin is a real installed distribution: a .dist-info
folder with its entry_points.txt on sys.path, found as pip's install would be."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import plugins
from cudamatrix.errors import UserError
from cudamatrix.record.results import RunInfo
from cudamatrix.reports import write_reports

_MODULE = """
from cudamatrix.reports.formats import ReportFormat

RAISES = ReportFormat("raises.txt", lambda run: 1 / 0)
BYTES = ReportFormat("bytes.txt", lambda run: b"not text")
ESCAPES = ReportFormat("../escaped.csv", lambda run: "a,b\\n")
ABSOLUTE = ReportFormat("/tmp/absolute.csv", lambda run: "a,b\\n")
GOOD = ReportFormat("good.txt", lambda run: "fine\\n")
"""


def install_plugin(site: Path, entries: dict[str, str]) -> None:
    """A distribution `toy-reports` in `site`: its module and its entry points."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "toy_reports.py").write_text(_MODULE)
    info = site / "toy_reports-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-reports\nVersion: 1.0\n")
    lines = "".join(f"{name} = toy_reports:{value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{plugins.REPORTS}]\n{lines}")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    plugins._installed.cache_clear()
    yield folder
    plugins._installed.cache_clear()


def _info() -> RunInfo:
    return RunInfo(started="", finished="", tier="pr", provider="wheels", host="",
                   tool_version="")


@pytest.mark.parametrize("entry", ["RAISES", "BYTES"])
def test_a_broken_render_is_one_line_and_the_others_are_written(site: Path, tmp_path: Path,
                                                                 entry: str) -> None:
    install_plugin(site, {"toy-broken": entry, "toy-good": "GOOD"})
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UserError, match="toy-broken") as raised:
        write_reports(out, _info(), [])
    assert "\n" not in str(raised.value)
    assert (out / "results.json").is_file() and (out / "good.txt").read_text() == "fine\n"
    assert (out / "COMPATIBILITY.md").exists() or (out / "junit.xml").is_file()


@pytest.mark.parametrize("entry", ["ESCAPES", "ABSOLUTE"])
def test_a_file_name_outside_out_is_refused(site: Path, tmp_path: Path, entry: str) -> None:
    install_plugin(site, {"toy-escapes": entry})
    out = tmp_path / "nested" / "out"
    out.mkdir(parents=True)
    with pytest.raises(UserError, match=r"toy-escapes.*plain file name"):
        write_reports(out, _info(), [])
    assert not (tmp_path / "nested" / "escaped.csv").exists()
    assert list(out.iterdir()) == []


def test_a_cli_report_with_a_broken_plugin_is_one_line(site: Path, tmp_path: Path,
                                                        read_cli) -> None:
    """`cudamatrix report` of a record: exit status 2, one line, no traceback."""
    from conftest import one_line_error

    install_plugin(site, {"toy-broken": "RAISES"})
    record = tmp_path / "results.json"
    record.write_text(textwrap.dedent("""\
        {"schema": "cudamatrix-results", "schema_version": 1,
         "run": {"started": "", "finished": "", "tier": "pr", "provider": "wheels",
                 "host": "", "tool_version": "0"}, "cells": []}
    """))
    run = read_cli("report", str(record), "--out", str(tmp_path / "out"))
    one_line_error(run, "toy-broken", "ZeroDivisionError")
    assert (tmp_path / "out" / "results.json").is_file()
