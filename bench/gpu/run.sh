# Issue 60's GPU figures on a lent GPU, each a ratio of two runs made in this one call
# (bench/RESULTS.md, "On a GPU"), with the GPU tests first. Run from the repository's root
# with the package's missing wheels in .gpu/whl (docker, junitparser, nvidia-ml-py,
# vl-convert-python); the machine's own CUDA toolkit is the host provider's.
#
#   1. tests/e2e/test_gpu.py: the faults corpus (each fault its own rule), kernel timing.
#   2. 64 GPU cells (the known-bug corpus's cases but CuPy's, the CuTe DSL's and the host
#      compilers', with CUTLASS 4.2.0's Hopper GEMM; the hermetic corpus but its
#      device-heap case, whose every cell ends its GPU server by design; toolkit 13.0,
#      sm_75 to sm_90a: every module but sm_90/sm_90a's is loaded through the driver's PTX
#      JIT on a Hopper GPU): a cold run (fresh cache), a warm re-run (same cache, fresh
#      --out: every compile and every JIT a cache hit), every cache off in plan order and
#      reversed; each run's wall and load seconds, and every cell's outcome, stage and
#      message compared across the four. The device-heap case's 12 cells are then run warm
#      beside them, to say what they cost.
#   3. The 256 MiB saxpy timed by the tool (cold L2) and by a C++ program of CUDA events
#      (bench/gpu/saxpy_reference.cu), its bandwidth from the same bytes.
# `bash bench/gpu/run.sh 2 3` runs only those steps.
set -u
STEPS=${*:-1 2 3}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
# The machine reaches no index: the libraries' wheels (CUTLASS's) come from .gpu/whl.
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv,noheader
if [[ " $STEPS " == *" 1 "* ]]; then
echo "== 1. the GPU tests"
timeout 240 python3 -m pytest -p no:cacheprovider -q tests/e2e/test_gpu.py 2>&1 \
  | tee $OUT/gpu-tests.log | tail -4
fi
if [[ " $STEPS " == *" 2 "* ]]; then
echo "== 2. cold, warm, caches off, reversed"
SEL="--known-bugs --corpus tests/data/hermetic --toolkit 13.0 --tier gpu --arch sm_75 --arch sm_80 --arch sm_86 --arch sm_89 --arch sm_90 --arch sm_90a"
CELLS=$(python3 -m cudamatrix list $SEL | grep -v -E 'cupy|cute|emit-pytorch|^host-compiler-range/|^device-heap/' | sed 's/^/--cell /')
HEAP=$(python3 -m cudamatrix list $SEL | grep -E '^device-heap/' | sed 's/^/--cell /')
echo "$(echo $CELLS | wc -w) words: $(( $(echo $CELLS | wc -w) / 2 )) cells"
run() {  # name, extra options
  local name=$1; shift
  local start=$(date +%s.%N)
  timeout 200 python3 -m cudamatrix run $SEL ${CELLS_NOW:-$CELLS} --provider host \
    --runner-label h100 -j 16 "$@" --out /tmp/o-$name > /tmp/$name.log 2>&1
  local rc=$?
  python3 -c "print(f'$name: rc=$rc wall {$(date +%s.%N) - $start:.2f} s')" | tee -a $OUT/walls.txt
}
run cold --cache /tmp/cache
run warm --cache /tmp/cache
run off-plan --cache /tmp/cache-off --no-compile-cache
run off-reversed --cache /tmp/cache-off2 --no-compile-cache --order reversed
run warm-again --cache /tmp/cache
CELLS_NOW="$HEAP" run heap-cold --cache /tmp/cache
CELLS_NOW="$HEAP" run heap-warm --cache /tmp/cache
python3 bench/evidence/hermetic-h100/compare.py /tmp/o-cold /tmp/o-warm /tmp/o-off-plan /tmp/o-off-reversed \
  /tmp/o-warm-again > $OUT/verdicts.txt 2>&1; tail -3 $OUT/verdicts.txt
python3 bench/gpu/cell_seconds.py /tmp/o-cold /tmp/o-warm /tmp/o-heap-warm > $OUT/cell-seconds.txt
fi
if [[ " $STEPS " == *" 3 "* ]]; then
echo "== 3. the 256 MiB saxpy: the tool against a C++ reference"
python3 -m cudamatrix run --corpus bench/evidence/kernel-time-h100/corpus --case saxpy --provider host \
  --toolkit 13.0 --arch sm_90 --cache /tmp/cache --out /tmp/sx > $OUT/saxpy.log 2>&1
nvcc -O3 -arch=sm_90 -o /tmp/saxpy_reference bench/gpu/saxpy_reference.cu && \
  /tmp/saxpy_reference > $OUT/reference.json; cat $OUT/reference.json
fi
python3 - "$STEPS" <<'PY' | tee $OUT/summary.txt
import json, os, re, sys
out = os.environ["OUT"]
steps = sys.argv[1].split()
walls = dict(re.findall(r"^(\S+): rc=\d+ wall ([\d.]+) s", open(f"{out}/walls.txt").read(), re.M)) \
    if "2" in steps else {}
runs = {}
for name in ("cold", "warm", "warm-again", "off-plan", "off-reversed", "heap-cold", "heap-warm"):
    if name not in walls:
        continue
    cells = json.load(open(f"/tmp/o-{name}/results.json"))["cells"]
    loads = [s["seconds"] for c in cells for s in c["stages"] if s["stage"] == "load"]
    runs[name] = (len(cells), float(walls[name]), sum(loads), len(loads))
    print(f"{name}: {len(cells)} cells, wall {float(walls[name]):.2f} s "
          f"({float(walls[name]) / len(cells):.3f} s a cell), load stage {sum(loads):.2f} s "
          f"over {len(loads)} loads ({sum(loads) / max(1, len(loads)):.4f} s a load)")
if runs:
    print(f"warm re-run against cold: {runs['cold'][1] / runs['warm'][1]:.1f}x faster "
          f"(again: {runs['cold'][1] / runs['warm-again'][1]:.1f}x)")
if "3" not in steps:
    sys.exit(0)
cells = {c["variant"]: c for c in json.load(open("/tmp/sx/results.json"))["cells"]}
tool = next(s for s in cells["cold-256MiB"]["stages"] if s["stage"] == "run")["details"]["timing"]
ref = json.load(open(f"{out}/reference.json"))
print(f"saxpy 256 MiB, cold L2: tool {tool['median_us']:.2f} us, {tool.get('bandwidth_gbs')} GB/s "
      f"({tool.get('bandwidth_fraction')} of {tool.get('peak_gbs')} GB/s peak); C++ reference "
      f"{ref['median_us']:.2f} us, {ref['bandwidth_gbs']} GB/s; tool/reference bandwidth "
      f"{tool['bandwidth_gbs'] / ref['bandwidth_gbs']:.4f}")
PY
