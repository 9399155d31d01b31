"""The frontends: the registry (registry.py) and one module per built-in frontend (nvrtc,
nvcc, clang, cupy, cutlass, cute_dsl, cutlass_python, build), each registering itself.
Every frontend, built-in or a plugin's, is found by its ``cudamatrix.frontends`` entry
point (common/plugins.py); then the modules named in $CUDAMATRIX_FRONTENDS, an override
for a plugin not installed. Import this package, not a module of it: importing it is what
fills the registry: `registered()` (and `frontend`) load them on first use.

May import every other group of ``stages`` (a frontend is a compile, an inspect and what
its cells need of a process), ``common``, ``errors``; never the run's side: a built-in frontend's
orchestrator part is orchestrator/job_preparation.py's, by the frontend's name.
"""

from __future__ import annotations

from .registry import (
    PLUGINS_ENV,
    Frontend,
    Prepare,
    frontend,
    load_plugins,
    register,
    registered,
)

__all__ = ["PLUGINS_ENV", "Frontend", "Prepare", "frontend", "load_plugins",
           "register", "registered"]
