# Real library code against a full CUDA 13.0 install (issue 37, 38): the H100 machine's own
# nvcc and NVRTC 13.0 (--provider host, /usr/local/cuda) compile a corpus kept apart from
# the repository (.gpu/bundle.txz: FlashInfer 0.7.2's kernels from its wheel, written up as
# tests/data/realworld does; a cuRAND device-API kernel; a source including cuBLASLt's, cuFFT's,
# cuSPARSE's and NVTX's headers; C++ names with a typedef and a function as template
# arguments), with CCCL 13.0.85 and 13.1.115 from the build machine's cache; the GPU loads
# every module and runs the SiLU-and-mul kernel. compare.py sets it against the same
# corpus on the embedded default (--provider wheels) of the build machine.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p /tmp/b && tar xJf .gpu/bundle.txz -C /tmp/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
ls -la /usr/local/cuda/include/curand_kernel.h /usr/local/cuda/include/cublasLt.h
cases=$(for c in $(ls /tmp/b/corpus); do echo --case $c; done)
cd /tmp/b
python3 -m cudamatrix run --corpus corpus $cases --provider host --toolkit 13.0 \
  --arch sm_80 --arch sm_90a --library cccl==13.0.85 --library cccl==13.1.115 \
  --cache /tmp/b/cache -j 16 --runner-label h100-driver-580 --out $OUT/host > $OUT/host.log 2>&1
echo "host rc=$?"
tail -n 3 $OUT/host.log
grep -E ": (fail|error|xpass|skip) " $OUT/host.log | head -20
cd $OUT && tar czf host.tgz --exclude=artifacts --exclude=cells host && rm -rf host
