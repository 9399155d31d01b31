"""A compile key reads no input without bound (issue 57, point 7): a file that holds more
than its size says (`#include "/proc/self/pagemap"`: 623 s in the run's own process, before
its cell started) or one larger than any source is Unkeyable at once: its cell compiles,
is never cached, and leaves no up-to-date record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudamatrix.orchestrator import compile_cache
from cudamatrix.orchestrator.compile_cache import Unkeyable, folder_inputs


def test_a_virtual_file_is_unkeyable() -> None:
    for path in ("/proc/self/pagemap", "/proc/self/status"):
        info = os.stat(path)
        with pytest.raises(Unkeyable, match="more than its size says"):
            compile_cache._file_digest(path, (info.st_ino, info.st_size, info.st_mtime_ns))


def test_a_file_past_the_bound_is_not_read(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.h"
    big.write_bytes(b"x" * 4096)
    monkeypatch.setattr(compile_cache, "MAX_KEY_FILE_BYTES", 1024)
    compile_cache._file_digest.cache_clear()
    with pytest.raises(Unkeyable, match="4,096 bytes"):
        folder_inputs([tmp_path])


def test_an_ordinary_file_is_hashed_whole(tmp_path: Path) -> None:
    import hashlib

    (tmp_path / "k.cu").write_bytes(b"__global__ void k() {}\n" * 1000)
    found = folder_inputs([tmp_path])
    assert found[str(tmp_path / "k.cu")] == hashlib.sha256(
        b"__global__ void k() {}\n" * 1000).hexdigest()
