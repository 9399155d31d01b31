# A verdict must not depend on what ran before (issue 50's code, on the H100): the known
# bugs, the hermetic and the GPU-fault corpus, the tool's compile cache off, run twice in
# the plan's order and once reversed, each into a fresh folder and cache, then compared
# cell by cell (outcome, stage, message; paths and times aside).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
nvidia-smi -L
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --arch sm_90 --arch sm_90a --arch sm_80 --jitify-warmup-timeout 10"
R="python3 -m cudamatrix run --provider host --toolkit 13.0 --runner-label h100-driver-580 --no-compile-cache -j 16"
for run in plan-1:plan plan-2:plan reversed:reversed; do
  name=${run%%:*} order=${run#*:}
  timeout 170 $R $C --order $order --cache /tmp/c-$name --out /tmp/d-$name > $OUT/$name.log 2>&1
  echo "$name: rc=$? $(grep -E '^pass=' $OUT/$name.log)"
done
python3 bench/evidence/hermetic-h100/compare.py /tmp/d-plan-1 /tmp/d-plan-2 /tmp/d-reversed | tee $OUT/determinism.txt | tail -6
