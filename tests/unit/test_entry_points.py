"""The built-ins are declared as a plugin declares its own (issue 50, point 5):
pyproject.toml's entry points are the list a source tree without metadata falls back to,
and every one of them loads what its group needs."""

from __future__ import annotations

import tomllib
from pathlib import Path

from cudamatrix.commands.command import Command
from cudamatrix.common import plugins

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_declares_exactly_the_built_ins() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared == plugins.BUILT_IN


def test_every_built_in_loads_what_its_group_needs() -> None:
    from cudamatrix.stages.frontends import registered

    commands = plugins.load(plugins.COMMANDS)
    assert all(isinstance(c, Command) and c.name == n for n, c in commands.items())
    assert list(commands)[:3] == ["init", "run", "bisect"]  # --help's order, kept
    providers = plugins.load(plugins.PROVIDERS)
    assert set(providers) == {"wheels", "docker", "host"} and all(map(callable, providers.values()))
    assert {"nvrtc", "nvcc", "clang", "cupy", "cutlass", "cute-dsl", "cutlass-python",
            "cutlass-python-build", "build"} <= set(registered())
