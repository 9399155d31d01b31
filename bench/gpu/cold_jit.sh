# Issue 81: a cold GPU run with the driver's JIT side by side, against its floor, in ONE call
# of a lent 16-core GPU machine (bench/RESULTS.md, "A cold GPU run with the driver's JIT in
# parallel"). From the repository's root (or a copy of the tree), with in .gpu/:
#   whl/      the wheels the device lacks (docker, junitparser, nvidia-ml-py) and nvidia-cutlass 4.2.0
#             (CUTLASS's headers for the cutlass cases: the device reaches no index);
#   rw.tgz    tests/data/realworld fetched here by its fetch.py (the device has no network);
#   stub/     a vl_convert stand-in where its 33 MB wheel does not fit the call (charts blank);
#   BEFORE=DIR a src/ folder of the code before (one server per GPU) for the before figure.
# The corpus: the real-world kernels, the faults corpus (tests/data/gpu-faults) and the timed
# saxpy (bench/evidence/kernel-time-h100/corpus), toolkit 13.0 --provider host (the machine's
# own CUDA 13.0), sm_75 to sm_90a: on a Hopper GPU every cell below sm_90 loads its PTX
# through the driver's JIT. Left out: the cells of CCCL releases other than the toolkit's
# (their wheels cannot be fetched there) and the sm_80 hang (one 20 s hang, sm_90's, is
# enough to show a hang costs its own cell; a second started late by a first run's schedule
# would only lengthen the tail). Runs, each with its wall in walls.txt:
#   cold                 servers side by side, a fresh compile cache and JIT cache;
#   warm                 the same cache again, a fresh --out;
#   warm-no-faults       the warm run less the faults corpus (nothing runs to a limit);
#   warm-realworld       the same less the timed saxpy too (the real-world kernels alone);
#   cold-recorded        every cache off, the costs the cold run recorded kept (a runner
#                        that has run the corpus before, a common header changed);
#   before-recorded      the same with the code before (BEFORE=DIR, its src/);
#   first-off            every cache off and no cost recorded: a first run ever again;
#   before-first-off     the same with the code before;
#   off-reversed-apart   every cache off, --order reversed, each arch compiled apart (the
#                        floor's single-arch compiles and compile work);
# then the same PTX JIT-compiled one after another and side by side (jit_side_by_side.py),
# the C++ cudaEvent saxpy, every cell's outcome and stage compared (hermetic-h100/compare.py)
# and the summary (cold_jit_summary.py). Each step stops at the call's deadline (DEADLINE s).
set -u
R=$PWD
OUT=${OUT:?set OUT}
WORK=${WORK:-/tmp/cold-jit}
JOBS=${JOBS:-$(nproc)}
ARCHS=${ARCHS:-sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a}
END=$(( $(date +%s) + ${DEADLINE:-520} ))
left() { echo $(( END - $(date +%s) )); }
mkdir -p "$WORK" "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/docker-*.whl .gpu/whl/nvidia_ml_py-*.whl \
  .gpu/whl/junitparser-*.whl 2>&1 | tail -2
cp .gpu/stub/*.py /tmp/site/ 2>/dev/null
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$R/.gpu/whl
export PATH=/usr/local/cuda-13.0/bin:/usr/local/cuda/bin:$PATH
tar xzf .gpu/rw.tgz -C "$WORK"
nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader | tee "$OUT/gpu.txt"
echo "$(nproc) cores, JOBS=$JOBS, $(nvcc --version | tail -1)" | tee -a "$OUT/gpu.txt"
ARCH_FLAGS=$(for a in $ARCHS; do echo --arch $a; done)
SEL="--corpus $WORK/rw --corpus tests/data/gpu-faults --corpus bench/evidence/kernel-time-h100/corpus --toolkit 13.0 --tier nightly $ARCH_FLAGS"
RW=$(ls "$WORK/rw" | paste -sd'|')
CELLS=$(python3 -m cudamatrix list $SEL 2>/dev/null | awk '{print $1}' \
  | grep -E "^($RW)/|^faults/.*/sm_(80|90)\$|^saxpy/.*/sm_90\$" | grep -v '/cccl-' \
  | grep -v -E '^faults/never-returns/.*/sm_80$' | sed 's/^/--cell /')
