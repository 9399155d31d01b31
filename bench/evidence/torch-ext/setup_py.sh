# Issue 69, point 2's last part: a project's own setup.py (torch's CUDAExtension and
# BuildExtension choosing every flag) run as a build case with the device's torch, CUDA
# 13.0 as $CUDA_HOME and the GPU's arch as TORCH_CUDA_ARCH_LIST; its .so audited, imported
# by that torch and called (tests/data/torch-extension/setup-py). Beside it, the
# torch-extension frontend's build of the same two files (../scale), so the two builds'
# SASS can be compared.   The lead runs: bash bench/evidence/torch-ext/setup_py.sh
set -u
OUT=${OUT:-/tmp/torch-setup-out}
mkdir -p "$OUT"
. bench/evidence/device-env.sh
python3 -m cudamatrix run --corpus tests/data/torch-extension --case setup-py --case scale \
  --toolkit 13.0 --arch "$ARCH" --library torch==installed --provider host \
  --cache /tmp/c-torch-setup --out "$OUT/run" -v > "$OUT/run.log" 2>&1
echo "setup-py and scale, installed torch, 13.0, $ARCH: rc=$? $(tail -n 2 "$OUT/run.log" | head -1)"
python3 - "$OUT/run/results.json" <<'PY' | tee "$OUT/stages.txt"
import json, sys
for cell in json.load(open(sys.argv[1]))["cells"]:
    print(cell["id"], cell.get("outcome"))
    for stage in cell["stages"]:
        print(f"  {stage['stage']}: {stage['status']} {stage.get('message', '')[:300]}")
        details = stage.get("details", {})
        keep = {k: details[k] for k in ("sass", "ptx", "kernels", "modules", "stdout", "same",
                                         "got", "torch") if k in details}
        if keep:
            print("   ", json.dumps(keep)[:600])
PY
find "$OUT/run" -mindepth 1 -maxdepth 1 ! -name results.json ! -name COMPATIBILITY.md -exec rm -rf {} +
