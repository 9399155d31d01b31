"""The unit lane is hermetic: each test has its own empty HOME and caches and none of the
tool's own environment variables. test_torch_pairing passed only on a machine whose
~/.cache/cudamatrix already held torch's answers, because the code under test read the
default cache; with nothing of the developer's machine to find, such a read fails here
instead of on the next developer's machine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudamatrix.config.options import (
    CACHE_ENV,
    COMPILE_CACHE_FROM_ENV,
    PROVIDER_ENV,
    RUNNER_LABEL_ENV,
)
from cudamatrix.stages.frontends.registry import PLUGINS_ENV

# The tool's variables a developer's shell may hold: each changes a default (the provider,
# the runner's label, the caches read, extra frontends) and is unset for every unit test.
TOOL_VARIABLES = (PROVIDER_ENV, RUNNER_LABEL_ENV, COMPILE_CACHE_FROM_ENV, PLUGINS_ENV)


@dataclass(frozen=True)
class Sandbox:
    """Where a unit test's process looks for the user's files: `home` ($HOME, made empty),
    `xdg_cache` ($XDG_CACHE_HOME) and `cache` ($CUDAMATRIX_CACHE, the tool's default
    cache), the last two not made, so that a test can tell whether anything wrote there."""

    home: Path
    xdg_cache: Path
    cache: Path


@pytest.fixture(autouse=True)
def sandbox(tmp_path_factory: pytest.TempPathFactory,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("sandbox")
    made = Sandbox(root / "home", root / "xdg-cache", root / "cudamatrix-cache")
    made.home.mkdir()
    monkeypatch.setenv("HOME", str(made.home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(made.xdg_cache))
    monkeypatch.setenv(CACHE_ENV, str(made.cache))
    for name in TOOL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield made
