"""A library environment's packages are the ones a cell imports (issue 15): CuPy 13 with
its NumPy 1.26 on a machine whose own NumPy 2 and SciPy sit in site-packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from cudamatrix.stages.process.library_path import library_first
library_first([sys.argv[1]], isolated=sys.argv[2] == "isolated")
import docker
try:
    import jinja2
    host_only = "importable"
except ImportError:
    host_only = "gone"
print(json.dumps({"docker": docker.__version__, "jinja2": host_only}))
"""


def _probe(library: Path, mode: str) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(library), mode],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def test_the_library_wins_and_an_isolated_cell_sees_nothing_else(tmp_path: Path) -> None:
    # A package this Python has too (docker, a dependency of the tool the stages never
    # import), in the version the library environment pinned.
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "__init__.py").write_text('__version__ = "pinned-by-library"\n')
    assert _probe(tmp_path, "isolated") == {"docker": "pinned-by-library", "jinja2": "gone"}
    # A case script's library (CuTe DSL) still reaches this Python's other packages.
    assert _probe(tmp_path, "shared") == {"docker": "pinned-by-library",
                                          "jinja2": "importable"}
