"""A plugin's names are checked against the built-ins' and each other's, whatever its entry
point is called (issue 57, point 12), and everything a plugin can raise is one line, exit 2
(points 14-22): a frontend named "nvcc" silently replaced nvcc (every nvcc cell passed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudamatrix.errors import UserError
from cudamatrix.stages.frontends import registry
from cudamatrix.stages.frontends.registry import Frontend, register, registered


def _compile(job: object) -> object:
    raise AssertionError("never run")


def _other(job: object) -> object:
    raise AssertionError("never run")


def test_a_plugin_frontend_cannot_take_a_built_in_name() -> None:
    nvcc = registered()["nvcc"]
    with pytest.raises(UserError, match=r"frontend 'nvcc' of .*: the name is "):
        register(Frontend("nvcc", compile=_compile))
    assert registered()["nvcc"] is nvcc


def test_two_plugins_of_one_name_are_refused_not_ordered() -> None:
    register(Frontend("toy-twice", compile=_compile))
    try:
        register(Frontend("toy-twice", compile=_compile))  # the same again: no harm
        with pytest.raises(UserError, match="toy-twice"):
            register(Frontend("toy-twice", compile=_other))
    finally:
        registry._REGISTERED.pop("toy-twice", None)


def test_a_frontend_with_neither_compile_nor_steps_is_one_line() -> None:
    with pytest.raises(UserError, match="give exactly one of compile or steps"):
        register(Frontend("toy-empty"))


def test_a_frontends_module_raising_anything_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "raising_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    done = subprocess.run([sys.executable, "-m", "cudamatrix", "validate", "--known-bugs"],
                          cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path),
                               "CUDAMATRIX_FRONTENDS": "raising_plugin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "raising_plugin" in done.stderr and "RuntimeError: boom at import" in done.stderr
    assert "Traceback" not in done.stderr
