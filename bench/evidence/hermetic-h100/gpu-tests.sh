# The GPU tests (tests/e2e/test_gpu.py and test_hermetic_gpu.py: PTX JIT and run, the
# faulting corpus through the server and a context per cell, a timed kernel, an NVRTC
# budget twice, README's saxpy, the device heap) with the code as submitted, on an H100.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
nvidia-smi -L
timeout 540 python3 -m pytest -p no:cacheprovider -q tests/e2e/test_gpu.py tests/e2e/test_hermetic_gpu.py \
  --durations=10 2>&1 | tee $OUT/gpu-tests.log | tail -25
