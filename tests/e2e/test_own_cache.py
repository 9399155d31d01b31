"""The e2e lane's caches (tests/conftest.py: own_cache): a test's compile lands in its own cache
folder, not the machine's, and the next test starts without it."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import SHARED_CACHE, cudamatrix, write_case

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n'
SEEN: list[Path] = []


def _run(tmp_path: Path, name: str) -> dict[str, object]:
    if not (tmp_path / "c").exists():
        write_case(tmp_path / "c", "own", """
            title = "a kernel compiled in a test's own cache"
            [[variant]]
            name = "v"
            source = "k.cu"
            frontend = "nvrtc"
            kernel = "k"
        """, {"k.cu": KERNEL})
    run = cudamatrix("run", "--corpus", str(tmp_path / "c"), "--toolkit", "13.0", "--arch",
                     "sm_80", "--no-gpu", out=tmp_path / name)
    assert run.code == 0, run.output[-2000:]
    return run.cells()["own/v/13.0/sm_80"]


def test_first_compile_fills_this_tests_cache(tmp_path: Path) -> None:
    cache = Path(os.environ["CUDAMATRIX_CACHE"])
    assert cache != SHARED_CACHE and cache.is_relative_to(tmp_path.parent.parent)
    assert _run(tmp_path, "cold")["stages"][0]["details"].get("cache") != "hit"  # type: ignore[index]
    assert _run(tmp_path, "warm")["stages"][0]["details"].get("cache") == "hit"  # type: ignore[index]
    assert list((cache / "compile").rglob("*"))
    assert (cache / "toolkits").resolve() == (SHARED_CACHE / "toolkits").resolve()
    SEEN.append(cache)


def test_next_test_starts_without_it(tmp_path: Path) -> None:
    cache = Path(os.environ["CUDAMATRIX_CACHE"])
    assert cache not in SEEN and not list((cache / "compile").rglob("*"))
    assert _run(tmp_path, "cold")["stages"][0]["details"].get("cache") != "hit"  # type: ignore[index]
