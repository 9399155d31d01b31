# Kernel time of code nobody here wrote, per toolkit (issue 41), on the H100: CUTLASS's
# nchw_to_nhwc kernel (tests/data/realworld's, from the nvidia-cutlass wheel) on an 8 x 256 x
# 64 x 64 float tensor, as its header builds it and under --maxrregcount=24, where NVRTC
# spills it. Its NVRTC 11.8, 12.4, 12.8 and 13.0 builds were made off the GPU
# (`cudamatrix run --corpus /tmp/timedrw --case nchw-timed --toolkit 11.8 --toolkit 12.4
# --toolkit 12.8 --toolkit 13.0 --arch sm_90 --no-gpu --out /tmp/gb`, carried in
# .gpu/rwtime.txz); the machine's own CUDA 13.0 builds it again there. The prebuilt run
# twice, the second against the first as its baseline: the same kernels timed again.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
tar xJf .gpu/rwtime.txz -C /tmp
COMMON="--corpus /tmp/timedrw --case nchw-timed --arch sm_90 --runner-label h100-driver-580 -j 8"
TOOLKITS="--toolkit 11.8 --toolkit 12.4 --toolkit 12.8 --toolkit 13.0"
python3 -m cudamatrix run $COMMON $TOOLKITS --provider host --prebuilt /tmp/gb --cache /tmp/c1 --out $OUT/prebuilt-1 > $OUT/prebuilt-1.log 2>&1
echo "prebuilt run 1: rc=$? $(tail -n 2 $OUT/prebuilt-1.log | head -1)"
python3 -m cudamatrix run $COMMON $TOOLKITS --provider host --prebuilt /tmp/gb --cache /tmp/c1 --baseline $OUT/prebuilt-1/results.json --out $OUT/prebuilt-2 > $OUT/prebuilt-2.log 2>&1
echo "prebuilt run 2 against run 1: rc=$?"; grep -E "^since|^  time" $OUT/prebuilt-2.log
python3 -m cudamatrix run $COMMON --toolkit 13.0 --provider host --cache /tmp/c2 --out $OUT/own > $OUT/own.log 2>&1
echo "the H100's own CUDA 13.0: rc=$? $(tail -n 2 $OUT/own.log | head -1)"
python3 bench/evidence/kernel-time-h100/timings.py $OUT/prebuilt-1 $OUT/prebuilt-2 $OUT/own
for d in prebuilt-1 prebuilt-2 own; do
  find $OUT/$d -mindepth 1 -maxdepth 1 ! -name results.json ! -name COMPATIBILITY.md -exec rm -rf {} +
done
