"""Nox sessions: thin wrappers over the `cudamatrix` command line.

    nox -s matrix                       # the default tier, writes reports/latest/
    nox -s matrix -- --toolkit 12.4 --arch sm_90a --case marlin-sm75 --out out/
    nox -s tests                        # ruff, mypy, pytest
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
    session.run("ruff", "check", "src", "tests", "noxfile.py")
    session.run("mypy")
    session.run("pytest", *session.posargs)
