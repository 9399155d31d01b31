# The 64 GPU cells' cold run (fresh cache each), before (9bf3965^) and after (this tree) the
# threads fix, alternated, in one call; each cell's compile strategy and seconds kept.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>&1 | tail -1
export PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5 PIP_NO_INDEX=1 PIP_FIND_LINKS=$PWD/.gpu/whl
SEL="--known-bugs --corpus tests/data/hermetic --toolkit 13.0 --tier gpu --arch sm_75 --arch sm_80 --arch sm_86 --arch sm_89 --arch sm_90 --arch sm_90a"
export PYTHONPATH=$PWD/src:$PWD/tests:/tmp/site
CELLS=$(python3 -m cudamatrix list $SEL | grep -v -E 'cupy|cute|emit-pytorch|^host-compiler-range/|^device-heap/' | sed 's/^/--cell /')
for round in 1 2; do for rev in before after; do
  src=$PWD/src; [ $rev = before ] && src=$PWD/.gpu/before/src
  rm -rf /tmp/cache-$rev$round /tmp/o-$rev$round
  start=$(date +%s.%N)
  PYTHONPATH=$src:$PWD/tests:/tmp/site timeout 200 python3 -m cudamatrix run $SEL $CELLS --provider host \
    --runner-label h200 -j 16 --cache /tmp/cache-$rev$round --out /tmp/o-$rev$round > $OUT/$rev$round.log 2>&1
  rc=$?
  python3 -c "print(f'$rev$round: rc=$rc wall {$(date +%s.%N) - $start:.2f} s')" | tee -a $OUT/walls.txt
  python3 - /tmp/o-$rev$round > $OUT/$rev$round-cells.txt <<'PY'
import json, sys
cells = json.load(open(sys.argv[1] + "/results.json"))["cells"]
print(len(cells), {o: sum(c["outcome"] == o for c in cells) for o in {c["outcome"] for c in cells}})
for c in sorted(cells, key=lambda c: -c["stages"][0].get("seconds", 0))[:8]:
    d = c["stages"][0].get("details", {})
    print(f'{c["stages"][0].get("seconds", 0):7.2f} {c["id"]} {d.get("compile_strategy", "alone")} threads={d.get("nvcc_threads", 1)} fallback={bool(d.get("threads_fallback"))} cpu={d.get("compiler_cpu_s")}')
PY
  head -5 $OUT/$rev$round-cells.txt
done; done
