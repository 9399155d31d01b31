"""CuVec's own pybind11 example module, from the wheel the build made: a 2-D array
incremented by its kernel on the GPU, checked against NumPy."""

import glob
import subprocess
import sys

subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                "--target", "test-site", *glob.glob("dist/*.whl")], check=True)
sys.path[:0] = ["test-site"]

import cuvec.pybind11 as cu  # noqa: E402
import numpy as np  # noqa: E402
from cuvec import example_pybind11  # noqa: E402

src = cu.zeros((64, 64), "float32")
src[:] = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
out = cu.asarray(example_pybind11.increment2d_f(src.cuvec))
np.testing.assert_array_equal(np.asarray(out), np.asarray(src) + 1)
print("cuvec: increment2d_f right on", out.shape)
