"""Every option of `cudamatrix run` defaults to what options.py says, environment variables
included: the command line and a `RunOptions()` made by the benchmark or a test cannot
disagree."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from cudamatrix.cli import build_parser
from cudamatrix.commands.selection import run_options
from cudamatrix.config.options import PROVIDER_ENV, RUNNER_LABEL_ENV, RunOptions, default

# Set from what the command line found (the project, the folder) or given a value here.
FROM_THE_PROJECT = {"matrix", "matrix_overrides", "corpus", "cache"}


@pytest.mark.parametrize("environment", [{}, {PROVIDER_ENV: "host", RUNNER_LABEL_ENV: "h100"}])
def test_run_defaults_are_the_options_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               environment: dict[str, str]) -> None:
    monkeypatch.chdir(tmp_path)  # no cudamatrix.toml above
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["run", "--corpus", str(tmp_path)])
    from_cli = run_options(args)
    from_code = RunOptions()
    for option in fields(RunOptions):
        if option.name not in FROM_THE_PROJECT:
            assert getattr(from_cli, option.name) == getattr(from_code, option.name), option.name
    assert from_cli.provider == environment.get(PROVIDER_ENV, "auto")
    assert from_cli.runner_label == environment.get(RUNNER_LABEL_ENV, "")


def test_default_of_an_unknown_option_is_refused() -> None:
    assert default("cell_timeout") == RunOptions().cell_timeout
    with pytest.raises(KeyError, match="no_such_option"):
        default("no_such_option")
