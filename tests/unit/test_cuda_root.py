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
