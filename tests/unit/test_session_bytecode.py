"""The matrix session's bytecode where Python may not write any (issue 84).

`nox -s matrix` installs the package without pip's byte-compiling and compiles the modules
a run imports itself. With `PYTHONDONTWRITEBYTECODE=1` (many CI images set it) Python
keeps nothing it compiles as it imports, so that step is all a warm re-run has: these
tests run it into a bytecode folder of their own (PYTHONPYCACHEPREFIX) and check that a
run's imports then compile nothing from source.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load_noxfile() -> ModuleType:
    """The repository's noxfile, by its path (it is no package's module)."""
    spec = importlib.util.spec_from_file_location("noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


noxfile = _load_noxfile()
# What `python -v` says for a module compiled from its source, not read from bytecode.
FROM_SOURCE = re.compile(r"^# code object from '?(?P<path>[^'\n]+\.py)'?$", re.M)
# What a run imports: the command, the runner, every stage a worker runs, the reports.
A_RUNS_IMPORTS = ("import cudamatrix.cli, cudamatrix.commands.run, cudamatrix.orchestrator."
                  "runner, cudamatrix.stages.runtime.pipeline, cudamatrix.commands.publishing,"
                  " cudamatrix.reports.html, cudamatrix.reports.junit")


def _env(prefix: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(prefix))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def _compiled_from_source(code: str, env: dict[str, str]) -> list[str]:
    """The modules `code` compiled from source, the standard library's aside (its bytecode
    is installed with Python, outside the prefix these tests give)."""
    said = subprocess.run([sys.executable, "-v", "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    stdlib = sysconfig.get_paths()["stdlib"]
    return [path for path in FROM_SOURCE.findall(said.stderr)
            if not path.startswith(stdlib) or "site-packages" in path]


def test_a_runs_imports_compile_nothing_once_the_session_compiled_them(tmp_path: Path) -> None:
    env = _env(tmp_path / "bytecode")
    # Without the session's step, the variable keeps every module compiled from source.
    assert len(_compiled_from_source(A_RUNS_IMPORTS, env)) > 100
    subprocess.run([sys.executable, "-c", noxfile._IMPORT_EVERY_MODULE], env=env, check=True,
                   capture_output=True)
    assert _compiled_from_source(A_RUNS_IMPORTS, env) == []
    # `python -m cudamatrix` too: its __main__ is compiled, never imported (importing it
    # runs the command).
    kept = tmp_path / "bytecode" / str(ROOT / "src" / "cudamatrix").lstrip("/")
    assert list(kept.glob("__main__.*.pyc"))
    # Every module of the package, those this machine cannot import too (the GPU extra's):
    # one left without bytecode would be compiled again at every session's start.
    package = ROOT / "src" / "cudamatrix"
    missing = [str(source.relative_to(package)) for source in package.rglob("*.py")
               if "data" not in source.relative_to(package).parts
               and not list((kept / source.parent.relative_to(package)).glob(
                   f"{source.stem}.*.pyc"))]
    assert missing == []


def test_a_changed_module_counts_as_stale_until_compiled_again(tmp_path: Path) -> None:
    module = tmp_path / "changed.py"
    module.write_text("VALUE = 1\n")
    assert noxfile._bytecode_is_stale(module)  # never compiled
    import py_compile
    py_compile.compile(str(module))
    assert not noxfile._bytecode_is_stale(module)
    later = time.time() + 5
    os.utime(module, (later, later))  # edited after its bytecode was written
    assert noxfile._bytecode_is_stale(module)
