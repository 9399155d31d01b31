"""causal-conv1d 1.7.0's and mamba-ssm 2.3.2.post1's CUDA extensions as cases (issue 69's
"done means"): their csrc fetched from their PyPI sdists at run time (the tool's own
`sdist:` source, nothing of theirs kept here), each case short, with the flags their
setup.py's CUDA branch gives (their `--threads 4` and gencode list left to the tool's
cells) and none of torch's own or Python's headers: the torch-extension frontend gives
those for each cell's torch release.

    python bench/evidence/torch-ext/real-world/cases.py CASES_FOLDER [--cache DIR]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from cudamatrix.config.sources import SourceSpec, fetch

# Both setup.py files' nvcc list (their CUDA branch), the same words in each.
SETUP_NVCC = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
              "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
              "--ptxas-options=-v", "-lineinfo"]


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


CAUSAL = f'''title = "causal-conv1d 1.7.0: its kernels and binding, as its setup.py builds them"

# The whole extension (setup.py's four sources), imported by torch on a GPU and its
# forward called: a depthwise causal convolution, compared with torch's conv1d.
[[variant]]
name = "extension"
frontend = "torch-extension"
source = "csrc/causal_conv1d_fwd.cu"
flags = {_toml_list(SETUP_NVCC)}
  [variant.options]
  sources = ["csrc/causal_conv1d_bwd.cu", "csrc/causal_conv1d_update.cu", "csrc/causal_conv1d.cpp"]
  extension = "causal_conv1d_cuda"
  cxx_flags = ["-O3"]
  call = "causal_conv1d_fwd"
  args = "(lambda x, w: (x, w, None, None, None, torch.empty_like(x), None, False))(torch.randn(2, 8, 64, device='cuda'), torch.randn(8, 4, device='cuda'))"
  result = "args[5]"
  expect = "torch.nn.functional.conv1d(args[0], args[1].unsqueeze(1), padding=3, groups=8)[..., :64]"
  rtol = 1e-4
  atol = 1e-5

# The update kernel and the binding alone (the cells without a GPU: compile and audit).
[[variant]]
name = "update"
frontend = "torch-extension"
source = "csrc/causal_conv1d_update.cu"
flags = {_toml_list(SETUP_NVCC)}
options = {{ sources = ["csrc/causal_conv1d.cpp"], extension = "causal_conv1d_cuda", cxx_flags = ["-O3"] }}
'''

# The selective scan (one state, B and C varying in time: (batch, groups, state, length))
# in closed form: x_l = sum over s <= l of exp(c_l - c_s) delta_s B_s u_s, with c the
# running sum of delta A; y = x C + D u.
SCAN_REFERENCE = ("(lambda u, dl, A, B, C, D: (torch.exp((dl * A).cumsum(-1)[..., :, None] "
                  "- (dl * A).cumsum(-1)[..., None, :]).tril() @ (dl * B[:, 0] * u)[..., None])"
                  "[..., 0] * C[:, 0] + D[:, None] * u)(*args[:6])")
SCAN_ARGS = ("(lambda d, n: (torch.randn(1, d, n, device='cuda'), torch.rand(1, d, n, "
             "device='cuda') * 0.5, -torch.rand(d, 1, device='cuda'), torch.randn(1, 1, 1, n, "
             "device='cuda'), torch.randn(1, 1, 1, n, device='cuda'), torch.randn(d, "
             "device='cuda'), None, None, False))(4, 32)")
MAMBA_SOURCES = ["csrc/selective_scan/selective_scan_fwd_fp16.cu",
                 "csrc/selective_scan/selective_scan_fwd_bf16.cu",
                 *(f"csrc/selective_scan/selective_scan_bwd_{t}_{k}.cu"
                   for t in ("fp32", "fp16", "bf16") for k in ("real", "complex")),
                 "csrc/selective_scan/selective_scan.cpp"]

MAMBA = f'''title = "mamba-ssm 2.3.2.post1: its selective scan, as its setup.py builds it"

# The forward kernel in fp32 alone (compile and audit: each arch's ptxas figures).
[[variant]]
name = "fwd-fp32"
frontend = "torch-extension"
source = "csrc/selective_scan/selective_scan_fwd_fp32.cu"
flags = {_toml_list([*SETUP_NVCC[:1], "-std=c++17", *SETUP_NVCC[1:], "-Icsrc/selective_scan"])}
options = {{ extension = "selective_scan_cuda", cxx_flags = ["-O3", "-std=c++17"] }}

# The forward kernel in fp32 and the extension's binding (selective_scan.cpp: torch's
# and Python's headers), to objects where only torch's headers are (no GPU, no link).
[[variant]]
name = "fwd-fp32-binding"
frontend = "torch-extension"
source = "csrc/selective_scan/selective_scan_fwd_fp32.cu"
flags = {_toml_list([*SETUP_NVCC[:1], "-std=c++17", *SETUP_NVCC[1:], "-Icsrc/selective_scan"])}
options = {{ sources = ["csrc/selective_scan/selective_scan.cpp"], extension = "selective_scan_cuda", cxx_flags = ["-O3", "-std=c++17"] }}

# The same file as the issue's user first wrote it: the nvcc frontend with torch's headers
# (`libraries = ["torch"]`), one nvcc for every arch of the cells (setup.py's gencode
# list), whose ptxas output of over 512 KiB once gave sm_90's figures to sm_89.
[[variant]]
name = "fwd-fp32-nvcc"
frontend = "nvcc"
source = "csrc/selective_scan/selective_scan_fwd_fp32.cu"
libraries = ["torch"]
flags = {_toml_list([*SETUP_NVCC[:1], "-std=c++17", *SETUP_NVCC[1:], "-Icsrc/selective_scan"])}

# The whole extension (setup.py's ten sources), imported by torch on a GPU and its
# forward called, compared with the scan in closed form.
[[variant]]
name = "extension"
frontend = "torch-extension"
source = "csrc/selective_scan/selective_scan_fwd_fp32.cu"
flags = {_toml_list([*SETUP_NVCC[:1], "-std=c++17", *SETUP_NVCC[1:], "-Icsrc/selective_scan"])}
timeout = 900
  [variant.options]
  sources = {_toml_list(MAMBA_SOURCES)}
  extension = "selective_scan_cuda"
  cxx_flags = ["-O3", "-std=c++17"]
  call = "fwd"
  args = "{SCAN_ARGS}"
  result = "got[0]"
  expect = "{SCAN_REFERENCE}"
  rtol = 1e-3
  atol = 1e-4
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cudamatrix")
    args = parser.parse_args()
    for folder, spec, text in (("causal-conv1d", "sdist:causal-conv1d==1.7.0", CAUSAL),
                               ("mamba-selective-scan", "sdist:mamba-ssm==2.3.2.post1", MAMBA)):
        sdist = fetch(SourceSpec.parse(spec, "cases.py"), args.cases, args.cache).path
        case = args.cases / folder
        shutil.rmtree(case, ignore_errors=True)
        shutil.copytree(sdist / "csrc", case / "csrc")
        (case / "case.toml").write_text(text)
        print(f"{case}: {spec}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
