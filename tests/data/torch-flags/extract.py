"""Writes the parts of a torch release's cpp_extension.py that torch_flags.py reads, as
the release has them (its COMMON_NVCC_FLAGS, BuildExtension's methods that add flags,
CUDAExtension), and its TorchConfig.cmake's line with the C++ ABI, for the unit tests:

    python tests/data/torch-flags/extract.py \
        ~/.cache/cudamatrix/libraries/torch-2.5.1-headers/torch 2.5.1
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

METHODS = ("build_extensions", "_define_torch_extension_name", "_add_gnu_cpp_abi_flag")


def main(package: Path, version: str) -> None:
    text = (package / "utils" / "cpp_extension.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    parts = [f"# torch {version}: torch/utils/cpp_extension.py, the parts torch_flags.py "
             "reads (tests/data/torch-flags/extract.py)"]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "COMMON_NVCC_FLAGS" for t in node.targets):
            parts.append(ast.get_source_segment(text, node) or "")
        elif isinstance(node, ast.ClassDef) and node.name == "BuildExtension":
            parts.append("class BuildExtension:")
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in METHODS:
                    parts.append("    " + (ast.get_source_segment(text, item, padded=True)
                                           or "").lstrip())
        elif isinstance(node, ast.FunctionDef) and node.name == "CUDAExtension":
            parts.append(ast.get_source_segment(text, node) or "")
    out = Path(__file__).parent
    (out / f"torch-{version}.cpp_extension.py.txt").write_text("\n\n".join(parts) + "\n")
    config = (package / "share" / "cmake" / "Torch" / "TorchConfig.cmake").read_text()
    abi = [line for line in config.splitlines() if "_GLIBCXX_USE_CXX11_ABI" in line]
    (out / f"torch-{version}.TorchConfig.cmake").write_text(
        f"# torch {version}: the lines of TorchConfig.cmake that name the C++ ABI\n"
        + "\n".join(abi) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
