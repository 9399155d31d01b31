"""The frontends: the registry (registry.py) and one module per built-in frontend (nvrtc,
nvcc, clang, cupy, cutlass, cute_dsl, cutlass_python, build), each registering itself;
then the plugins named in $CUDAMATRIX_FRONTENDS. Import this package, not a module of it:
importing it is what fills the registry."""

from __future__ import annotations

from . import build, clang, cupy, cute_dsl, cutlass, cutlass_python, nvcc, nvrtc
from .registry import PLUGINS_ENV, REGISTRY, Frontend, Prepare, frontend, load_plugins, register

__all__ = ["PLUGINS_ENV", "REGISTRY", "Frontend", "Prepare", "build", "clang", "cupy",
           "cute_dsl", "cutlass", "cutlass_python", "frontend", "load_plugins", "nvcc", "nvrtc",
           "register"]

load_plugins()
