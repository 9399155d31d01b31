# Issue 69, point 2 on a lent GPU machine: the scale extension over the python axis
# (`python = ["installed", "3.13"]`), the device's own torch and CUDA 13.0. The installed
# Python's cell is imported and called; 3.13's is built against Debian trixie's
# libpython3.13-dev (no network there: its unpacked package travels in
# .gpu/py-axis/cache, as the run's cache would hold it) and its load says it is not
# imported by this Python.
#   bash bench/evidence/torch-ext/python-axis.sh      ($OUT set by the device)
set -u
OUT=${OUT:-/tmp/python-axis-out}
mkdir -p "$OUT"
. bench/evidence/device-env.sh
rm -rf /tmp/c-py && cp -r .gpu/py-axis/cache /tmp/c-py
python3 -m cudamatrix run --corpus .gpu/py-axis/cases --case scale-py --toolkit 13.0 \
  --arch "$ARCH" --library torch==installed --provider host --cache /tmp/c-py \
  --out "$OUT/run" -v > "$OUT/run.log" 2>&1
echo "rc=$? $(tail -n 2 "$OUT/run.log" | head -1)"
python3 - "$OUT/run/results.json" <<'PY' | tee "$OUT/stages.txt"
import json, sys
for cell in json.load(open(sys.argv[1]))["cells"]:
    print(cell["id"], cell.get("outcome"), {k: v for k, v in cell.get("versions", {}).items()
                                            if "python" in k})
    for stage in cell["stages"]:
        print(f"  {stage['stage']}: {stage['status']} {stage.get('message', '')[:200]}")
PY
find "$OUT/run" -mindepth 1 -maxdepth 1 ! -name results.json -exec rm -rf {} +
