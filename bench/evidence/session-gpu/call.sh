# One device call, many checks: each step's own script with its own $OUT folder, all
# packed into one archive (the device returns 8 files at most).
#   bash bench/evidence/session-gpu/call.sh STEP...   STEP: torch | setuppy | pipeline | speed | cold | gputests | realworld | pyaxis
set -u
FINAL=$OUT
mkdir -p /tmp/steps
for step in "$@"; do
  export OUT=/tmp/steps/$step; mkdir -p $OUT
  start=$(date +%s)
  case $step in
    torch) timeout 300 bash bench/evidence/torch-ext/run.sh ;;
    setuppy) timeout 500 bash bench/evidence/torch-ext/setup_py.sh ;;
    pipeline) sed '/^bash bench\/gpu\/run.sh/d' bench/evidence/pipeline-h100/run.sh > /tmp/pipe.sh
              timeout 420 bash /tmp/pipe.sh ;;
    speed) timeout 400 bash bench/gpu/run.sh 2 ;;
    gputests) timeout 260 bash bench/gpu/run.sh 1 ;;
    cold) timeout 560 bash bench/evidence/cold-path/run.sh ;;
    realworld) timeout 585 bash bench/evidence/torch-ext/real-world/gpu.sh ;;
    pyaxis) timeout 400 bash bench/evidence/torch-ext/python-axis.sh ;;
  esac > $OUT/console.log 2>&1
  echo "$step: rc=$? $(( $(date +%s) - start )) s" | tee -a /tmp/steps/walls.txt
  tail -15 $OUT/console.log
done
tar -C /tmp/steps -czf $FINAL/steps.tgz .
cp /tmp/steps/walls.txt $FINAL/
