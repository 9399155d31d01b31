"""Every option of `cudamatrix run` defaults to what options.py says, environment variables
included: the command line and a `RunOptions()` made by the benchmark or a test cannot
disagree."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.cli import build_parser
from cudamatrix.commands.selection import run_options
from cudamatrix.config.flags import RunFlag, whole_number
from cudamatrix.config.options import PROVIDER_ENV, RUNNER_LABEL_ENV, RunOptions, default
from cudamatrix.errors import UserError

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


@pytest.mark.parametrize(("given", "said"), [
    ({"retries": -1}, "run option retries (--retries): must be 0 to 5"),
    ({"jobs": 0}, "run option jobs (--jobs): must be 1 to 4096, got '0'"),
    ({"cell_timeout": -5}, "run option cell_timeout (--cell-timeout): must be a positive "
                           "finite number, got '-5'"),
    ({"run_timeout": float("nan")}, "run option run_timeout (--run-timeout): must be a "
                                    "positive finite number"),
    ({"order": "bogus"}, "run option order (--order): 'bogus' is not one of cost, plan, "
                         "reversed"),
    ({"compile_strategy": "fast"}, "run option compile_strategy (--compile-strategy): 'fast' "
                                   "is not one of auto"),
    ({"host_compilers": ("gcc",)}, "run option host_compilers (--host-compiler): 'gcc' is "
                                   "not a host compiler program"),
    ({"jobs": "4"}, "run option jobs (--jobs): '4' is of type str, where --jobs gives int"),
    ({"toolkits": ["12.4"]}, "run option toolkits (--toolkit): ['12.4'] is of type list, "
                             "where --toolkit gives tuple"),
    ({"out": "reports"}, "run option out (--out): 'reports' is of type str, where --out "
                         "gives "),
    ({"gpu": 1}, "run option gpu (--no-gpu): 1 is not true or false"),
])
def test_options_are_checked_where_they_are_made(given: dict[str, Any], said: str) -> None:
    """Issue 80: only a flag's words were checked, so a `RunOptions` made in code (a
    benchmark's, a test's, a plugin's) ran with retries=-1 or jobs=0; each is refused as
    it is made, in one line naming the option and its flag, as the command line would."""
    with pytest.raises(UserError) as caught:
        RunOptions(**given)
    assert str(caught.value).startswith(said), str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(UserError):
        replace(RunOptions(), **given)  # options changed after they were made, likewise


def test_valid_options_made_in_code_are_kept() -> None:
    options = RunOptions(jobs=3, cell_timeout=60, order="plan", shard=(2, 4), tier=None,
                         library_versions={"torch": ("2.5.1",)}, toolkits=("12.4",))
    assert (options.jobs, options.cell_timeout, options.order) == (3, 60, "plan")


def test_each_variable_is_declared_once_on_its_flag(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 80: $CUDAMATRIX_PROVIDER was spelled three times in its one field (the
    default's reader, the help, the default in words), so a renamed variable would have
    been read under one name and documented under another. Each variable is now the
    flag's `environment`: the field reads it, and the help says it from there."""
    from cudamatrix.config.run_flags import RUN_FLAGS

    declared = {flag.field: flag for flag in RUN_FLAGS if flag.environment}
    assert set(declared) == {"provider", "cache", "compile_cache_from", "runner_label"}
    values = {"provider": "host", "cache": tmp_path / "c", "runner_label": "h100",
              "compile_cache_from": (tmp_path / "a", tmp_path / "b")}
    for name, flag in declared.items():
        assert flag.environment not in flag.help + flag.default_said, name
        assert f"${flag.environment}" in flag.shown_help, name
        value = values[name]
        monkeypatch.setenv(flag.environment, ":".join(map(str, value))
                           if isinstance(value, tuple) else str(value))
    made = RunOptions()
    assert {name: getattr(made, name) for name in declared} == values


def test_a_variable_the_flag_would_refuse_is_refused_naming_it() -> None:
    flag = RunFlag(("--workers",), "how many", "run", read=whole_number(1, 4),
                   environment="CUDAMATRIX_WORKERS")
    with pytest.raises(UserError, match=r"^\$CUDAMATRIX_WORKERS \(--workers's default\): "
                                        r"must be 1 to 4, got '9'$"):
        flag.environment_default({"CUDAMATRIX_WORKERS": "9"}, lambda: 1)
    assert flag.environment_default({}, lambda: 1) == 1
    assert flag.environment_default({"CUDAMATRIX_WORKERS": "3"}, lambda: 1) == 3


def test_the_tier_help_names_every_tier_the_matrix_declares() -> None:
    """`run --help` said "pr or nightly" after the gpu tier came (issue 82, item 10): the
    help is read from the matrix file that declares the tiers, never written by hand."""
    import argparse
    import tomllib

    from cudamatrix.config.defaults import DEFAULT_MATRIX

    declared = tomllib.loads(DEFAULT_MATRIX.read_text())
    commands = next(action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    for name in ("run", "plan", "list"):
        [tier] = [action for action in commands.choices[name]._actions
                  if "--tier" in action.option_strings]
        said = tier.help or ""
        assert all(f" {tier_name}" in said for tier_name in declared["tiers"]), (name, said)
        assert f"default_tier, {declared['default_tier']}" in said, (name, said)
