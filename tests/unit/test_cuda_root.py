"""A toolkit laid out as a folder of links (providers/cuda_root.py) stays usable when the
path it was made through goes away: made through a test's own cache, a root in the shared
cache kept links into that test's removed folder, and every clang and CMake build on that
machine failed ("cannot find libdevice") until the folder was made again."""

from __future__ import annotations

import shutil
from pathlib import Path

from cudamatrix.providers.cuda_root import linked_cuda_root


def test_a_root_made_through_a_vanished_path_is_made_again(tmp_path: Path) -> None:
    real = tmp_path / "shared" / "toolkit"
    (real / "include").mkdir(parents=True)
    (real / "include" / "cuda.h").write_text("// header\n")
    (real / "nvvm" / "libdevice").mkdir(parents=True)
    through = tmp_path / "private"  # a test's own cache, reaching the shared one by a link
    through.mkdir()
    (through / "toolkit").symlink_to(real)
    root = tmp_path / "shared" / "clang" / "cuda-13.0"
    made = linked_cuda_root(root, [through / "toolkit" / "include"],
                            {"nvvm/libdevice": through / "toolkit" / "nvvm" / "libdevice"})
    assert (made / "nvvm" / "libdevice").resolve() == (real / "nvvm" / "libdevice")
    shutil.rmtree(through)  # the test's folder goes; the shared cache stays
    assert (made / "include" / "cuda.h").exists() and (made / "nvvm" / "libdevice").is_dir()
    # A root left with dangling links (as older versions made them) is made again.
    (made / "nvvm" / "libdevice").unlink()
    (made / "nvvm" / "libdevice").symlink_to(tmp_path / "gone")
    again = linked_cuda_root(root, [real / "include"],
                             {"nvvm/libdevice": real / "nvvm" / "libdevice"})
    assert (again / "nvvm" / "libdevice").is_dir()


def test_a_finished_root_over_a_wheel_with_init_py_is_kept(tmp_path: Path) -> None:
    """The CUDA 12 wheels' include folders hold an ``__init__.py``, which the root leaves
    out; the intactness check looked for it all the same, so every call made the root
    again and swapped it in under cells already building with it (CMake: "Could not find
    compiler set in environment variable CUDACXX" on 12.4 build cells, jobs=2)."""
    include = tmp_path / "wheel" / "nvidia" / "cuda_runtime" / "include"
    include.mkdir(parents=True)
    (include / "__init__.py").write_text("")
    (include / "cuda_runtime.h").write_text("// header\n")
    bin_dir = tmp_path / "wheel" / "bin"
    bin_dir.mkdir()
    root = tmp_path / "cache" / "cuda-home" / "cuda-12.4"
    made = linked_cuda_root(root, [include], {"bin": bin_dir})
    first = made.stat().st_ino
    again = linked_cuda_root(root, [include], {"bin": bin_dir})
    assert again.stat().st_ino == first  # the same folder, not a new one swapped in
    assert not list(root.parent.glob("*.stale-*")) and not list(root.parent.glob("*.partial-*"))
