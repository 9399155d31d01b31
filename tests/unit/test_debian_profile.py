"""Runs sharing one unpacked Debian nvcc through linked caches write one nvcc.profile: its
folders are named from nvcc's own folder ($(_HERE_)), not by each run's cache path, which
rewrote the profile under another run's running nvcc (found by CI: CUTLASS's host pass
then missed crt/host_runtime.h)."""

from __future__ import annotations

from pathlib import Path

from cudamatrix.providers.debian import nvcc_profile


def test_two_caches_sharing_the_tree_write_the_same_profile(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    nvcc_dir = shared / "debian" / "trixie-12.4" / "usr" / "lib" / "nvidia-cuda-toolkit" / "bin"
    nvcc_dir.mkdir(parents=True)
    include = shared / "toolkits" / "wheels-12.4" / "nvidia" / "cuda_nvcc" / "include"
    include.mkdir(parents=True)
    profiles = []
    for name in ("one", "two"):
        own = tmp_path / name
        own.mkdir()
        for folder in ("debian", "toolkits"):
            (own / folder).symlink_to(shared / folder)
        seen = own / "debian" / "trixie-12.4" / "usr" / "lib" / "nvidia-cuda-toolkit" / "bin"
        profiles.append(nvcc_profile(
            (str(own / "toolkits" / "wheels-12.4" / "nvidia" / "cuda_nvcc" / "include"),),
            (), seen))
    assert profiles[0] == profiles[1]
    assert '"-I$(_HERE_)/../../../../../../toolkits/wheels-12.4/nvidia/cuda_nvcc/include"' \
        in profiles[0]
    # Resolved from nvcc's folder, as nvcc resolves it, the path is the header folder.
    relative = profiles[0].split('"-I$(_HERE_)/')[1].split('"')[0]
    assert (nvcc_dir / relative).resolve() == include.resolve()


def test_a_path_inside_an_image_stays_absolute() -> None:
    said = nvcc_profile(("/opt/cudamatrix/toolkit/include",), (), None)
    assert '"-I/opt/cudamatrix/toolkit/include"' in said
