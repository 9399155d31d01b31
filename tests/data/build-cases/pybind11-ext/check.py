"""Imports the built module and checks its kernel's result against NumPy."""

import numpy as np
import vecadd

a = np.arange(1 << 16, dtype=np.float32)
b = np.full_like(a, 0.5)
out = vecadd.vecadd(a, b)
np.testing.assert_array_equal(out, a + b)
print(f"vecadd: {out.size} elements right")
