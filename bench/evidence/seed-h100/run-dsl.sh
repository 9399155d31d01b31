# The second call of the published run: the host-provider cells again without the CuTe DSL
# case, and the CuTe DSL case compiled on the H100 itself (--compile-here cute-dsl: the DSL
# compiles for the GPU it finds, so its answer there is its answer on a GPU runner), its
# wheels (nvidia-cutlass-dsl 4.8.1 and what it needs) carried in two parts.
set -u
R=$PWD
cat /tmp/q0 .gpu/seed/q1 | md5sum
cat /tmp/q0 .gpu/seed/q1 | tar xf - -C /tmp
P=/tmp/payload2
python3 -m pip install -q --no-index --no-deps --target /tmp/site $P/wheels/docker-*.whl \
    $P/wheels/junitparser-*.whl $P/wheels/nvidia_ml_py-*.whl
rm -rf /tmp/gpu-build && tar xJf $P/gpu-build.txz -C /tmp
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$P/wheels
cm="python3 -m cudamatrix"
H=$($cm list --tier gpu --toolkit 11.8 --toolkit 12.9 --toolkit 13.0 --toolkit 13.5 \
    | grep -v /12.4/ | grep -v '^wmma-jitify/cupy-jitify[a-z-]*/13.0/' | grep -v '^cute-dsl-cache/' \
    | sed 's/^/--cell /')
common="--tier gpu --prebuilt /tmp/gpu-build --runner-label h100-driver-580 --cell-timeout 150 -j 8"
start=$(date +%s)
timeout -s INT 400 $cm run $common --compile-here cupy --provider host $H --cache /tmp/cacheH \
    --out /tmp/runH > $OUT/runH.log 2>&1 &
timeout -s INT 400 $cm run $common --compile-here cupy --compile-here cute-dsl --provider host \
    --case cute-dsl-cache --cache /tmp/cacheD --out /tmp/runD > $OUT/runD.log 2>&1 &
wait
echo "both runs: $(( $(date +%s) - start )) s"
tail -n 3 $OUT/runH.log $OUT/runD.log
cd /tmp && tar czf $OUT/runH.tgz --exclude=runH/artifacts runH && tar czf $OUT/runD.tgz --exclude=runD/artifacts runD
