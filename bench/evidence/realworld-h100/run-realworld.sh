# The H100 run of tests/data/realworld (issue 22): the real kernels of numba-cuda and CUTLASS,
# named as C++ names them, built on a CPU machine from the wheels for 11.8/12.4/12.8/13.0
# (`cudamatrix run --no-gpu --out .gpu/build`, the corpus fetched by tests/data/realworld/fetch.py
# into .gpu/rw, less cute-sgemm-sm80, whose CUTLASS library wheel cannot be fetched there)
# and loaded and run on the GPU with --prebuilt (.gpu/sass-13.5: the cache's SASS tools,
# copied from the build machine's ~/.cache/cudamatrix/tools); then compiled afresh there by the
# machine's own NVRTC and nvcc 13.0 (--provider host) and run again.
set -u
R=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/docker-*.whl .gpu/whl/junitparser-*.whl
python3 -c "import cuda.bindings.driver" 2>/dev/null || \
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/cuda_*.whl
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1
tar xzf .gpu/rw.tgz -C .gpu
# The SASS tools (NVIDIA's 13.5 cuobjdump and nvdisasm wheels) as the wheels provider
# installs them into a cache: the prebuilt cells' toolkits are not on this machine.
mkdir -p /tmp/c1/tools && cp -r .gpu/sass-13.5 /tmp/c1/tools/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 --version; nvcc --version | tail -1
cases=$(for c in $(ls .gpu/rw); do echo --case $c; done)
python3 -m cudamatrix run --tier nightly --corpus .gpu/rw $cases --provider host \
  --prebuilt .gpu/build --toolkit 11.8 --toolkit 12.4 --toolkit 12.8 --toolkit 13.0 \
  --arch sm_80 --arch sm_90 --arch sm_90a -j 8 --runner-label h100-driver-580 \
  --cache /tmp/c1 --out $OUT/prebuilt > $OUT/prebuilt.log 2>&1
echo "prebuilt rc=$?"
python3 -m cudamatrix run --tier nightly --corpus .gpu/rw $cases --provider host \
  --toolkit 13.0 --arch sm_90 --arch sm_90a -j 8 --runner-label h100-driver-580 \
  --cache /tmp/c2 --out $OUT/host > $OUT/host.log 2>&1
echo "host rc=$?"
tail -n 4 $OUT/prebuilt.log $OUT/host.log
grep -E ": (fail|error|xpass|skip) " $OUT/prebuilt.log $OUT/host.log | head -40
cd $OUT && tar czf runs.tgz --exclude=artifacts --exclude=cells prebuilt host && rm -rf prebuilt host
