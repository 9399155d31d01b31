# The H100 run of the build frontend (issue 14): the three build cases of tests/data/build,
# built there by the machine's own nvcc 13.0 (--provider host) for sm_80/sm_90/sm_90a,
# audited, every module loaded by the driver, each test command run.
set -u
R=$PWD
B=$R/.whl/b
python3 -m pip install -q --no-index --no-deps --target /tmp/site $B/docker-*.whl $B/junitparser-*.whl
mkdir -p /tmp/c/sources/downloads && cp $B/downloads/* /tmp/c/sources/downloads/
export PYTHONPATH=$R/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 --version; which cmake nvcc; nvcc --version | tail -2
python3 -m cudamatrix run --corpus tests/data/build-cases --case cmake-saxpy --case pybind11-ext --case cuvec-sdist \
  --provider host --toolkit 13.0 --arch sm_80 --arch sm_90 --arch sm_90a -j 8 \
  --runner-label h100-driver-580 --cache /tmp/c --out $OUT/build-h100 > $OUT/run.log 2>&1
echo "rc=$?"
tail -25 $OUT/run.log
cd $OUT && tar czf build-h100.tgz --exclude=build-h100/artifacts build-h100 && rm -rf build-h100
