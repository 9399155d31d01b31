# The published report's run (issue 40, item 6): the gpu tier built here with
# `cudamatrix run --tier gpu --provider wheels --no-gpu --out /tmp/gpu-build` (230 cells,
# 142 s on 2 cores), carried to the H100 with the CUDA 12.4 toolkit as the wheels provider
# prepares it, cupy-cuda12x 13.0.0 and 13.6.0, NumPy 1.26.4 and fastrlock, in five parts
# (the device tool carries 64 MiB a call). There: the CUDA 12.4 cells with the wheels
# provider (CuPy 13.x compiles there, through NVRTC 12.4), every other toolkit's cells with
# the machine's own CUDA 13.0 as the host provider, two runs at once over disjoint cells.
# Left out: CuPy 14.2.0's two Jitify variants on 13.0 (6 cells), whose one-time Jitify
# warm-up took 789 s on this machine (cupy_warmup.py), longer than one device call lasts.
set -u
R=$PWD
cat .gpu/seed/p4 >/dev/null && cp .gpu/seed/p4 /tmp/pay/
cat /tmp/pay/p0 /tmp/pay/p1 /tmp/pay/p2 /tmp/pay/p3 /tmp/pay/p4 | md5sum
cat /tmp/pay/p0 /tmp/pay/p1 /tmp/pay/p2 /tmp/pay/p3 /tmp/pay/p4 | tar xf - -C /tmp
P=/tmp/payload
python3 -m pip install -q --no-index --no-deps --target /tmp/site $P/wheels/docker-*.whl \
    $P/wheels/junitparser-*.whl $P/wheels/nvidia_ml_py-*.whl
mkdir -p /tmp/cacheW/toolkits && tar xJf $P/tk124.txz -C /tmp/cacheW/toolkits
tar xJf $P/gpu-build.txz -C /tmp
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$P/wheels
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 --version; nvcc --version | tail -2
cm="python3 -m cudamatrix"
H=$($cm list --tier gpu --toolkit 11.8 --toolkit 12.9 --toolkit 13.0 --toolkit 13.5 \
    | grep -v /12.4/ | grep -v '^wmma-jitify/cupy-jitify[a-z-]*/13.0/' | sed 's/^/--cell /')
W=$($cm list --tier gpu --toolkit 12.4 | grep /12.4/ | sed 's/^/--cell /')
echo "H: $(echo $H | wc -w) words, W: $(echo $W | wc -w) words"
common="--tier gpu --prebuilt /tmp/gpu-build --compile-here cupy --runner-label h100-driver-580
        --cell-timeout 150 --jitify-warmup-timeout 480 -j 8"
start=$(date +%s)
timeout -s INT 540 $cm run $common --provider host $H --cache /tmp/cacheH --out /tmp/runH \
    > $OUT/runH.log 2>&1 &
timeout -s INT 540 $cm run $common --provider wheels $W --cache /tmp/cacheW --out /tmp/runW \
    > $OUT/runW.log 2>&1 &
wait
echo "both runs: $(( $(date +%s) - start )) s"
tail -4 $OUT/runH.log $OUT/runW.log
cd /tmp && tar czf $OUT/runH.tgz --exclude=runH/artifacts runH && tar czf $OUT/runW.tgz --exclude=runW/artifacts runW
ls -la $OUT
