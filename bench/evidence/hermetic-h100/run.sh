# Issue 47 on the H100 with the machine's own CUDA 13.0 (host provider): an NVRTC budget
# compiled three times, each a fresh run without the tool's compile cache (NVRTC's own
# ComputeCache live in ~/.nv); README's saxpy and the device heap through one GPU
# server, one cell after another; then the determinism check: one corpus run five
# ways, every cell's outcome, stage and message compared.
set -u
FINAL=$OUT; OUT=/tmp/o; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
tar xJf .gpu/rw.txz -C /tmp
nvidia-smi -L
R="python3 -m cudamatrix run --provider host --toolkit 13.0 --runner-label h100-driver-580"
for i in 1 2 3; do
  $R --corpus tests/data/hermetic --case budget --arch sm_90 --arch sm_80 --no-compile-cache \
     --cache /tmp/cb$i --out $OUT/budget$i > $OUT/budget$i.log 2>&1
  echo "budget run $i: rc=$? $(grep -E '^pass=' $OUT/budget$i.log)"
  python3 -c "import json,sys; [print(' ', c['id'], c['outcome'], c['message'][:90], [s['details'].get('resources_from') for s in c['stages'] if s['stage']=='compile']) for c in json.load(open('$OUT/budget$i/results.json'))['cells']]"
done
echo "~/.nv/ComputeCache entries: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"
$R --corpus tests/data/hermetic --case readme-saxpy --case device-heap --arch sm_90 -j 1 \
   --cache /tmp/ch --out $OUT/heap > $OUT/heap.log 2>&1
echo "saxpy and heap, -j 1, one server: rc=$?"; grep -E "^\[|^pass=" $OUT/heap.log
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --corpus /tmp/rw --arch sm_90 --arch sm_90a --arch sm_80 --jitify-warmup-timeout 10"
d() { local name=$1; shift; timeout 400 $R $C "$@" --out /tmp/det/$name > $OUT/det-$name.log 2>&1; echo "determinism $name: rc=$? $(grep -E '^pass=' $OUT/det-$name.log)"; }
d j16-fresh -j 16 --cache /tmp/d1
d j16-nocache -j 16 --cache /tmp/d1 --no-compile-cache --always-run
d j16-context -j 16 --cache /tmp/d1 --context-per-cell --always-run
d j16-again -j 16 --cache /tmp/d1 --always-run
python3 bench/evidence/hermetic-h100/compare.py /tmp/det/j16-fresh /tmp/det/j16-nocache /tmp/det/j16-context /tmp/det/j16-again | tee $OUT/determinism.txt | tail -40
mkdir -p $OUT/det; for n in j16-fresh j16-again; do cp /tmp/det/$n/results.json $OUT/det/$n.json; done
for i in 1 2 3; do find $OUT/budget$i -mindepth 1 -maxdepth 1 ! -name results.json -exec rm -rf {} +; done
find $OUT/heap -mindepth 1 -maxdepth 1 ! -name results.json -exec rm -rf {} +
tar czf $FINAL/hermetic-h100.tgz -C $OUT . && cp $OUT/determinism.txt $FINAL/
