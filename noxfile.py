"""Nox sessions: thin wrappers over the `cudamatrix` command line.

    nox -s matrix                       # the default tier, writes reports/latest/
    nox -s matrix -- --toolkit 12.4 --arch sm_90a --case marlin-sm75 --out out/
    nox -s tests                        # ruff, mypy, pytest
    nox -s bench -- --write             # benchmark against the plain compiler loop
"""

from __future__ import annotations

import nox

nox.options.sessions = ["matrix"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def matrix(session: nox.Session) -> None:
    """Expand the matrix, run every cell, write results.json, COMPATIBILITY.md, junit.xml."""
    session.install("-e", ".")
    session.run("cudamatrix", "run", *session.posargs)


@nox.session
def validate(session: nox.Session) -> None:
    """Check matrix/matrix.toml and the corpus without running anything."""
    session.install("-e", ".")
    session.run("cudamatrix", "validate", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Lint, type-check and run the test suite (GPU tests skip without a GPU)."""
    session.install("-e", ".[test]")
    session.run("ruff", "check", "src", "tests", "bench", "noxfile.py")
    session.run("mypy")
    session.run("pytest", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Time set-up, cold and warm runs against the plain compiler loop (bench/RESULTS.md)."""
    session.install("-e", ".", "nox")
    session.run("python", "bench/bench.py", *session.posargs)
