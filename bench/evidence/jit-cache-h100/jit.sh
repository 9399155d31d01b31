# Issue 60, point 1 on a lent GPU: the driver's PTX JIT kept in the tool's own folder.
# The known-bug, hermetic and GPU-fault corpus at sm_80, sm_90 and sm_90a (an sm_80 module
# is JIT-compiled from its PTX on an H100): a cold run (fresh cache), a warm re-run (the
# same cache, a fresh --out: every compile a cache hit, the JIT's too), the same warm
# re-run by the code before this change (JIT cache off), and the cells with every cache off
# in plan order and reversed; the load stage's seconds of each, and every cell's outcome,
# stage and message compared across all of them.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PIP_RETRIES=0 PIP_TIMEOUT=5
nvidia-smi -L
C="--known-bugs --corpus tests/data/hermetic --corpus tests/data/gpu-faults --arch sm_80 --arch sm_90 --arch sm_90a --jitify-warmup-timeout 10 --provider host --toolkit 13.0 --runner-label h100-driver-580 -j 16"
run() {  # name, source folder, extra options
  local name=$1 src=$2; shift 2
  local start=$(date +%s.%N)
  PYTHONPATH=$src:/tmp/site timeout 200 python3 -m cudamatrix run $C "$@" --out /tmp/o-$name \
    > $OUT/$name.log 2>&1
  local rc=$?
  echo "$name: rc=$rc wall=$(python3 -c "print(f'{$(date +%s.%N)-$start:.1f}')") s $(grep -E '^pass=' $OUT/$name.log)"
}
run cold $PWD/src --cache /tmp/cache-new
run warm $PWD/src --cache /tmp/cache-new
run cold-before $PWD/.gpu/before/src --cache /tmp/cache-old
run warm-before $PWD/.gpu/before/src --cache /tmp/cache-old
run off-plan $PWD/src --cache /tmp/cache-off --no-compile-cache
run off-reversed $PWD/src --cache /tmp/cache-off2 --no-compile-cache --order reversed
echo "== the load stage's seconds (sum over cells; cells with a load stage)"
python3 - <<'PY' | tee $OUT/load-seconds.txt
import json
for name in ("cold", "warm", "cold-before", "warm-before", "off-plan", "off-reversed"):
    cells = json.load(open(f"/tmp/o-{name}/results.json"))["cells"]
    loads = [s["seconds"] for c in cells for s in c["stages"] if s["stage"] == "load"]
    jit = [s["seconds"] for c in cells if c["arch"] == "sm_80" for s in c["stages"]
           if s["stage"] == "load"]
    print(f"{name}: {len(cells)} cells, load {sum(loads):.2f} s over {len(loads)} loads "
          f"(sm_80, JIT from PTX: {sum(jit):.2f} s over {len(jit)})")
PY
ls /tmp/cache-new/ptx-jit/*/ 2>&1 | head -3; du -sh /tmp/cache-new/ptx-jit 2>&1
python3 bench/evidence/hermetic-h100/compare.py /tmp/o-cold /tmp/o-warm /tmp/o-warm-before /tmp/o-off-plan /tmp/o-off-reversed | tee $OUT/verdicts.txt | tail -6
