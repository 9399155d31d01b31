"""The package's structure (issue 24): no import cycle, imports inside functions and under
TYPE_CHECKING counted, as grimp (import-linter's graph) reads them; and pyproject.toml's
layer contracts, checked by `lint-imports` here in the unit lane (issue 80: it ran only
in `nox -s tests`, so a developer's unit run passed a broken layer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp

import cudamatrix

# The tree the tests import (this checkout's src, or a mutated copy: tests/mutations.py),
# and the repository whose pyproject.toml holds the contracts.
SOURCE = Path(cudamatrix.__file__).resolve().parents[1]
REPOSITORY = Path(__file__).resolve().parents[2]


def _module_edges(graph: grimp.ImportGraph) -> dict[str, list[str]]:
    return {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}


def _package_edges(graph: grimp.ImportGraph, within: str = "cudamatrix"
                   ) -> dict[str, list[str]]:
    """The entries directly under `within` (a package and all its modules as one) and
    which import which: the floors README's module map draws (`within` the whole package),
    or the groups of one package (stages/: cell, compile, inspect...)."""
    depth = within.count(".") + 2

    def top(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    def inside(module: str) -> bool:
        return module == within or module.startswith(within + ".")

    edges: dict[str, set[str]] = {}
    for module, imported in _module_edges(graph).items():
        if not inside(module):
            continue
        mine = edges.setdefault(top(module), set())
        mine.update(top(m) for m in imported if inside(m) and top(m) != top(module))
    return {m: sorted(e) for m, e in edges.items()}


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    modules = sorted(edges)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, at = work.pop()
            if at == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            for position in range(at, len(edges[node])):
                nxt = edges[node][position]
                if nxt not in index:
                    work += [(node, position + 1), (nxt, 0)]
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return found


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(_module_edges(grimp.build_graph("cudamatrix"))) == []


def test_no_import_cycle_between_its_packages() -> None:
    """Issue 39: counted between the top-level entries, every import counted, the packages
    form no cycle (8 of them did before the layout: audit, case_tables, corpus, diagnose,
    plan, results, stages, verdict)."""
    edges = _package_edges(grimp.build_graph("cudamatrix"))
    assert _cycles(edges) == []
    assert [m for m, e in edges.items() if "cudamatrix.commands" in e] == ["cudamatrix.cli"]


def test_no_import_cycle_between_the_stage_groups() -> None:
    """Issue 80: stages/compile imported inspect's kernel names and stages/inspect
    compile's log decoding, so neither group could be read, tested or moved without the
    other; the groups of stages/ form no cycle, each pair importing one way at most."""
    edges = {group: [m for m in imported if m != "cudamatrix.stages"]
             for group, imported in _package_edges(grimp.build_graph("cudamatrix"),
                                                   "cudamatrix.stages").items()
             if group != "cudamatrix.stages"}  # its __init__: the groups' map, no code
    assert _cycles(edges) == []


def test_the_import_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts (the floors, the stage groups' rules), run
    as `lint-imports` runs them, on this tree's source."""
    paths = [str(SOURCE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    done = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom importlinter.cli import lint_imports\n"
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=REPOSITORY, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_top_of_the_package_is_its_entry_points_errors_and_packages() -> None:
    """Issue 39: cli.py, __main__.py and errors.py beside the packages, nothing else."""
    import cudamatrix

    top = Path(cudamatrix.__file__).parent
    modules = sorted(p.name for p in top.glob("*.py"))
    packages = sorted(p.name for p in top.iterdir() if (p / "__init__.py").is_file())
    assert modules == ["__init__.py", "__main__.py", "cli.py", "errors.py"]
    assert packages == ["commands", "common", "config", "orchestrator", "providers", "record",
                        "reports", "stages"]
