# The build frontend on a lent GPU after the typed specs (issue 59) and the build changes of
# issue 61: cmake-saxpy (published in bench/evidence/build-h100 by the code before) and
# cmake-cublas (CUDA::cublas, cublasLt, curand from the machine's own CUDA install), built
# by its nvcc 13.0 (--provider host), each module loaded, cmake-saxpy's test run; then the
# same run again (up to date: its GPU stages make a record impossible, and the second run's
# first line says why), and a build cell's repro script run by hand.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
which cmake nvcc
RUN="python3 -m cudamatrix run --corpus tests/data/build-cases --case cmake-saxpy --case cmake-cublas --provider host --toolkit 13.0 --arch sm_80 --arch sm_90 -j 8 --cache /tmp/c --out /tmp/b"
$RUN > $OUT/build.log 2>&1; echo "rc=$?" | tee -a $OUT/build.log
tail -8 $OUT/build.log
$RUN > $OUT/again.log 2>&1; head -1 $OUT/again.log
python3 -m cudamatrix repro cmake-saxpy/cudaarchs/13.0/sm_90 --out /tmp/b > $OUT/repro.sh
sh $OUT/repro.sh > $OUT/repro.log 2>&1; echo "repro rc=$?" | tee -a $OUT/repro.log
cp /tmp/b/results.json /tmp/b/COMPATIBILITY.md $OUT/
python3 - <<'PY'
import json, os
cells = json.load(open(os.environ["OUT"] + "/results.json"))["cells"]
old = {c["id"]: c for c in json.load(open("bench/evidence/build-h100/results.json"))["cells"]}
for c in cells:
    before = old.get(c["id"])
    stages = " ".join(f"{s['stage']}:{s['status']}" for s in c["stages"])
    print(c["id"], c["outcome"], stages, "| before:", before["outcome"] if before else "-")
PY
