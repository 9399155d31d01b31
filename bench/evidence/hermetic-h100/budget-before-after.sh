# An NVRTC budget compiled twice with the machine's CUDA 13.0, --no-gpu and without the
# tool's compile cache, by the code before issue 47's fix (b882ea8, .gpu/before/src) and
# after it; ~/.nv/ComputeCache emptied before each pair (issue 47, point 3).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1
for code in before after; do
  src=$PWD/src; [ $code = before ] && src=$PWD/.gpu/before/src
  rm -rf ~/.nv/ComputeCache
  for i in 1 2; do
    PYTHONPATH=$src:/tmp/site python3 -m cudamatrix run --corpus tests/data/hermetic --case budget \
      --provider host --toolkit 13.0 --arch sm_90 --no-gpu --no-compile-cache \
      --cache /tmp/$code-c$i --out /tmp/$code-o$i > /tmp/$code-$i.log 2>&1
    echo "$code run $i: $(grep -E '^\[' /tmp/$code-$i.log) $(python3 -c "import json;c=json.load(open('/tmp/$code-o$i/results.json'))['cells'][0];print(c['message'][:160])")"
  done
  echo "$code: ~/.nv/ComputeCache entries: $(find ~/.nv/ComputeCache -type f 2>/dev/null | wc -l)"
done
