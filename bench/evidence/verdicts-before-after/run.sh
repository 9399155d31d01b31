# Issue 47: tests/data/realworld's verdicts (the e2e lane's selection: the nightly tier over
# 11.8/12.0/12.4/12.8/13.0, the light cases on sm_70..sm_90a, the heavy ones on their
# archs), made by the code before issue 47 (b54436e) and after it (this checkout), on a
# CPU machine (--no-gpu), then compared cell by cell (outcome, stage, message).
#   bash bench/evidence/verdicts-before-after/run.sh OLD_CHECKOUT_SRC CORPUS OUT
set -u
PY=${PYTHON:-python3}
old=$1 corpus=$2 out=$3
mkdir -p "$out"
new=${NEW_SRC:-$(cd "$(dirname "$0")/../../src" && pwd)}
light=() heavy=()
for c in $(ls "$corpus"); do
  case $c in
    cute-sgemm-sm80) heavy+=("$c:sm_80");;
    flashinfer-rmsnorm|flashinfer-sampling|flashinfer-activation) heavy+=("$c:sm_80,sm_90a");;
    flashinfer-rope) heavy+=("$c:sm_90a");;
    *) light+=(--case "$c");;
  esac
done
T=(--toolkit 11.8 --toolkit 12.0 --toolkit 12.4 --toolkit 12.8 --toolkit 13.0)
for code in old new; do
  src=$old; [ $code = new ] && src=$new
  (cd /tmp && PYTHONPATH=$src "$PY" -m cudamatrix run --tier nightly --corpus "$corpus" \
     "${light[@]}" "${T[@]}" --arch sm_70 --arch sm_75 --arch sm_80 --arch sm_90 --arch sm_90a \
     --no-gpu --provider wheels --out "$out/$code/light" > "$out/$code-light.log" 2>&1)
  for h in "${heavy[@]}"; do
    name=${h%%:*} archs=${h#*:}
    (cd /tmp && PYTHONPATH=$src "$PY" -m cudamatrix run --tier nightly --corpus "$corpus" \
       --case "$name" "${T[@]}" $(for a in ${archs//,/ }; do echo --arch $a; done) \
       --no-gpu --provider wheels --out "$out/$code/$name" > "$out/$code-$name.log" 2>&1)
  done
  (cd /tmp && PYTHONPATH=$src "$PY" -m cudamatrix merge "$out/$code"/* --out "$out/$code-merged" > /dev/null 2>&1)
done
python3 "$(dirname "$0")/../hermetic-h100/compare.py" "$out/old-merged" "$out/new-merged"
