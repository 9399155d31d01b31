"""cutlass-python: a script using CUTLASS's Python interface; cutlass-python-build: the
same scripts given the cell's toolkit (nvcc, its headers, the host compiler), building
what the interface emitted as its user would."""

from __future__ import annotations

from .cute_dsl import compile_python_case
from .registry import Frontend, register

register(Frontend("cutlass-python", compile=compile_python_case, library="cutlass_python",
                  toolkit_free=True, guess_s=4.0))
# Builds a whole PyTorch extension with CUTLASS (minutes): slow, started first.
register(Frontend("cutlass-python-build", compile=compile_python_case, library="cutlass_torch",
                  needs=("nvcc",), guess_s=300.0))
