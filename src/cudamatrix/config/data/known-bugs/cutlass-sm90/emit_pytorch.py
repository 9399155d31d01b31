"""cutlass.emit.pytorch for a Hopper GEMM (NVIDIA/cutlass#1427), checked file by file.

CUTLASS's Python interface emits a PyTorch extension (kernel .cu, binding .cpp,
setup.py). Before CUTLASS 3.5 the sm90 output did not build: the Hopper epilogue
builder header was missing, the kernel Arguments were built in the pre-3.x flat form,
and setup.py neither targeted sm_90a nor linked libcuda. This script emits the
extension with the CUTLASS version under test for CUDAMATRIX_ARCH and checks each
of the three; it exits non-zero naming what is missing.

No GPU is needed: the option registry is given the target instead of asking the
driver for the device's compute capability.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

arch = os.environ.get("CUDAMATRIX_ARCH", "sm_90a")
cc = int(re.sub(r"\D", "", arch))
work = Path(os.environ.get("CUDAMATRIX_WORKDIR", "."))
out = work / "emitted"

import cutlass  # noqa: E402  (after the environment is read: the import is the slow part)
from cutlass.library_defaults import OptionRegistry  # noqa: E402

cutlass._option_registry = OptionRegistry(cc)
started = time.monotonic()
plan = cutlass.op.Gemm(element=cutlass.DataType.f16, layout=cutlass.LayoutType.RowMajor,
                       element_accumulator=cutlass.DataType.f32, cc=cc)
cutlass.emit.pytorch(plan.construct(), name="hopper_gemm", cc=cc, sourcedir=str(out), jit=False)
setup = (out / "setup.py").read_text()
kernel = (out / "hopper_gemm_kernel.cu").read_text()
checks = {
    "setup.py builds sm_90a code (--generate-code=arch=compute_90a)": "compute_90a" in setup,
    "setup.py links libcuda (libraries=['cuda'])": "libraries=['cuda']" in setup,
    "the kernel includes the Hopper epilogue builder":
        "cutlass/epilogue/collective/collective_builder.hpp" in kernel,
    "the kernel builds Arguments with nested mainloop/epilogue structs":
        re.search(r"\{M, N, K, L\},[^\n]*\n\s*\{\s*\n\s*A,", kernel) is not None,
}
missing = [name for name, ok in checks.items() if not ok]
print(json.dumps({"cutlass": cutlass.__version__, "arch": arch, "cc": cc,
                  "emit_s": round(time.monotonic() - started, 3),
                  "files": sorted(p.name for p in out.iterdir()), "checks": checks}))
if missing:
    sys.exit("emitted extension would not build for Hopper: " + "; ".join(missing))
