"""cutlass: nvcc with the headers of the cell's CUTLASS version (the library axis)."""

from __future__ import annotations

from .nvcc import compile_nvcc, compile_together
from .registry import Frontend, register

register(Frontend("cutlass", compile=compile_nvcc, compile_together=compile_together,
                  needs=("nvcc",), library="cutlass", guess_s=120.0, reports_resources=True))
