"""The page's compiled template is kept in the tool's cache so a warm run does not compile
it again (issue 27, point 3); a damaged or unwritable cache is no cache, never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.record.results import load_results
from cudamatrix.reports.html import html_report

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "bench" / "evidence"  # the runs kept as evidence of past changes


def _render() -> str:
    info, results = load_results(EVIDENCE / "build-h100" / "results.json")
    return html_report(info, results)


def test_the_compiled_template_is_kept_and_a_damaged_one_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAMATRIX_CACHE", str(tmp_path))
    first = _render()
    (kept,) = (tmp_path / "templates").iterdir()
    kept.write_bytes(b"not jinja2 bytecode")
    assert _render() == first
    # Neither readable nor writable, as root too: a folder where the cached file goes
    # (a mode root ignores would leave the OSError branch of dump_bytecode untried).
    for stale in list((tmp_path / "templates").iterdir()):
        stale.unlink()
        stale.mkdir()
    assert _render() == first


def test_a_cache_that_cannot_be_made_is_no_cache(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    monkeypatch.setenv("CUDAMATRIX_CACHE", str(blocker))
    assert "CUDA compatibility report" in _render()
