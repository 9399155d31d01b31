# The determinism check's order leg (issue 47), on the GPU machine with its own CUDA 13.0:
# the same 169 cells started in the plan's order and in its reverse (`--order`), each
# with a fresh cache, then compared cell by cell.
set -u
FINAL=$OUT; OUT=/tmp/o3; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
tar xJf .gpu/rw.txz -C /tmp
nvidia-smi -L
R="python3 -m cudamatrix run --provider host --toolkit 13.0 --runner-label h100-driver-580"
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --corpus /tmp/rw --arch sm_90 --arch sm_90a --arch sm_80 --jitify-warmup-timeout 10 -j 16"
for order in plan reversed; do
  timeout 280 $R $C --order $order --cache /tmp/c-$order --out /tmp/det/$order > $OUT/det-$order.log 2>&1
  echo "order $order: rc=$? $(grep -E '^pass=' $OUT/det-$order.log) first: $(grep -m1 -E '^\[1/' $OUT/det-$order.log)"
done
python3 bench/evidence/hermetic-h100/compare.py /tmp/det/plan /tmp/det/reversed | tee $OUT/determinism-order.txt | tail -8
cp /tmp/det/reversed/results.json $OUT/reversed.json
tar czf $FINAL/order.tgz -C $OUT . && cp $OUT/determinism-order.txt $FINAL/
