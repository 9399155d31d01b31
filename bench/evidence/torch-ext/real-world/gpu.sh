# Issue 69's "done means" on a lent GPU machine (its own CUDA 13.0 and torch): causal-conv1d's
# and mamba's extensions (cases.py, made here and carried in .gpu/real-world/cases):
#  1. mamba's selective-scan forward for six archs, by the torch-extension frontend (one
#     nvcc per arch) and by the nvcc frontend as one nvcc of six archs (the issue's
#     >512 KiB output), each cell's figures compared with six plain nvccs by hand;
#  2. both whole extensions built for the GPU's arch, imported by its torch and called,
#     their results compared (causal conv against torch's conv1d, the scan in closed form).
#   bash bench/evidence/torch-ext/real-world/gpu.sh     ($OUT set by the device)
set -u
OUT=${OUT:-/tmp/real-world-out}
mkdir -p "$OUT"
. bench/evidence/device-env.sh
CASES=.gpu/real-world/cases
HERE=bench/evidence/torch-ext/real-world
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'gpu', torch.cuda.get_device_name(0), 'python', sys.version.split()[0])" | tee "$OUT/torch.txt"
SIX="--arch sm_75 --arch sm_80 --arch sm_87 --arch sm_90 --arch sm_100 --arch sm_120"
COMMON="--corpus $CASES --toolkit 13.0 --provider host --library torch==installed --cache /tmp/c-rw"
# 2 in the background: the whole extensions for the GPU's arch, imported and called.
GPU_CASES=${GPU_CASES:-causal-conv1d mamba-selective-scan}  # the cases of step 2 ("none")
if [ "$GPU_CASES" != none ]; then
  timeout 540 python3 -m cudamatrix run $COMMON $(printf -- "--case %s " $GPU_CASES) \
    --variant extension --arch "$ARCH" -j 4 --cell-timeout 520 --out "$OUT/gpu" -v \
    > "$OUT/gpu.log" 2>&1 &
fi
GPU=${!:-none}
# 1: six archs, both frontends (or an earlier call's record of them: FIGURES=results.json),
# then by hand.
if [ -n "${FIGURES:-}" ]; then
  mkdir -p "$OUT/figures" && cp "$FIGURES" "$OUT/figures/results.json"
else
  FIGURE_VARIANTS=${FIGURE_VARIANTS:-fwd-fp32 fwd-fp32-nvcc}
  timeout 400 python3 -m cudamatrix run $COMMON --case mamba-selective-scan \
    $(printf -- "--variant %s " $FIGURE_VARIANTS) $SIX --no-gpu --compile-strategy grouped -j 7 --cell-timeout 390 \
    --out "$OUT/figures" -v > "$OUT/figures.log" 2>&1
  echo "figures run: rc=$? $(tail -n 2 "$OUT/figures.log" | head -1)"
fi
mkdir -p "$OUT/hand"
python3 "$HERE/by_hand.py" "$OUT/figures/results.json" "$OUT/hand"
for script in "$OUT"/hand/*/*.sh; do
  ( timeout 300 bash "$script" > "${script%.sh}.log" 2>&1
    echo "by hand ${script#$OUT/hand/}: rc=$? $(wc -c < "${script%.sh}.log") bytes" ) &
done
wait $(jobs -p | grep -v "^$GPU$") 2>/dev/null
python3 "$HERE/figures.py" "$OUT/figures/results.json" "$OUT/hand" | tee "$OUT/figures.txt"
if [ "$GPU_CASES" != none ]; then
  wait $GPU
  echo "gpu run: rc=$? $(tail -n 2 "$OUT/gpu.log" | head -1)"
fi
python3 - "$OUT"/*/results.json <<'PY' | tee "$OUT/stages.txt"
import json, sys
for path in sys.argv[1:]:
    for cell in json.load(open(path))["cells"]:
        print(cell["id"], cell.get("outcome"), round(cell.get("seconds", 0), 1))
        for stage in cell["stages"]:
            print(f"  {stage['stage']}: {stage['status']} {stage.get('message', '')[:200]}")
            if stage["stage"] in ("load", "run"):
                print("   ", json.dumps(stage.get("details", {}))[:500])
PY
for run in gpu figures; do
  [ -d "$OUT/$run" ] && find "$OUT/$run" -mindepth 1 -maxdepth 1 ! -name results.json -exec rm -rf {} +
done
rm -f /tmp/hand-*.o
