"""A component library's unversioned links (providers/wheels.py: unversioned_links) stay
whole when the cache is moved or copied: CI6 of this stop failed `-lcublas` because the
links pointed, by absolute path, into the folder a test cache had been seeded from, gone
since. Real files and links in a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from cudamatrix.providers.wheels import unversioned_links


def _library_tree(root: Path) -> Path:
    folder = root / "nvidia" / "cublas" / "lib"
    folder.mkdir(parents=True)
    (folder / "libcublas.so.12").write_bytes(b"\x7fELF cublas")
    (folder / "libcublasLt.so.12").write_bytes(b"\x7fELF cublasLt")
    return folder


def test_links_still_resolve_after_the_cache_is_copied_and_the_original_removed(
        tmp_path: Path) -> None:
    first = tmp_path / "first" / "wheels-12.4-lib-cublas"
    folder = _library_tree(first)
    unversioned_links(first / "links", [folder])
    copy = tmp_path / "copy" / "wheels-12.4-lib-cublas"
    shutil.copytree(first, copy, symlinks=True)
    shutil.rmtree(tmp_path / "first")
    assert (copy / "links" / "libcublas.so").read_bytes() == b"\x7fELF cublas"
    assert (copy / "links" / "libcublasLt.so").read_bytes() == b"\x7fELF cublasLt"


def test_a_dangling_link_from_an_earlier_cache_is_made_again(tmp_path: Path) -> None:
    target = tmp_path / "wheels-12.4-lib-cublas"
    folder = _library_tree(target)
    links = target / "links"
    links.mkdir()
    (links / "libcublas.so").symlink_to(tmp_path / "gone" / "libcublas.so.12")
    unversioned_links(links, [folder])
    assert (links / "libcublas.so").read_bytes() == b"\x7fELF cublas"


def test_the_components_a_builds_files_link(tmp_path: Path) -> None:
    """A build's own files name what it links (issue 61, point 1): CMake's imported targets
    (a static one too), a setup.py's libraries, a Makefile's -l; a host library of another
    name, or CUDA's runtime, asks for no component."""
    from cudamatrix.providers.wheels import build_components

    (tmp_path / "CMakeLists.txt").write_text(
        "target_link_libraries(x PRIVATE CUDA::cublas CUDA::cublasLt CUDA::cudart\n"
        "  CUDA::curand_static)\n")
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "setup.py").write_text('Extension("e", libraries=["cufft", "c10"])\n')
    (tmp_path / "Makefile").write_text("LDLIBS = -lcusparse -lm\n")
    (tmp_path / "notes.txt").write_text("CUDA::cusolver\n")  # no build file
    assert build_components(tmp_path) == {"cublas": "CUDA::cublas",
                                          "curand": "CUDA::curand_static",
                                          "cufft": "cufft", "cusparse": "-lcusparse"}
