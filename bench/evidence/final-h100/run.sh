# The load, run and timing stages with the code as submitted (d0bb870 and after), on the
# H100: the faulting corpus (an illegal address, a trap, a device assert, a kernel that
# never returns, each beside a good kernel) through the GPU server and through a context
# per cell, and CUTLASS's nchw_to_nhwc prebuilt for 11.8/12.4/12.8/13.0 and timed (the
# record now keeps the samples).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
tar xJf .gpu/rwtime.txz -C /tmp
git log --oneline -1 2>/dev/null || true
FAULTS="--corpus tests/data/gpu-faults --case faults --toolkit 13.0 --arch sm_90 --provider host --cache /tmp/c --runner-label h100-driver-580 -j 16"
python3 -m cudamatrix run $FAULTS --out $OUT/faults-server > $OUT/faults-server.log 2>&1
echo "faults, GPU server: rc=$? $(tail -n 2 $OUT/faults-server.log | head -1)"
python3 -m cudamatrix run $FAULTS --context-per-cell --out $OUT/faults-per-cell > $OUT/faults-per-cell.log 2>&1
echo "faults, a context per cell: rc=$? $(tail -n 2 $OUT/faults-per-cell.log | head -1)"
python3 -m cudamatrix run --corpus /tmp/timedrw --case nchw-timed --arch sm_90 --toolkit 11.8 --toolkit 12.4 \
  --toolkit 12.8 --toolkit 13.0 --provider host --prebuilt /tmp/gb --cache /tmp/c1 \
  --runner-label h100-driver-580 -j 8 --out $OUT/timed > $OUT/timed.log 2>&1
echo "timed, prebuilt: rc=$? $(tail -n 2 $OUT/timed.log | head -1)"
for d in faults-server faults-per-cell timed; do
  find $OUT/$d -mindepth 1 -maxdepth 1 ! -name results.json ! -name COMPATIBILITY.md -exec rm -rf {} +
done
