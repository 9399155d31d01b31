"""A library's `headers_from` wheels (cutlass_torch's torch 2.5.1) keep their include
folders and the `files` a build reads its flags from (torch's cpp_extension.py and
TorchConfig.cmake: the known-bug case cutlass-sm90/emit-pytorch-build), read from the
index's wheel without its libraries; a change of `files` extracts them again."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudamatrix.common import package_index
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.options import RunOptions
from cudamatrix.providers.wheels import wheel_headers

FILES = ("torch/utils/cpp_extension.py", "torch/share/cmake/Torch/TorchConfig.cmake")


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    """A wheel of `members` with its RECORD (each member's SHA-256, as pip writes it)."""
    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{n},sha256={digest(d)},{len(d)}\n" for n, d in members.items())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("torch-2.5.1.dist-info/RECORD", record)
    return path


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A file:// index (as pip reads one) serving one torch wheel: headers, the two
    files, and a library that must never be extracted."""
    folder = tmp_path / "simple" / "torch"
    folder.mkdir(parents=True)
    name = "torch-2.5.1-py3-none-any.whl"
    _wheel(folder / name, {
        "torch/include/torch/extension.h": b"#pragma once\n",
        "torch/include/torch/csrc/api/include/torch/all.h": b"#pragma once\n",
        "torch/utils/cpp_extension.py": b"COMMON_NVCC_FLAGS = ['--expt-relaxed-constexpr']\n",
        "torch/share/cmake/Torch/TorchConfig.cmake":
            b'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")\n',
        "torch/share/cmake/Torch/TorchConfigVersion.cmake": b"# not asked for\n",
        "torch/lib/libtorch_cuda.so": b"\0" * 4096,
    })
    (folder / "index.html").write_text(f'<html><body><a href="{name}">{name}</a></body></html>')
    for variable, value in (("PIP_INDEX_URL", (tmp_path / "simple").as_uri()),
                            ("PIP_EXTRA_INDEX_URL", ""), ("PIP_FIND_LINKS", ""),
                            ("PIP_NO_INDEX", ""), ("PIP_TRUSTED_HOST", "")):
        monkeypatch.setenv(variable, value)
    package_index.configured.cache_clear()
    yield tmp_path
    package_index.configured.cache_clear()


def test_the_files_a_build_reads_are_kept_beside_the_headers(index: Path) -> None:
    target = index / "cache" / "cutlass_torch-3.4.1-headers"
    folders = wheel_headers(target, ["torch==2.5.1"], InputLedger())
    assert str(target / "torch" / "include") in folders
    assert str(target / "torch" / "include" / "torch" / "csrc" / "api" / "include") in folders
    assert not (target / "torch" / "utils").exists()  # not asked for: not kept
    folders = wheel_headers(target, ["torch==2.5.1"], InputLedger(), FILES)
    for name in FILES:
        assert (target / name).is_file(), name
    assert not (target / "torch" / "lib").exists()
    assert not (target / "torch/share/cmake/Torch/TorchConfigVersion.cmake").exists()


def test_cutlass_torch_asks_for_torchs_flag_files() -> None:
    """The default matrix gives cutlass_torch the files torch_flags.read_flags reads."""
    from cudamatrix.stages.frontends.torch_flags import CPP_EXTENSION, TORCH_CONFIG

    library = load_matrix(RunOptions().matrix).libraries["cutlass_torch"]
    assert set(library.files) == {f"torch/{CPP_EXTENSION}", f"torch/{TORCH_CONFIG}"}
    assert any(r.startswith("torch==") for r in library.headers_from)
