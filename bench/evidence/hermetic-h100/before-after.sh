# The code before the hermetic fix (b882ea8, carried as .gpu/before/src) and after it, on
# the same machine: an NVRTC budget compiled twice with the machine's CUDA 13.0 (the tool's
# compile cache off, NVRTC's own ComputeCache live), and a device-heap hog before another
# cell in one GPU server (-j 1). Then the determinism check's -j 1 run against -j 16.
set -u
FINAL=$OUT; OUT=/tmp/o2; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
R="python3 -m cudamatrix run --provider host --toolkit 13.0 --runner-label h100-driver-580"
for code in before after; do
  if [ $code = before ]; then export PYTHONPATH=$PWD/.gpu/before/src:/tmp/site; else export PYTHONPATH=$PWD/src:/tmp/site; fi
  rm -rf ~/.nv/ComputeCache
  for i in 1 2; do
    $R --corpus tests/data/hermetic --case budget --arch sm_90 --no-compile-cache --cache /tmp/$code-cb$i --out $OUT/$code-budget$i > $OUT/$code-budget$i.log 2>&1
    echo "$code: budget run $i: $(grep -E '^\[' $OUT/$code-budget$i.log)"
  done
  echo "$code: ~/.nv/ComputeCache entries: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"
  $R --corpus tests/data/hermetic --case device-heap --case readme-saxpy --arch sm_90 -j 1 --cache /tmp/$code-ch --out $OUT/$code-heap > $OUT/$code-heap.log 2>&1
  echo "$code: heap and saxpy, -j 1:"; grep -E "^\[" $OUT/$code-heap.log
done
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --arch sm_90 --arch sm_90a --arch sm_80 --jitify-warmup-timeout 10"
for j in 16 1; do timeout 300 $R $C -j $j --cache /tmp/dj --always-run --out /tmp/det/j$j > $OUT/det-j$j.log 2>&1; echo "determinism -j $j: rc=$? $(grep -E '^pass=' $OUT/det-j$j.log)"; done
python3 bench/evidence/hermetic-h100/compare.py /tmp/det/j16 /tmp/det/j1 | tee $OUT/determinism-j1.txt | tail -5
tar czf $FINAL/before-after.tgz -C $OUT .
