# Issue 69, point 2: a project's own setup.py (tests/data/torch-extension/setup-py: torch's
# CUDAExtension and BuildExtension choose every flag) built on a machine without a GPU
# against PyPI's torch wheel, installed for the cell with its CUDA libraries (torch's Linux
# wheels on PyPI are CUDA builds; they import without a GPU), the cell's toolkit as
# $CUDA_HOME: the project declares the whole wheel as a library of its own
# (`[libraries.torch_wheel] package = "torch"`, not headers), the variant names it.
# torch 2.9.1 is built with CUDA 12.8: cpp_extension accepts 12.4's nvcc (another minor)
# and refuses 13.0's (another major), the verdict each cell should get.
#   bash bench/evidence/torch-ext/pip-build/run.sh        (about 3.3 GB fetched, cached)
set -u
OUT=${OUT:-/tmp/pip-build-out}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../../.." && pwd)
W=$OUT/work
rm -rf "$W" && mkdir -p "$W/cases/setup-py-wheel"
cp "$REPO"/tests/data/torch-extension/setup-py/{binding.cpp,scale.cu,setup.py,check.py} \
   "$W/cases/setup-py-wheel/"
cat > "$W/cases/setup-py-wheel/case.toml" <<'TOML'
title = "A PyTorch CUDA extension built by its own setup.py against PyPI's torch wheel"

[[variant]]
name = "setup-py"
frontend = "build"
timeout = 900
libraries = ["torch_wheel"]
  [variant.build]
  commands = ["{python} setup.py -q build_ext --inplace"]
  outputs = ["*.so"]
  env = { TORCH_CUDA_ARCH_LIST = "{torch_arch}", MAX_JOBS = "2" }
  test = "{python} check.py"
TOML
cat > "$W/cudamatrix.toml" <<'TOML'
cases = ["cases"]

[libraries.torch_wheel]
package = "torch"
versions = ["2.9.1"]
TOML
cd "$W" && python3 -m cudamatrix run --case setup-py-wheel --toolkit 12.4 \
  --toolkit 13.0 --arch sm_90 --library torch_wheel==2.9.1 --no-gpu -j 1 \
  --out "$OUT/run" > "$OUT/run.log" 2>&1
echo "rc=$? $(tail -n 2 "$OUT/run.log" | head -1)"
python3 - "$OUT/run/results.json" <<'PY' | tee "$OUT/stages.txt"
import json, sys
for cell in json.load(open(sys.argv[1]))["cells"]:
    print(cell["id"], cell.get("outcome"), round(cell.get("seconds", 0), 1))
    for stage in cell["stages"]:
        print(f"  {stage['stage']}: {stage['status']} {stage.get('message', '')[:300]}")
        if stage["stage"] == "compile":
            print("   versions:", {k: v for k, v in cell.get("versions", {}).items()
                                   if "torch" in k or k in ("nvcc", "nvcc_from")})
PY
