# The up-to-date record on the H100: a run with the GPU never records (its load stages
# run each time); the same cells with --no-gpu record on the second run and answer on the
# third. The machine's own nvcc and NVRTC 13.0 (--provider host).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="run --corpus bench/evidence/up-to-date-h100/case --case uptodate --provider host --toolkit 13.0 --arch sm_90 --cache /tmp/c"
for mode in gpu nogpu; do
  extra=""; [ $mode = nogpu ] && extra="--no-gpu"
  for i in 1 2 3; do
    start=$(date +%s%N)
    python3 -m cudamatrix $A $extra --out $OUT/$mode > $OUT/$mode-$i.log 2>&1
    rc=$?
    end=$(date +%s%N)
    echo "== $mode run $i: rc=$rc $(( (end - start) / 1000000 )) ms record=$(test -f $OUT/$mode/.cudamatrix-run.json && echo yes || echo no)"
    head -1 $OUT/$mode-$i.log
    grep "^pass=" $OUT/$mode-$i.log
  done
  python3 -c "
import json,sys
for c in json.load(open('$OUT/$mode/results.json'))['cells']:
    print(c['id'], c['outcome'], [(s['stage'], s['status'], s['details'].get('cache','')) for s in c['stages']])"
done
rm -rf $OUT/gpu/artifacts $OUT/nogpu/artifacts $OUT/gpu/cells $OUT/nogpu/cells
