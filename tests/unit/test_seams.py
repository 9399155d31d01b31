"""The seams a newcomer must not have to keep in step by hand (issue 50): no module-level
ledger that a new provider or stage must remember to feed, no failure returned as a bare
string a caller could take for a value, stages/ grouped rather than flat."""

from __future__ import annotations

import ast
from pathlib import Path

import cudamatrix
from cudamatrix.common.up_to_date import InputLedger

PACKAGE = Path(cudamatrix.__file__).parent


def _sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "config/data" not in p.as_posix()]


def test_no_module_holds_a_ledger() -> None:
    """A module-level `InputLedger()` (or any call of it outside a function): what a run
    read would again depend on every provider and stage remembering to feed it."""
    held = []
    for path in _sources():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            for call in ast.walk(node) if not isinstance(
                    node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else ():
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith(
                        InputLedger.__name__):
                    held.append(f"{path.relative_to(PACKAGE)}:{call.lineno}")
    assert held == []


def _union(node: ast.expr) -> list[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union(node.left) + _union(node.right)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _union(ast.parse(node.value, mode="eval").body)
    return [ast.unparse(node)]


def test_no_function_returns_its_failure_as_a_string() -> None:
    """`-> Environment | str`: the string is why not, and nothing but a convention tells a
    caller so; errors.Failure says it in the type."""
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
                members = set(_union(node.returns))
                if "str" in members and members - {"str", "None"}:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert found == []


def test_stages_is_grouped() -> None:
    entries = [p.name for p in (PACKAGE / "stages").iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 14, sorted(entries)
    for group in (p for p in (PACKAGE / "stages").iterdir() if p.is_dir()
                  and p.name != "__pycache__"):
        doc = ast.get_docstring(ast.parse((group / "__init__.py").read_text())) or ""
        assert "May import" in doc, group.name
