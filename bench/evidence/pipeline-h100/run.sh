# Issue 67 (one verdict module, declared keys, the compile key without case.toml) and
# issue 68/69's changes to what a cell records, on a lent GPU, in one call:
#   1. the same GPU cells judged by the code at the session's start (5972df7, its src/ in
#      .gpu/before) and by this tree, every cell's outcome, stage and message compared;
#   2. bench/gpu/run.sh 1 2: the GPU tests, then 64 GPU cells cold, warm, every cache off
#      in plan order and reversed, warm again: every verdict compared across the five.
# Run from the repository's root with the package's missing wheels in .gpu/whl.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
SEL="--known-bugs --corpus tests/data/hermetic --corpus bench/evidence/kernel-time-h100/corpus --toolkit 13.0 --tier gpu --arch sm_80 --arch sm_89 --arch sm_90 --arch sm_90a"
export PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site
CELLS=$(python3 -m cudamatrix list $SEL | grep -v -E 'cupy|cute|emit-pytorch|^host-compiler-range/' | sed 's/^/--cell /')
echo "$(( $(echo $CELLS | wc -w) / 2 )) cells" | tee $OUT/cells.txt
judge() {  # name, src folder
  local start=$(date +%s)
  PYTHONPATH=$2:$PWD/tests:/tmp/site timeout 200 python3 -m cudamatrix run $SEL $CELLS \
    --provider host -j 16 --cache /tmp/cache-$1 --out /tmp/o-$1 > $OUT/$1.log 2>&1
  echo "$1: rc=$? wall $(( $(date +%s) - start )) s" | tee -a $OUT/walls.txt
}
judge before $PWD/.gpu/before/src
judge after $PWD/src
python3 bench/evidence/hermetic-h100/compare.py /tmp/o-before /tmp/o-after > $OUT/verdicts-before-after.txt 2>&1
echo "compare rc=$?"; tail -5 $OUT/verdicts-before-after.txt
python3 - <<'PY' | tee $OUT/outcomes.txt
import json, collections
for name in ("before", "after"):
    cells = json.load(open(f"/tmp/o-{name}/results.json"))["cells"]
    print(name, len(cells), dict(sorted(collections.Counter(c["outcome"] for c in cells).items())))
PY
bash bench/gpu/run.sh 1 2 2>&1 | tee $OUT/speed.log | tail -20
