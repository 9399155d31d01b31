# Issue 50: the same verdicts before and after the seams (4893f72, the code before it, and
# this checkout), cell by cell, on the seed pr tier (the known-bug corpus) and on
# tests/data/realworld (the e2e lane's selection, as ../verdicts-before-after/run.sh runs it);
# a CPU machine (--no-gpu), the wheels provider.
#   bash bench/evidence/verdicts-issue50/run.sh OLD_CHECKOUT_SRC REALWORLD_CORPUS OUT
set -u
PY=${PYTHON:-python3}
old=$1 corpus=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
new=${NEW_SRC:-$(cd "$here/../../src" && pwd)}  # NEW_SRC: a snapshot of this checkout's
mkdir -p "$out"
for code in old new; do
  src=$old; [ $code = new ] && src=$new
  (cd /tmp && PYTHONPATH=$src "$PY" -m cudamatrix run --tier pr --known-bugs --no-gpu \
     --provider wheels --out "$out/$code-pr" > "$out/$code-pr.log" 2>&1)
done
echo "== the seed pr tier"
python3 "$here/../hermetic-h100/compare.py" "$out/old-pr" "$out/new-pr"
echo "== tests/data/realworld"
PYTHON=$PY NEW_SRC=$new bash "$here/../verdicts-before-after/run.sh" "$old" "$corpus" \
  "$out/realworld"
