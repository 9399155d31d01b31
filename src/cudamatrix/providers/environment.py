"""Deprecated path of `Environment` and `LibraryEnvironment`, which now live in
`cudamatrix.stages.cell.environment` (the cell side's own description of a prepared toolkit,
below the providers that make one). Kept so that a provider written outside this package
against the old path goes on working; importing it says where to import from instead."""

from __future__ import annotations

import warnings

from ..stages.cell.environment import Environment, LibraryEnvironment

__all__ = ["Environment", "LibraryEnvironment"]

warnings.warn("cudamatrix.providers.environment is deprecated: import Environment and "
              "LibraryEnvironment from cudamatrix.stages.cell.environment",
              DeprecationWarning, stacklevel=2)
