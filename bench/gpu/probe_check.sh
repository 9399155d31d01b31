# The driver reached through orchestrator/gpu.initialised_driver on a lent GPU: the probe and
# the GPU pool's list, then the faults corpus's `faults` case (sm_80 and sm_90: PTX JIT,
# assert, illegal address, misaligned, trap, a hang) run twice on one cache and once with
# every cache off in reversed order, each cell's outcome, stage and message compared.
# From the repository's root with .gpu/whl (docker, junitparser, nvidia-ml-py) and .gpu/stub.
# bench/RESULTS.md, "Call 4", ran this script before two fixes: it had no PIP_FIND_LINKS
# and took the whole corpus, whose CuPy Jitify cells waited on CuPy's warm-up.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/docker-*.whl \
  .gpu/whl/nvidia_ml_py-*.whl .gpu/whl/junitparser-*.whl 2>&1 | tail -1
cp .gpu/stub/*.py /tmp/site/
export PYTHONPATH=$PWD/src:/tmp/site PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl \
  PATH=/usr/local/cuda/bin:$PATH
python3 -c "
from cudamatrix.orchestrator.gpu import probe; print(probe())
from cudamatrix.orchestrator.executors.gpus import visible_gpus; print(visible_gpus())"
SEL="--corpus tests/data/gpu-faults --case faults --toolkit 13.0 --arch sm_80 --arch sm_90 --provider host -j 16"
for r in "plan --cache /tmp/c1" "again --cache /tmp/c1" "rev --cache /tmp/c2 --no-compile-cache --order reversed"; do
  set -- $r; n=$1; shift
  s=$(date +%s.%N)
  timeout 100 python3 -m cudamatrix run $SEL "$@" --out /tmp/o-$n > "$OUT/$n.log" 2>&1
  echo "$n rc=$? $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s: $(grep -E '^pass=' "$OUT/$n.log")"
done
python3 bench/evidence/hermetic-h100/compare.py /tmp/o-plan /tmp/o-again /tmp/o-rev | tail -2
