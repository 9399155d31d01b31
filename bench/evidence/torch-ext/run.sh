# Issue 69, point 3: a PyTorch extension built by the torch-extension frontend with the
# device's own torch (`--library torch==installed`: its headers, the flags its
# cpp_extension.py gives, its libraries to link), CUDA 13.0's nvcc (the host provider)
# and the GPU's own arch; then imported by that torch and called, the result checked
# (tests/data/torch-extension/scale: scale(arange(8), 2.5) == arange(8) * 2.5).
# Nothing is downloaded: the dependencies come from .gpu/whl, as the other runs here.
#   The lead runs:  bash bench/evidence/torch-ext/run.sh   (with $OUT set by the device)
set -u
OUT=${OUT:-/tmp/torch-ext-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
git log --oneline -1 2>/dev/null || true
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'gpu', torch.cuda.get_device_name(0), 'python', sys.version.split()[0])" 2>&1 | tee "$OUT/torch.txt"
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
ARCH=sm_${CAP}
echo "arch: $ARCH; nvcc: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" | tee -a "$OUT/torch.txt"
export PATH=/usr/local/cuda-13.0/bin:/usr/local/cuda/bin:$PATH
python3 -m cudamatrix run --corpus tests/data/torch-extension --case scale --toolkit 13.0 \
  --arch "$ARCH" --library torch==installed --provider host --cache /tmp/c-torch-ext \
  --out "$OUT/run" -v > "$OUT/run.log" 2>&1
echo "torch-extension scale, installed torch, 13.0, $ARCH: rc=$? $(tail -n 2 "$OUT/run.log" | head -1)"
python3 - "$OUT/run/results.json" <<'PY' | tee "$OUT/stages.txt"
import json, sys
for cell in json.load(open(sys.argv[1]))["cells"]:
    print(cell["id"], cell.get("outcome"))
    for stage in cell["stages"]:
        print(f"  {stage['stage']}: {stage['status']} {stage.get('message', '')[:300]}")
        if stage["stage"] in ("load", "run"):
            print("   ", json.dumps(stage.get("details", {}))[:400])
PY
find "$OUT/run" -mindepth 1 -maxdepth 1 ! -name results.json ! -name COMPATIBILITY.md ! -name artifacts -exec rm -rf {} +
