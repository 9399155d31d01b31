# Issue 59 (point 2 and VariantSettings) on a lent GPU: the same GPU cells judged by the
# code before (its src/ in .gpu/before, `git archive ae1fed8 src`) and by this tree's, in
# one call, every cell's outcome, stage and message compared (bench/evidence/hermetic-h100/compare.py);
# the cells chosen by their repro words (--cell, --arch, --toolkit: run_flags), a
# --library choice on the GPU, then the GPU tests. Run from the repository's root with the
# package's missing wheels in .gpu/whl.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -2
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
SEL="--known-bugs --corpus tests/data/hermetic --corpus bench/evidence/kernel-time-h100/corpus --toolkit 13.0 --tier gpu --arch sm_80 --arch sm_89 --arch sm_90 --arch sm_90a"
export PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site
CELLS=$(python3 -m cudamatrix list $SEL | grep -v -E 'cupy|cute|emit-pytorch|^host-compiler-range/' | sed 's/^/--cell /')
echo "$(( $(echo $CELLS | wc -w) / 2 )) cells" | tee $OUT/cells.txt
judge() {  # name, src folder, extra words
  local start=$(date +%s)
  PYTHONPATH=$2:$PWD/tests:/tmp/site timeout 200 python3 -m cudamatrix run $SEL $CELLS \
    --provider host -j 16 --cache /tmp/cache-$1 --out /tmp/o-$1 > $OUT/$1.log 2>&1
  echo "$1: rc=$? wall $(( $(date +%s) - start )) s" | tee -a $OUT/walls.txt
}
judge before $PWD/.gpu/before/src
judge after $PWD/src
python3 bench/evidence/hermetic-h100/compare.py /tmp/o-before /tmp/o-after > $OUT/verdicts.txt 2>&1
echo "compare rc=$?"; tail -5 $OUT/verdicts.txt
python3 - <<'PY' | tee $OUT/outcomes.txt
import json, collections
for name in ("before", "after"):
    cells = json.load(open(f"/tmp/o-{name}/results.json"))["cells"]
    print(name, len(cells), dict(sorted(collections.Counter(c["outcome"] for c in cells).items())))
PY
echo "== a cell's repro, as the report prints it, run again"
REPRO=$(python3 - <<'PY'
import json
from cudamatrix.record.results import load_results
from cudamatrix.reports.glance import repro
from pathlib import Path
info, results = load_results(Path("/tmp/o-after/results.json"))
cell = next(r.cell for r in results if r.outcome == "pass" and r.cell.arch == "sm_90")
print(repro(cell, info))
PY
)
echo "$REPRO" | tee $OUT/repro.txt
# `cudamatrix` is not on the device's PATH: the same words through `python3 -m`.
eval "python3 -m cudamatrix ${REPRO#cudamatrix } --out /tmp/o-repro" > $OUT/repro.log 2>&1; echo "repro rc=$?" | tee -a $OUT/repro.txt
tail -2 $OUT/repro.log | tee -a $OUT/repro.txt
echo "== the GPU tests"
timeout 150 python3 -m pytest -p no:cacheprovider -q tests/e2e/test_gpu.py 2>&1 | tee $OUT/gpu-tests.log | tail -4
