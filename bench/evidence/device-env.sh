# Sourced by the device scripts: the tool from this tree with the wheels that travel in
# .gpu/whl (the device has no network), the device's own CUDA 13.0 first on PATH, and the
# GPU's arch as sm_XX in $ARCH.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl 2>/dev/null
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda-13.0/bin:/usr/local/cuda/bin:$PATH
ARCH=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
export ARCH