echo "$(( $(echo $CELLS | wc -w) / 2 )) cells" | tee -a "$OUT/gpu.txt"
# The same less the hang (whose 20 s limit a timed cell waits out, its GPU held meanwhile),
# and less the faults corpus (a warm re-run's seconds a cell, with nothing that runs to a limit).
NO_HANG=$(echo $CELLS | sed 's#--cell faults/never-returns/[^ ]*##g')
NO_FAULTS=$(echo $CELLS | sed 's#--cell faults/[^ ]*##g')
# The real-world kernels alone (no fault, no timed saxpy, each timing alone on the GPU).
REAL_ONLY=$(echo $NO_FAULTS | sed 's#--cell saxpy/[^ ]*##g')
python3 -c "
from cudamatrix.stages.device.load_run import GpuSession
s = GpuSession(); print('NVML: this process holds', s.held_bytes() >> 20, 'MiB')" | tee -a "$OUT/gpu.txt"
CACHE=$WORK/cache
run() {  # name, cache, more options; PY_PATH overrides the source
  local name=$1 cache=$2; shift 2
  # RUNS="cold warm ...": only those runs (a second call re-sampling some figures).
  if [ -n "${RUNS:-}" ] && [[ " $RUNS " != *" $name "* ]]; then return; fi
  local budget=$(( $(left) - 10 ))
  if [ $budget -lt 30 ]; then echo "$name: skipped, $(left) s left" | tee -a "$OUT/walls-skipped.txt"; return; fi
  # A cold run is a first run: no timings but the shipped ones; a warm one keeps them, and
  # so does a *-recorded one (every cache off, the costs an earlier run recorded kept: a
  # pull request that touches a common header on a runner that has run the corpus before).
  case $name in warm*|*-recorded) ;; *) rm -f "$cache/cell-timings.json" ;; esac
  local start=$(date +%s.%N)
  PYTHONPATH=${PY_PATH:-$R/src}:/tmp/site timeout $budget python3 -m cudamatrix run $SEL ${ONLY:-$CELLS} \
    --provider host --runner-label h100 -j "$JOBS" --cache "$cache" --out "$WORK/runs/$name" "$@" \
    > "$OUT/$name.log" 2>&1
  local rc=$?
  python3 -c "print(f'$name: rc=$rc wall {$(date +%s.%N) - $start:.2f} s')" | tee -a "$OUT/walls.txt"
}
# The environments (toolkit 13.0, CUTLASS 4.2.0's headers) prepared once: one small cell,
# compiled without the compile cache, so that no run's wall counts them.
python3 -m cudamatrix run $SEL --cell "$(echo $CELLS | awk '{print $2}')" --provider host \
  --no-gpu --no-compile-cache --cache "$CACHE" --out "$WORK/runs/prep" > "$OUT/prep.log" 2>&1
echo "prep rc=$? ($(left) s left)"
rm -f "$OUT/walls.txt"
run cold "$CACHE"
run warm "$CACHE"
ONLY=$NO_FAULTS run warm-no-faults "$CACHE"
ONLY=$REAL_ONLY run warm-realworld "$CACHE"
nvcc -O3 -arch=sm_90 -o /tmp/saxpy_reference bench/gpu/saxpy_reference.cu && \
  /tmp/saxpy_reference > "$OUT/reference.json"
# Caches off with the cold run's costs recorded: the code as it is, then BEFORE's (a timed
# cell that held its GPU from the moment it asked, the whole run waiting out the hang).
run cold-recorded "$CACHE" --no-compile-cache
if [ -n "${BEFORE:-}" ]; then
  PY_PATH=$BEFORE run before-recorded "$CACHE" --no-compile-cache
fi
# A first run ever again, every cache off and no cost recorded, the code as it is and
# BEFORE's: what the schedule's first guesses make of a cold run (a hang its case declares
# costs its limit before it ran, cell_jobs.runs_to_its_limit).
run first-off "$CACHE" --no-compile-cache
if [ -n "${BEFORE:-}" ]; then
  PY_PATH=$BEFORE run before-first-off "$CACHE" --no-compile-cache
fi
echo "== the PTX JIT one after another and side by side ($(left) s left)"
timeout $(( $(left) > 200 ? 200 : $(left) )) python3 bench/gpu/jit_side_by_side.py "$JOBS" \
  "$WORK/runs/cold" "$CACHE" > "$OUT/jit.txt" 2>&1; cat "$OUT/jit.txt"
run off-reversed-apart "$CACHE" --no-compile-cache --order reversed --compile-strategy apart
# Issue 82, point 7: this machine reaches no index, as a GPU runner without internet: what
# FlashInfer's RoPE cells (CCCL 13.0 has no cuda::fast_mod_div) say there.
python3 - "$WORK/runs/cold/results.json" > "$OUT/offline-rope.txt" 2>&1 <<'PY'
import json, sys
for cell in json.load(open(sys.argv[1]))["cells"]:
    if cell["case"] == "flashinfer-rope":
        print(cell["case"], cell["variant"], cell["toolkit"], cell["arch"], cell["outcome"],
              "|", cell.get("message", ""), "|", json.dumps(cell.get("diagnosis"))[:600])
PY
head -3 "$OUT/offline-rope.txt"
python3 bench/evidence/hermetic-h100/compare.py $(for n in cold warm cold-recorded first-off before-first-off off-reversed-apart before-recorded; do
  [ -f "$WORK/runs/$n/results.json" ] && echo "$WORK/runs/$n"; done) > "$OUT/verdicts.txt" 2>&1
echo "verdicts compared: rc=$? $(tail -1 "$OUT/verdicts.txt")"
python3 bench/gpu/cold_jit_summary.py "$OUT" "$WORK" "$JOBS" | tee "$OUT/summary.txt"
python3 bench/gpu/cell_seconds.py $(for n in cold first-off before-first-off warm warm-no-faults warm-realworld cold-recorded before-recorded; do
  [ -f "$WORK/runs/$n/results.json" ] && echo "$WORK/runs/$n"; done) > "$OUT/cell-seconds.txt" 2>&1
(cd "$WORK/runs" && tar czf "$OUT/results.tgz" */results.json)
# At most 8 files come back: the summary, and everything else in one archive.
cd "$OUT" && tar czf evidence.tgz --exclude=evidence.tgz --exclude=summary.txt ./* \
  && find . -maxdepth 1 -type f ! -name evidence.tgz ! -name summary.txt -delete
