# Issue 72: a cold run bounded by the machine, not by one compile. The same cold run (every
# compile afresh: --no-compile-cache, the environments already prepared, no cell timings
# kept from an earlier run) once per --compile-strategy, each run's wall against its floor,
# max(the longest single-arch compile, the run's compile work / cores), and every cell's
# outcome and stage compared across the strategies.
#
# The corpus: CuTe's sgemm_sm80 tutorial for every arch (corpus/cute-sgemm-sm80, its source
# taken from the nvidia-cutlass 4.2.0 wheel in .gpu/whl, never committed: 102.6 s as one
# nvcc for five archs on 16 cores, 24.2 s for one arch alone), the known-bug corpus and
# tests/data/hermetic (less what needs CuPy, the CuTe DSL, torch, other host compilers, or
# ends its GPU server by design); toolkit 13.0, the machine's own (--provider host).
#
# On a lent 16-core GPU machine, from the repository's root (two calls fit 10 minutes each):
#   bash bench/evidence/cold-path/run.sh prep grouped auto
#   bash bench/evidence/cold-path/run.sh threads apart alone summary
# Here, on 2 cores, two archs:
#   JOBS=2 ARCHS="sm_75 sm_80" OUT=/tmp/cold bash bench/evidence/cold-path/run.sh
# Settings: JOBS (default: the cores), ARCHS (default: sm_75 sm_80 sm_86 sm_90 sm_90a),
# PYTHON (default python3), GPU=1 to run the GPU stages too (default --no-gpu: the floor is the compiles'), CUDA_HOME
# (default: the newest /usr/local/cuda-13.*), WORK (runs and cache, default .gpu/cold-path:
# kept between calls). Writes walls.txt, each run's log and cells-<strategy>.json (each
# cell's outcome, stage and compile figures), alone.json and summary.txt under $OUT.
set -u
PY=${PYTHON:-python3}  # a Python with the package's dependencies
STEPS=${*:-prep grouped auto threads apart alone summary}
R=$PWD
OUT=${OUT:?set OUT to the folder the figures go to}
WORK=${WORK:-$R/.gpu/cold-path}
JOBS=${JOBS:-$(nproc)}
ARCHS=${ARCHS:-sm_75 sm_80 sm_86 sm_90 sm_90a}
if [ -z "${CUDA_HOME:-}" ]; then
  CUDA_HOME=$(ls -d /usr/local/cuda-13.* 2>/dev/null | sort -V | tail -1)
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
fi
export CUDA_HOME PATH=$CUDA_HOME/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
if ls .gpu/whl/docker-*.whl > /dev/null 2>&1 && ! python3 -c "import docker" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
fi
export PYTHONPATH=$R/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
# The machine may reach no index: CUTLASS's headers come from the wheel in .gpu/whl.
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$R/.gpu/whl
CACHE=$WORK/cache
CORPUS=$WORK/corpus
GPU_FLAG=$([ "${GPU:-0}" = 1 ] || echo --no-gpu)
ARCH_FLAGS=$(for a in $ARCHS; do echo --arch $a; done)
SEL="--known-bugs --corpus tests/data/hermetic --corpus $CORPUS --toolkit 13.0 --tier gpu $ARCH_FLAGS"
cells() {
  "$PY" -m cudamatrix list $SEL 2>/dev/null | awk '{print $1}' \
    | grep -v -E 'cupy|cute-dsl|emit-pytorch|^host-compiler-range/|^device-heap/' \
    | sed 's/^/--cell /'
}
run() {  # name, more options
  local name=$1; shift
  rm -f "$CACHE/cell-timings.json"  # a first run: no timings but the shipped ones
  rm -rf "$WORK/runs/$name"
  local start=$(date +%s.%N)
  timeout 590 "$PY" -m cudamatrix run $SEL $(cells) --provider host -j "$JOBS" $GPU_FLAG \
    --no-compile-cache --cache "$CACHE" --out "$WORK/runs/$name" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  python3 -c "print(f'$name: rc=$rc wall {$(date +%s.%N) - $start:.2f} s')" | tee -a "$OUT/walls.txt"
  "$PY" bench/evidence/cold-path/summary.py cells "$WORK/runs/$name" > "$OUT/cells-$name.json"
}
for step in $STEPS; do
  case $step in
    prep)
      echo "== prep: $(nproc) cores, $CUDA_HOME, JOBS=$JOBS, ARCHS=$ARCHS"
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt"
      nvcc --version | tail -1 | tee "$OUT/nvcc.txt"
      rm -rf "$CORPUS" && mkdir -p "$CORPUS" && cp -r bench/evidence/cold-path/corpus/* "$CORPUS"/
      python3 - "$CORPUS/cute-sgemm-sm80/sgemm_sm80.cu" .gpu/whl/nvidia_cutlass-4.2.0.0-py3-none-any.whl <<'PY'
import sys, zipfile
member = "cutlass_library/source/examples/cute/tutorial/sgemm_sm80.cu"
with zipfile.ZipFile(sys.argv[2]) as wheel:
    open(sys.argv[1], "wb").write(wheel.read(member))
PY
      rm -f "$OUT/walls.txt"
      # The environments (toolkit 13.0, CUTLASS 4.2.0's headers) prepared once, in the
      # runs' cache: one small CUTLASS cell, compiled and thrown away.
      "$PY" -m cudamatrix run --known-bugs --toolkit 13.0 --tier gpu \
        --cell cutlass-sm90/arch-guarded/13.0/sm_90/cutlass-4.2.0 \
        --provider host --no-gpu --no-compile-cache --cache "$CACHE" --out "$WORK/runs/prep" \
        > "$OUT/prep.log" 2>&1
      echo "prep rc=$? ($(cells | wc -l) cells)" | tee "$OUT/cells.txt"
      ;;
    grouped|auto|threads|apart)
      echo "== cold run, --compile-strategy $step"
      run "$step" --compile-strategy "$step"
      ;;
    alone)  # each arch's CuTe compile by itself, one after another: the floor's first term
      echo "== each arch of sgemm_sm80 alone"
      rm -rf "$WORK/runs/alone"
      "$PY" -m cudamatrix run $SEL --case cute-sgemm-sm80 --provider host -j 1 --no-gpu \
        --no-compile-cache --compile-strategy apart --cache "$CACHE" --out "$WORK/runs/alone" \
        > "$OUT/alone.log" 2>&1
      echo "alone rc=$?"
      "$PY" bench/evidence/cold-path/summary.py cells "$WORK/runs/alone" > "$OUT/alone.json"
      ;;
    summary)
      "$PY" bench/evidence/cold-path/summary.py table "$OUT" "$JOBS" | tee "$OUT/summary.txt"
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
