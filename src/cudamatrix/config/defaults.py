"""Where the tool's own data lies: inside the package, so it runs from any folder.

The default matrix (toolkits, archs, drivers, constraints, tiers), the known-bug corpus
and the container recipes travel with the installed package.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_MATRIX = DATA / "matrix.toml"
KNOWN_BUGS = DATA / "known-bugs"
CONTAINERS = DATA / "containers"
# A project's configuration file, found in the current folder or above.
CONFIG = "cudamatrix.toml"
# The folder of cases `cudamatrix init` writes (its help and its next steps name it too).
STARTER_CASES = "cudamatrix-cases"
# How many runs history.json keeps.
DEFAULT_HISTORY_RUNS = 20
