# Issue 50's seams on a GPU machine (an H100, driver 580, its own CUDA 13.0; the package
# run from the source tree, never installed, so its built-in frontends, providers and
# commands come from common/plugins.py's BUILT_IN): the GPU tests; the known-bug, hermetic
# and GPU-fault corpus made by the code before issue 50 (4893f72, carried as
# .gpu/before/src) and by this checkout, compared cell by cell; and the driver's version
# read through nvidia-ml-py where /proc/driver/nvidia is not to be had (a container).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
nvidia-smi -L
echo "== the GPU tests"
PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site timeout 300 python3 -m pytest -p no:cacheprovider -q \
  tests/e2e/test_gpu.py tests/e2e/test_hermetic_gpu.py 2>&1 | tee $OUT/gpu-tests.log | tail -4
echo "== before and after, cell by cell"
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --arch sm_90 --arch sm_90a --arch sm_80 --jitify-warmup-timeout 10"
for code in before after; do
  src=$PWD/src; [ $code = before ] && src=$PWD/.gpu/before/src
  PYTHONPATH=$src:/tmp/site timeout 240 python3 -m cudamatrix run --provider host --toolkit 13.0 \
    --runner-label h100-driver-580 $C -j 16 --cache /tmp/c-$code --out /tmp/v-$code \
    > $OUT/$code.log 2>&1
  echo "$code: rc=$? $(grep -E '^pass=' $OUT/$code.log)"
done
python3 bench/evidence/hermetic-h100/compare.py /tmp/v-before /tmp/v-after | tee $OUT/before-after.txt | tail -8
echo "== the driver's version without /proc/driver/nvidia (nvidia-ml-py)"
PYTHONPATH=$PWD/src:/tmp/site python3 - <<'PY' 2>&1 | tee $OUT/driver-version.txt
import builtins
from cudamatrix.orchestrator import gpu
real = builtins.open
def no_proc(path, *a, **k):
    if str(path).startswith("/proc/driver/nvidia"):
        raise FileNotFoundError(path)
    return real(path, *a, **k)
print("with /proc:", gpu._driver_version_string())
builtins.open = no_proc
print("without /proc, through NVML:", gpu._driver_version_string())
PY
