"""One reader of signed text, common/signed_text.py (issue 79, "a verified-text reader"):
what it hands on is what gpgv's signature check covered, and no module goes around it,
running gpgv itself or reading a release file's text that the reader did not give."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import cudamatrix
from cudamatrix.common.signed_text import SignatureRefused, verified_text
from debian_archive import Signer, needs_tools, throwaway_signer

PACKAGE = Path(cudamatrix.__file__).parent
READER = "common/signed_text.py"
# Programs that check a signature: run by the reader alone.
VERIFIERS = {"gpg", "gpg2", "gpgv", "gpgv2", "sqv", "sq"}
# What names a signed document's text: Debian's clearsigned release file, and the armour of
# any clearsigned document.
SIGNED_NAMES = ("InRelease", "-----BEGIN PGP")
READER_CALL = "verified_text"


@pytest.fixture(scope="module")
def signer() -> Iterator[Signer]:
    needs_tools()
    with throwaway_signer() as made:
        yield made


def test_the_text_handed_on_is_gpgvs_not_the_files(signer: Signer) -> None:
    """A dash-escaped line comes back unescaped: gpgv's --output, not the file's bytes."""
    signed = signer.clearsign(b"Suite: test\n-----not armour\n")
    assert b"- -----not armour" in signed
    assert verified_text(signed, signer.keyring, "the test's") == \
        "Suite: test\n-----not armour\n"


@pytest.mark.parametrize(("change", "why"), [
    (lambda s: b"Suite: forged\n" + s, "text before its signed block"),
    (lambda s: s + b"Suite: forged\n", "text after its signature"),
    (lambda s: s + s, "not one signed block"),
    (lambda s: s.replace(b"Suite: test", b"Suite: tesT"), "failed its signature check"),
])
def test_anything_the_signature_does_not_cover_is_refused(signer: Signer, change: object,
                                                          why: str) -> None:
    signed = signer.clearsign(b"Suite: test\n")
    with pytest.raises(SignatureRefused, match=why) as refused:
        verified_text(change(signed), signer.keyring, "the test's")  # type: ignore[operator]
    assert "\n" not in str(refused.value)


def test_another_keys_signature_is_refused(signer: Signer, tmp_path: Path) -> None:
    with throwaway_signer() as other:
        signed = other.clearsign(b"Suite: test\n")
    with pytest.raises(SignatureRefused, match="failed its signature check"):
        verified_text(signed, signer.keyring, "the test's")


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "config/data" not in path.as_posix():
            yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the constants that are docstrings: words, never read."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                     ast.Constant):
                found.add(id(body[0].value))
    return found


def _inside(tree: ast.AST, kinds: tuple[type, ...], test: object = None) -> set[int]:
    """The ids of every node below a node of `kinds` (for which `test` holds, if given)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, kinds) and (test is None or test(node)):  # type: ignore[operator]
            found.update(id(below) for below in ast.walk(node))
    return found


def _called(node: ast.Call) -> str:
    return ast.unparse(node.func).rpartition(".")[2]


def _names_signed_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
        name in node.value for name in SIGNED_NAMES)


def _function_reads_only_through_the_reader(function: ast.FunctionDef) -> bool:
    """A function that fetches a signed document hands what it fetched to the reader alone
    and returns only what the reader gave."""
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(r.value, ast.Call) and _called(r.value) == READER_CALL
                              for r in returns):
        return False
    held = {target.id for node in ast.walk(function) if isinstance(node, ast.Assign)
            and any(_names_signed_text(n) for n in ast.walk(node.value))
            for target in node.targets if isinstance(target, ast.Name)}
    into_reader = _inside(function, (ast.Call,), lambda c: _called(c) == READER_CALL)
    return all(id(n) in into_reader for n in ast.walk(function)
               if isinstance(n, ast.Name) and n.id in held and isinstance(n.ctx, ast.Load))


def bypasses(sources: Iterator[tuple[str, ast.Module]]) -> list[str]:
    """Where a module runs a signature checker or reads a signed document's text around the
    one reader, as ``path:line: why``."""
    found = []
    for where, tree in sources:
        if where == READER:
            continue
        words = _docstrings(tree) | _inside(tree, (ast.Raise,))  # messages, never read
        into_reader = _inside(tree, (ast.Call,), lambda c: _called(c) == READER_CALL)
        functions = {id(n): f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                     for n in ast.walk(f)}  # the innermost is walked last: it wins
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if node.value.strip() in VERIFIERS and id(node) not in words:
                found.append(f"{where}:{node.lineno}: runs {node.value.strip()}")
            elif _names_signed_text(node) and id(node) not in words | into_reader:
                function = functions.get(id(node))
                if function is None or not _function_reads_only_through_the_reader(function):
                    found.append(f"{where}:{node.lineno}: reads {node.value!r} around "
                                 f"{READER_CALL}")
    return found


def test_no_module_reads_signed_text_around_the_reader() -> None:
    assert bypasses(_sources()) == []


BYPASSES = {
    "gpgv run by another module": """
        def check(path):
            return run_preparation(["gpgv", "--keyring", "k.gpg", str(path)])
        """,
    "the file read after the reader checked it": """
        def release(suite):
            signed = _fetch(f"{ARCHIVE}/dists/{suite}/InRelease", 1, "x")
            verified_text(signed, KEYRING, "x")
            return signed.decode()
        """,
    "the raw answer searched beside the reader's text": """
        def release(suite):
            signed = _fetch(f"{ARCHIVE}/dists/{suite}/InRelease", 1, "x")
            found = re.search("x", signed.decode())
            return verified_text(signed, KEYRING, "x")
        """,
    "the armour cut off by hand": """
        def text(signed):
            return signed.split("-----BEGIN PGP SIGNATURE-----")[0]
        """,
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_a_bypass_in_a_scratch_module_is_found(name: str) -> None:
    """The walk is shown to fail: each bypass, put in a module of its own, is named."""
    import textwrap

    tree = ast.parse(textwrap.dedent(BYPASSES[name]))
    assert bypasses(iter([("providers/scratch.py", tree)])) != [], name
