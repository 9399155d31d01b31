"""A finding kept with its compile (CompileCache.add_finding, issue 82 item 7), on a real
cache folder: given to the run's own entry once, served with the compile, never written
over by a later look-up, and never written into a cache the run only reads
(--compile-cache-from's)."""

from __future__ import annotations

from pathlib import Path

from cudamatrix.orchestrator.compile_cache import CompileCache
from cudamatrix.stages.cell.result import StageResult

KEY = "cd" + "1" * 62
REFUSED = StageResult("compile", "failed", "cuda/std/mdspan: No such file or directory",
                      "k.cu(1): fatal error: cuda/std/mdspan: No such file or directory")
FIRST = {"release": "12.6", "toolkit": "12.6"}


def _served(cache: CompileCache, folder: Path) -> dict[str, object]:
    stage, _ = cache.restore(KEY, folder)
    assert stage is not None
    return stage.details


def test_a_finding_is_kept_once_with_its_compile(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "cache")
    assert cache.store(KEY, tmp_path / "cell", REFUSED)
    assert cache.add_finding(KEY, "since_release", FIRST)
    assert _served(cache, tmp_path / "again")["since_release"] == FIRST
    # A second look-up (another cell of the same compile) changes nothing kept.
    assert not cache.add_finding(KEY, "since_release", {"release": "13.0"})
    assert _served(cache, tmp_path / "third")["since_release"] == FIRST


def test_a_cache_only_read_is_given_no_finding(tmp_path: Path) -> None:
    served = CompileCache(tmp_path / "theirs")
    assert served.store(KEY, tmp_path / "cell", REFUSED)
    reader = CompileCache(tmp_path / "mine", read_from=[tmp_path / "theirs"])
    assert not reader.add_finding(KEY, "since_release", FIRST)
    assert "since_release" not in _served(served, tmp_path / "again")
    assert not CompileCache(tmp_path / "theirs", enabled=False).add_finding(
        KEY, "since_release", FIRST)
