"""Every mistake `nox -s mutations` makes on purpose still applies to the code as it is:
its text found exactly once in its file. A refactor that moved a line left an entry that
stopped the whole session at it (twice: the threads' waiting groups, a TLS handler), and
nothing ran that session to notice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_each_mutation_finds_its_text_once() -> None:
    spec = importlib.util.spec_from_file_location("mutations", REPO / "tests" / "mutations.py")
    assert spec is not None and spec.loader is not None
    mutations = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutations", mutations)  # its dataclass looks itself up there
    spec.loader.exec_module(mutations)
    stale = {m.name: (REPO / "src" / "cudamatrix" / m.path).read_text().count(m.old)
             for m in mutations.MUTATIONS}
    assert {name: found for name, found in stale.items() if found != 1} == {}
