# Kernel time (issue 41), on the H100: corpus/saxpy (a cold and a hot L2 at 4 MiB and at
# 256 MiB, and a case's max_us budget as a verdict) and FlashInfer's SiLU-and-mul from its
# wheel (.gpu/bundle.txz, as bench/evidence/library-headers-h100) made 4096 tokens of 2 x 4096
# halves and timed, over two CCCL releases and two archs: sm_90 runs its cubin, sm_80's
# PTX is JIT-compiled for the H100. Each cell is timed in the run's GPU server, one cell at
# a time on the GPU. The same run twice shows how far the medians move between runs.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/b && tar xJf .gpu/bundle.txz -C /tmp/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
corpus=/tmp/timed && mkdir -p $corpus && cp -r bench/evidence/kernel-time-h100/corpus/saxpy $corpus/
cp -r /tmp/b/corpus/flashinfer-activation $corpus/
sed -i -e 's/grid = \[4\] .*/grid = [4096]/' -e 's/shape = \[4, 64\]/shape = [4096, 4096]/' \
  -e 's/shape = \[4, 128\]/shape = [4096, 8192]/' -e 's/value = 64 }/value = 4096 }/' \
  -e 's/input\[:, :64\]/input[:, :4096]/g' -e 's/input\[:, 64:\]/input[:, 4096:]/g' \
  $corpus/flashinfer-activation/case.toml
printf '  [variant.time]\n  l2 = "cold"\n' >> $corpus/flashinfer-activation/case.toml
COMMON="--corpus $corpus --provider host --cache /tmp/b/cache --runner-label h100-driver-580 --toolkit 13.0 -j 16"
for n in 1 2; do
  python3 -m cudamatrix run $COMMON --case saxpy --arch sm_80 --arch sm_90 --out $OUT/saxpy-$n > $OUT/saxpy-$n.log 2>&1
  echo "saxpy run $n: rc=$? $(tail -n 2 $OUT/saxpy-$n.log | head -1)"
  python3 -m cudamatrix run $COMMON --case flashinfer-activation --arch sm_80 --arch sm_90 \
    --library cccl==13.0.85 --library cccl==13.1.115 --out $OUT/act-$n > $OUT/act-$n.log 2>&1
  echo "activation run $n: rc=$? $(tail -n 2 $OUT/act-$n.log | head -1)"
done
python3 bench/evidence/kernel-time-h100/timings.py $OUT/saxpy-1 $OUT/saxpy-2 $OUT/act-1 $OUT/act-2
# What comes back: each run's results.json and COMPATIBILITY.md, and the logs.
for d in saxpy-1 saxpy-2 act-1 act-2; do
  find $OUT/$d -mindepth 1 -maxdepth 1 ! -name results.json ! -name COMPATIBILITY.md -exec rm -rf {} +
done
