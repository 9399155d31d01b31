# Issue 59's check on a lent GPU: the same GPU cells judged by the code before the typed
# case specs (its src/ in .gpu/before, `git archive 7f90b57 src`) and by this tree's, in
# one call, every cell's outcome, stage and message compared (bench/evidence/hermetic-h100/compare.py);
# then the GPU tests and README's saxpy, timed, with this tree's code. Run from the
# repository's root with the package's missing wheels in .gpu/whl.
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
  PYTHONPATH=$2:$PWD/tests:/tmp/site timeout 260 python3 -m cudamatrix run $SEL $CELLS \
    --provider host -j 16 --cache /tmp/cache-$1 --out /tmp/o-$1 > $OUT/$1.log 2>&1
  echo "$1: rc=$? wall $(( $(date +%s) - start )) s" | tee -a $OUT/walls.txt
}
judge before $PWD/.gpu/before/src
judge after $PWD/src

python3 bench/evidence/hermetic-h100/compare.py /tmp/o-before /tmp/o-after > $OUT/verdicts.txt 2>&1
echo "compare rc=$?"; tail -5 $OUT/verdicts.txt
cp /tmp/o-after/COMPATIBILITY.md $OUT/ 2>/dev/null
python3 - <<'PY' | tee $OUT/outcomes.txt
import json, collections
for name in ("before", "after"):
    cells = json.load(open(f"/tmp/o-{name}/results.json"))["cells"]
    print(name, len(cells), dict(sorted(collections.Counter(c["outcome"] for c in cells).items())))
    timed = [s["details"]["timing"] for c in cells for s in c["stages"]
             if s["stage"] == "run" and "timing" in s.get("details", {})]
    print(f"  timed cells: {len(timed)}; noise targets met: {sum(t['converged'] for t in timed)}")
PY
echo "== the GPU tests"
timeout 200 python3 -m pytest -p no:cacheprovider -q tests/e2e/test_gpu.py 2>&1 | tee $OUT/gpu-tests.log | tail -4
