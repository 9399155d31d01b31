"""Loads the built library and runs its kernel: the build case's test command."""

import ctypes
import sys

status = ctypes.CDLL(sys.argv[1]).saxpy_check(1 << 20)
if status:
    sys.exit(f"saxpy_check returned {status}")
print("saxpy: 1048576 elements right")
