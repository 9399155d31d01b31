"""Each unit test runs in a sandbox of its own (tests/unit/conftest.py): the user's HOME,
caches and the tool's environment variables are never what a test reads or writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudamatrix.config.options import RunOptions, default_cache
from unit.conftest import Sandbox


def test_the_default_cache_and_home_are_the_tests_own(sandbox: Sandbox) -> None:
    assert Path(os.path.expanduser("~")) == sandbox.home
    assert not any(sandbox.home.iterdir())
    assert default_cache() == RunOptions().cache == sandbox.cache
    assert not sandbox.cache.exists() and not sandbox.xdg_cache.exists()
    assert RunOptions().provider == "auto" and RunOptions().runner_label == ""


@pytest.mark.parametrize("turn", [1, 2])
def test_no_two_tests_share_a_sandbox(sandbox: Sandbox, turn: int) -> None:
    """The first turn's marker would be found by the second were the HOME shared."""
    marker = sandbox.home / "left-behind"
    assert not marker.exists()
    marker.write_text("a test's leftover")
