# bisect --slower on the H100 (issue 41, item 5): CUTLASS's nchw_to_nhwc (tests/data/realworld's,
# from the nvidia-cutlass wheel), built off the GPU by NVRTC of every toolkit from 11.8 to
# 13.0 (`cudamatrix run --corpus /tmp/timedrw --case nchw-timed --arch sm_90 --toolkit 11.8
# ... --toolkit 13.0 --provider wheels --no-gpu --out /tmp/gb2`; 12.0-12.2's CCCL wheels lack
# <cuda/std/cassert>, so those are skipped), timed here: where did it first run more than
# RATIO times its 11.8 time? The capped variant (--maxrregcount=24, spilling from 12.4 on)
# and the float one as its header builds it.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
tar xJf .gpu/bisect.txz -C /tmp
B="bisect --over toolkit --from 11.8 --to 13.0 --corpus /tmp/timedrw --case nchw-timed --arch sm_90 --provider host --prebuilt /tmp/gb2 --runner-label h100-driver-580"
for what in "capped 1.03" "float 1.03" "capped 1.10"; do
  set -- $what
  python3 -m cudamatrix $B --variant $1 --slower $2 --cache /tmp/c --out /tmp/b-$1-$2 > $OUT/bisect-$1-$2.log 2>&1
  echo "== bisect --variant $1 --slower $2: rc=$?"
  grep -E "^bisect|^kernel time|^toolkit|^  |^no change" $OUT/bisect-$1-$2.log
done
