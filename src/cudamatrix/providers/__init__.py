"""Environment providers: where a toolkit's compilers come from.

``wheels`` (the embedded default) installs each toolkit from PyPI wheels into a
cache; ``docker`` builds an image per toolkit and runs the cells in it; ``host``
uses the system toolkit (``$CUDA_HOME`` or ``/usr/local/cuda``). All hand back the
same `Environment`, so stages never ask where it came from; each is a class behind one
protocol (`toolkits.ToolkitProvider`), which also says whether cells run on this machine,
gives the run its executor and finds a named host compiler; `toolkits.toolkit_providers()`
is the registry of them by name, from the `cudamatrix.providers` entry points.
"""

from __future__ import annotations

from ..stages.cell.environment import Environment, LibraryEnvironment

__all__ = ["Environment", "LibraryEnvironment"]
