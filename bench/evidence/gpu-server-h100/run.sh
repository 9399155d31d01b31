# The GPU side at the driver's limit (issue 40), on the H100: the same cells through a GPU
# server (one context for the run) and through a context per cell (--context-per-cell),
# each with -j 16 and -j 1, every compile from the compile cache (a warm re-run: only the
# GPU stages run again). The corpus: real library code (.gpu/bundle.txz, as
# bench/evidence/library-headers-h100) and tests/data/gpu-faults (an illegal address, a trap, a
# device assert, a kernel that never returns, each beside a good kernel). compare.py sets
# the runs side by side, cell by cell, and sums their GPU stages.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/b && tar xJf .gpu/bundle.txz -C /tmp/b
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
cases=$(for c in $(ls /tmp/b/corpus); do echo --case $c; done)
LIB="--corpus /tmp/b/corpus $cases --toolkit 13.0 --arch sm_80 --arch sm_86 --arch sm_90 --arch sm_90a --library cccl==13.0.85 --library cccl==13.1.115"
FAULTS="--corpus tests/data/gpu-faults --case faults --toolkit 13.0 --arch sm_90"
COMMON="--provider host --cache /tmp/b/cache --runner-label h100-driver-580"
python3 -m cudamatrix run $LIB $COMMON -j 16 --out $OUT/cold > $OUT/cold.log 2>&1
python3 -m cudamatrix run $FAULTS $COMMON -j 16 --out $OUT/cold-faults > $OUT/cold-faults.log 2>&1
echo "cold: $(tail -n 2 $OUT/cold.log | head -1); faults: $(tail -n 2 $OUT/cold-faults.log | head -1)"
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $OUT/memory.log &
watch=$!
for mode in per-cell server; do
  flag=""; [ $mode = per-cell ] && flag="--context-per-cell"
  for j in 16 1; do
    for what in lib faults; do
      sel=$LIB; [ $what = faults ] && sel=$FAULTS
      start=$(date +%s%N)
      python3 -m cudamatrix run $sel $COMMON $flag -j $j --out $OUT/$what-$mode-$j > $OUT/$what-$mode-$j.log 2>&1
      end=$(date +%s%N)
      echo "$what $mode -j $j: rc=$? $(( (end - start) / 1000000 )) ms: $(tail -n 2 $OUT/$what-$mode-$j.log | head -1)"
    done
  done
done
kill $watch
# Many cells through one GPU server: its GPU memory with 25 cells and with 250.
python3 bench/evidence/gpu-server-h100/many.py /tmp/many 250
M="--corpus /tmp/many --toolkit 13.0 --arch sm_90 $COMMON -j 16"
all=$(for i in $(seq 0 249); do printf -- "--case k%03d " $i; done)
python3 -m cudamatrix run $M $all --out $OUT/many-cold > $OUT/many-cold.log 2>&1
for n in 25 250; do
  sel=$(for i in $(seq 0 $((n - 1))); do printf -- "--case k%03d " $i; done)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 > $OUT/memory-$n.log &
  watch=$!
  start=$(date +%s%N)
  python3 -m cudamatrix run $M $sel --out $OUT/many-$n > $OUT/many-$n.log 2>&1
  end=$(date +%s%N)
  kill $watch
  echo "many $n: $(( (end - start) / 1000000 )) ms, peak GPU memory $(sort -n $OUT/memory-$n.log | tail -1) MiB: $(tail -n 2 $OUT/many-$n.log | head -1)"
done
python3 bench/evidence/gpu-server-h100/compare.py $OUT
cd $OUT && tar czf runs.tgz --exclude=artifacts --exclude=cells lib-* faults-* many-* cold cold-faults memory*.log && rm -rf lib-* faults-* many-* cold cold-faults
