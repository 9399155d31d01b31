# The published run's host and CUDA 12.4 shards again, with the tool that loads a prebuilt
# shared library with its toolkit's runtime (the two CUTLASS libraries built by Debian's
# nvcc 12.4 were skips in the first calls: no libcudart.so.12 on this machine). The same
# five carried parts as run.sh; runD (the CuTe DSL case) and old-jitify are unchanged.
set -u
R=$PWD
cp .gpu/seed/p4 /tmp/pay/
cat /tmp/pay/p0 /tmp/pay/p1 /tmp/pay/p2 /tmp/pay/p3 /tmp/pay/p4 | md5sum
cat /tmp/pay/p0 /tmp/pay/p1 /tmp/pay/p2 /tmp/pay/p3 /tmp/pay/p4 | tar xf - -C /tmp
P=/tmp/payload
python3 -m pip install -q --no-index --no-deps --target /tmp/site $P/wheels/docker-*.whl \
    $P/wheels/junitparser-*.whl $P/wheels/nvidia_ml_py-*.whl
mkdir -p /tmp/cacheW/toolkits && tar xJf $P/tk124.txz -C /tmp/cacheW/toolkits
tar xJf $P/gpu-build.txz -C /tmp
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$P/wheels
cm="python3 -m cudamatrix"
H=$($cm list --tier gpu --toolkit 11.8 --toolkit 12.9 --toolkit 13.0 --toolkit 13.5 \
    | grep -v /12.4/ | grep -v '^wmma-jitify/cupy-jitify[a-z-]*/13.0/' | grep -v '^cute-dsl-cache/' \
    | sed 's/^/--cell /')
W=$($cm list --tier gpu --toolkit 12.4 | grep /12.4/ | sed 's/^/--cell /')
common="--tier gpu --prebuilt /tmp/gpu-build --compile-here cupy --runner-label h100-driver-580
        --cell-timeout 150 --jitify-warmup-timeout 480 -j 8"
start=$(date +%s)
timeout -s INT 540 $cm run $common --provider host $H --cache /tmp/cacheH --out /tmp/runH \
    > $OUT/runH.log 2>&1 &
timeout -s INT 540 $cm run $common --provider wheels $W --cache /tmp/cacheW --out /tmp/runW \
    > $OUT/runW.log 2>&1 &
wait
echo "both runs: $(( $(date +%s) - start )) s"
tail -n 3 $OUT/runH.log $OUT/runW.log
grep -E "cutlass-sm90/(arch-guarded|unguarded)/12.4" $OUT/runW.log
cd /tmp && tar czf $OUT/runH.tgz --exclude=runH/artifacts runH && tar czf $OUT/runW.tgz --exclude=runW/artifacts runW
