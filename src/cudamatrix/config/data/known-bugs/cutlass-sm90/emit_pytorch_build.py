"""cutlass.emit.pytorch for a Hopper GEMM (NVIDIA/cutlass#1427), then built.

The extension CUTLASS's Python interface emits (kernel .cu, binding .cpp, setup.py) is
compiled the way torch.utils.cpp_extension's CUDAExtension compiles it: the include
folders and compile arguments are read from the emitted setup.py, nvcc gets PyTorch's
own flags and defines, read from that torch release's cpp_extension.py and
TorchConfig.cmake (kept beside its headers: [libraries.cutlass_torch] files), and the
PyTorch headers come from a torch wheel built for CUDA 12. Where the
emitted nvcc arguments name no target, the cell's arch stands in for
TORCH_CUDA_ARCH_LIST. The cell's toolkit gives nvcc and its host compiler. It exits
non-zero with the compiler's first error when the extension does not build; no GPU is
needed (the option registry is given the target instead of asking the driver).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

arch = os.environ.get("CUDAMATRIX_ARCH", "sm_90a")
cc = int(re.sub(r"\D", "", arch))
work = Path(os.environ.get("CUDAMATRIX_WORKDIR", "."))
out = work / "emitted"
nvcc = os.environ["CUDAMATRIX_NVCC"]
host = os.environ.get("CUDAMATRIX_HOST_COMPILER") or "g++"
headers = [p for p in os.environ.get("CUDAMATRIX_LIBRARY_INCLUDES", "").split(os.pathsep) if p]
toolkit = [p for p in os.environ.get("CUDAMATRIX_TOOLKIT_INCLUDES", "").split(os.pathsep) if p]

from cudamatrix.stages.frontends.torch_flags import TorchFlags, read_flags  # noqa: E402

# The torch package whose headers these are (.../torch/include): its files give the flags.
torch_package = next((Path(d).parent for d in headers if Path(d).name == "include"
                      and Path(d).parent.name == "torch"), None)
if torch_package is None:
    sys.exit(f"no torch headers among the library's include folders: {headers}")
torch_flags = read_flags(torch_package)
if not isinstance(torch_flags, TorchFlags):
    sys.exit(f"torch's CUDAExtension flags could not be read: {torch_flags.reason}")

import cutlass  # noqa: E402  (after the environment is read: the import is the slow part)
from cutlass.library_defaults import OptionRegistry  # noqa: E402

cutlass._option_registry = OptionRegistry(cc)
plan = cutlass.op.Gemm(element=cutlass.DataType.f16, layout=cutlass.LayoutType.RowMajor,
                       element_accumulator=cutlass.DataType.f32, cc=cc)
cutlass.emit.pytorch(plan.construct(), name="hopper_gemm", cc=cc, sourcedir=str(out), jit=False)

# What the emitted setup.py asks of CUDAExtension.
call = next(node for node in ast.walk(ast.parse((out / "setup.py").read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "CUDAExtension")
asked = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
args = asked.get("extra_compile_args", [])
nvcc_args = list(args.get("nvcc", [])) if isinstance(args, dict) else list(args)
cxx_args = list(args.get("cxx", [])) if isinstance(args, dict) else list(args)
if not any(a.startswith(("-gencode", "--generate-code", "-arch")) for a in nvcc_args):
    target = re.sub(r"^sm_", "", arch)
    nvcc_args.append(f"-gencode=arch=compute_{target},code=sm_{target}")
includes = [f"-I{d}" for d in [*asked.get("include_dirs", []), *headers,
                                sysconfig.get_paths()["include"], *toolkit]]
# torch.utils.cpp_extension's own flags and defines, as the release gives them (2.5's pip
# wheels: the old C++ ABI); the standard it adds where the emitted arguments name none.
defines = torch_flags.defines_for("hopper_gemm")
steps = [
    ("hopper_gemm_kernel.cu", [nvcc, "-ccbin", host, "-c", str(out / "hopper_gemm_kernel.cu"),
                               "-o", str(work / "kernel.o"), *includes,
                               *torch_flags.with_std([*torch_flags.nvcc, *nvcc_args, *defines])]),
    ("hopper_gemm.cpp", [host, "-c", str(out / "hopper_gemm.cpp"), "-o", str(work / "binding.o"),
                         "-fPIC", *includes, *torch_flags.with_std([*cxx_args, *defines])]),
]
report: dict[str, object] = {"cutlass": cutlass.__version__, "arch": arch,
                             "libraries": asked.get("libraries", []), "nvcc_args": nvcc_args,
                             "torch_nvcc_flags": list(torch_flags.nvcc), "torch_defines": defines}
for name, command in steps:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    report[f"{name}_s"] = round(time.monotonic() - started, 1)
    print(f"$ {' '.join(command[:6])} ...\n{done.stdout}{done.stderr}", file=sys.stderr)
    if done.returncode != 0:  # the compiler's own lines are in the log above
        first = next((ln.strip() for ln in (done.stdout + done.stderr).splitlines()
                      if ": error" in ln), f"exit status {done.returncode}")
        report["failed_step"] = name
        print(json.dumps(report))
        sys.exit(f"emitted extension did not build: {name}: {first}")
print(json.dumps(report))
