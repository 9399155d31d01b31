"""Write N one-kernel cases (NVRTC, a run stage each) into a folder: many cells through one
GPU server, to see its memory after 25 cells and after all of them.

    python bench/evidence/gpu-server-h100/many.py FOLDER N
"""

from __future__ import annotations

import sys
from pathlib import Path

RUN = """  [variant.run]
  grid = [4]
  block = [256]
  args = [{{ name = "y", dtype = "float32", shape = [1024], output = true }},
          {{ name = "x", dtype = "float32", shape = [1024] }},
          {{ name = "n", dtype = "int32", value = 1024 }}]
  check = {{ y = "{i}.0 + x" }}
"""

root, count = Path(sys.argv[1]), int(sys.argv[2])
for i in range(count):
    case = root / f"k{i:03d}"
    case.mkdir(parents=True, exist_ok=True)
    (case / "k.cu").write_text(
        'extern "C" __global__ void k(float* y, const float* x, int n) {\n'
        f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = {i}.0f + x[i];\n"
        "}\n")
    (case / "case.toml").write_text(f'title = "k{i}"\n[[variant]]\nname = "v"\nsource = "k.cu"\n'
                                    f'frontend = "nvrtc"\nkernel = "k"\n' + RUN.format(i=i))
