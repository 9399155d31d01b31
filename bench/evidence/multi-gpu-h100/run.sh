# A server per GPU on a machine with two H100s: the library corpus of bench/evidence/gpu-server-h100
# (60 cells, 40 of them load a module) compiled once, then re-run warm (only the GPU stages
# again) with CUDA_VISIBLE_DEVICES naming GPU 0, GPU 1 and both; the faulting corpus with
# both GPUs; each cell's load stage names the GPU it ran on (gpus.py summarises).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/b && tar xJf .gpu/bundle.txz -C /tmp/b
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader
cases=$(for c in $(ls /tmp/b/corpus); do echo --case $c; done)
LIB="--corpus /tmp/b/corpus $cases --toolkit 13.0 --arch sm_80 --arch sm_86 --arch sm_90 --arch sm_90a --library cccl==13.0.85 --library cccl==13.1.115"
FAULTS="--corpus tests/data/gpu-faults --case faults --toolkit 13.0 --arch sm_90"
COMMON="--provider host --cache /tmp/b/cache --runner-label h100x2-driver-580 -j 16"
python3 -m cudamatrix run $LIB $COMMON --out /tmp/cold > $OUT/cold.log 2>&1
echo "cold: $(tail -n 2 $OUT/cold.log | head -1)"
for v in 0 1 0,1; do
  for rep in 1 2; do
    start=$(date +%s%N)
    CUDA_VISIBLE_DEVICES=$v python3 -m cudamatrix run $LIB $COMMON --out /tmp/lib-$v-$rep > /tmp/lib-$v-$rep.log 2>&1
    end=$(date +%s%N)
    echo "lib CUDA_VISIBLE_DEVICES=$v (run $rep): $(( (end - start) / 1000000 )) ms: $(tail -n 2 /tmp/lib-$v-$rep.log | head -1)"
    python3 bench/evidence/multi-gpu-h100/gpus.py /tmp/lib-$v-$rep
  done
done
for v in 0,1 0; do
  start=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=$v python3 -m cudamatrix run $FAULTS $COMMON --out /tmp/faults-$v > /tmp/faults-$v.log 2>&1
  end=$(date +%s%N)
  echo "faults CUDA_VISIBLE_DEVICES=$v: $(( (end - start) / 1000000 )) ms: $(tail -n 2 /tmp/faults-$v.log | head -1)"
  python3 bench/evidence/multi-gpu-h100/gpus.py /tmp/faults-$v
done
# A GPU index the driver does not have: the run uses the GPUs it can.
CUDA_VISIBLE_DEVICES=1,7 python3 -m cudamatrix run $FAULTS $COMMON --out /tmp/faults-1-7 > /tmp/faults-1-7.log 2>&1
echo "faults CUDA_VISIBLE_DEVICES=1,7: $(tail -n 2 /tmp/faults-1-7.log | head -1)"
python3 bench/evidence/multi-gpu-h100/gpus.py /tmp/faults-1-7
cp /tmp/lib-0,1-2.log $OUT/lib-both.log; cp /tmp/faults-0,1.log $OUT/faults-both.log
cd /tmp && tar czf $OUT/runs.tgz --exclude=artifacts lib-* faults-* cold
