# The published run's host shard again with this code (issue 58, point 7), and where a warm
# re-run's seconds go (issue 60). On a lent H100, from the repository's root, with .gpu/
# carried: the package's missing wheels (.gpu/whl) and the gpu tier's modules for toolkits
# 11.8, 12.9, 13.0 and 13.5 built off the GPU by the wheels provider (.gpu/gpu-build.txz:
# `cudamatrix run --tier gpu --provider wheels --no-gpu --known-bugs --toolkit 11.8
# --toolkit 12.9 --toolkit 13.0 --toolkit 13.5 --out /tmp/gpu-build`).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
tar xJf .gpu/gpu-build.txz -C /tmp
cm="python3 -m cudamatrix"
echo "== the published run's host shard"
H=$($cm list --tier gpu --known-bugs --toolkit 11.8 --toolkit 12.9 --toolkit 13.0 --toolkit 13.5 \
    | grep -v '^wmma-jitify/cupy-jitify[a-z-]*/13.0/' | grep -v '^cute-dsl-cache/' \
    | sed 's/^/--cell /')
echo "$(( $(echo $H | wc -w) / 2 )) cells"
start=$(date +%s)
timeout -s INT 300 $cm run --tier gpu --known-bugs --prebuilt /tmp/gpu-build --compile-here cupy \
  --runner-label h100-driver-580 --cell-timeout 150 -j 8 --provider host $H --cache /tmp/cacheH \
  --out /tmp/runH > $OUT/runH.log 2>&1
echo "host shard: rc=$? $(( $(date +%s) - start )) s; $(grep -E '^pass=' $OUT/runH.log)"
(cd /tmp && tar czf $OUT/runH.tgz --exclude=runH/artifacts --exclude=runH/cells runH)
echo "== a warm re-run's seconds, cell by cell"
SEL="--known-bugs --corpus tests/data/hermetic --toolkit 13.0 --tier gpu --arch sm_75 --arch sm_80 --arch sm_86 --arch sm_89 --arch sm_90 --arch sm_90a"
ALL=$($cm list $SEL | grep -v -E 'cupy|cutlass|cute|^host-compiler-range/' | sed 's/^/--cell /')
NOHEAP=$($cm list $SEL | grep -v -E 'cupy|cutlass|cute|^host-compiler-range/|^device-heap/' | sed 's/^/--cell /')
run() {  # name, cells, extra options
  local name=$1 cells=$2; shift 2
  local start=$(date +%s.%N)
  timeout 120 $cm run $SEL $cells --provider host --runner-label h100 -j 16 "$@" \
    --out /tmp/o-$name > /tmp/$name.log 2>&1
  python3 -c "print(f'$name: rc=$? wall {$(date +%s.%N) - $start:.2f} s')" | tee -a $OUT/walls.txt
}
run cold "$ALL" --cache /tmp/cache
run warm "$ALL" --cache /tmp/cache
run warm-again "$ALL" --cache /tmp/cache
run warm-no-heap "$NOHEAP" --cache /tmp/cache
run warm-no-heap-again "$NOHEAP" --cache /tmp/cache
start=$(date +%s.%N); $cm list $SEL > /dev/null
python3 -c "print(f'list (start and plan alone): {$(date +%s.%N) - $start:.2f} s')" | tee -a $OUT/walls.txt
python3 bench/gpu/cell_seconds.py /tmp/o-cold /tmp/o-warm /tmp/o-warm-no-heap > $OUT/cell-seconds.txt
head -40 $OUT/cell-seconds.txt
