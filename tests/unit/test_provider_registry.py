"""Providers by name, in one registry (providers/toolkits.py): the run makes its provider
from there, so a provider is one class and one line, never a string switched on."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudamatrix.cli import build_parser
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.errors import Failure
from cudamatrix.orchestrator.environments import Environments
from cudamatrix.orchestrator.executors.local import LocalExecutor
from cudamatrix.providers.toolkits import (
    CellSite,
    ExecutorChoice,
    ProviderSetting,
    toolkit_providers,
)
from cudamatrix.stages.cell.environment import Environment


class Quiet:
    def note(self, text: str) -> None:
        pass


class ToyToolkits:
    """A provider that has every toolkit, with nothing in it."""

    name, local, unwatched = "toy", True, ""

    def __init__(self, setting: ProviderSetting) -> None:
        self.cache = setting.cache

    def toolkit(self, version: str) -> Environment:
        # cuobjdump named, so the run does not fetch NVIDIA's for it (no network here).
        return Environment(toolkit=version, provider="toy", root=str(self.cache),
                           cuobjdump=str(self.cache / "cuobjdump"))

    def executor(self, site: CellSite) -> ExecutorChoice:
        return ExecutorChoice("local")

    def host_compiler(self, name: str) -> tuple[str, str] | Failure:
        return Failure(f"the toy has no {name}")


def test_a_provider_is_one_class_and_one_registry_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(toolkit_providers(), "toy", ToyToolkits)
    envs = Environments(load_matrix(DEFAULT_MATRIX), "toy", tmp_path, Quiet(),
                        ledger=InputLedger())
    got = envs.toolkit("12.4")
    assert isinstance(got, Environment) and got.provider == "toy" and got.root == str(tmp_path)
    said = envs.toolkit_provider.host_compiler("g++-11")
    assert envs.local and said == Failure("the toy has no g++-11")
    executor = envs.executor(CellSite(tmp_path, (), False))
    assert isinstance(executor, LocalExecutor)
    executor.close()
    # --provider offers what the registry holds.
    assert build_parser().parse_args(["run", "--provider", "toy"]).provider == "toy"


def test_the_docker_provider_asks_for_containers_the_run_can_make(tmp_path: Path) -> None:
    """A provider names its executor kind and options; the run makes it from the executors'
    registry. The docker provider's options must be what ContainerExecutor takes: a
    mismatch would show only where a Docker engine runs."""
    import inspect

    from cudamatrix.orchestrator.executors import EXECUTORS
    from cudamatrix.orchestrator.executors.containers import ContainerExecutor
    from cudamatrix.providers.toolkits import DockerToolkits

    provider = DockerToolkits(load_matrix(DEFAULT_MATRIX), tmp_path / "cache", tmp_path,
                              "wheels", lambda: object(), Quiet(), InputLedger(),
                              base_image=lambda: None, lifetime_s=60.0, compat=False)
    choice = provider.executor(CellSite(tmp_path / "out", (tmp_path,), False))
    assert choice.kind == "containers" and choice.kind in EXECUTORS
    # What make_executor hands ContainerExecutor: the client, then its keywords; no engine
    # answers here, so the signature is checked rather than a pool started.
    taken = set(inspect.signature(ContainerExecutor).parameters)
    assert set(choice.options) == taken, (sorted(choice.options), sorted(taken))


def test_the_old_path_of_environment_still_works_and_says_it_is_deprecated() -> None:
    """Issue 39: a provider written outside the package against
    `cudamatrix.providers.environment` (before the layout) keeps working, warned once."""
    import importlib
    import sys

    from cudamatrix.stages.cell import environment

    sys.modules.pop("cudamatrix.providers.environment", None)
    with pytest.warns(DeprecationWarning, match=r"cudamatrix\.stages\.cell\.environment"):
        old = importlib.import_module("cudamatrix.providers.environment")
    assert old.Environment is environment.Environment
    assert old.LibraryEnvironment is environment.LibraryEnvironment


def test_a_plugin_provider_gets_what_a_built_in_gets(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 59: a repro line named its provider only when it was wheels, docker or host,
    so a plugin's cell ran again with another provider; now any registered provider is
    named, and a record's "unknown" (a merge of shards) is not."""
    from cudamatrix.config.plan import Cell
    from cudamatrix.record.results import RunInfo
    from cudamatrix.reports.glance import repro

    monkeypatch.setitem(toolkit_providers(), "toy", ToyToolkits)
    cell = Cell("c", "v", "13.0", "sm_80", "nvrtc")
    info = RunInfo(started="", finished="", tier="pr", provider="toy", host="",
                   tool_version="", repro_args="--tier pr", repro_folder=str(tmp_path))
    words = repro(cell, info).split()
    assert words[words.index("--provider") + 1] == "toy"
    merged = RunInfo(started="", finished="", tier="pr", provider="unknown", host="",
                     tool_version="", repro_args="--tier pr", repro_folder=str(tmp_path))
    assert "--provider" not in repro(cell, merged)
    # A provider whose toolkits are not watched says so, whatever its name: the run is
    # never called up to date (the docker provider's images).
    ledger = InputLedger()
    monkeypatch.setattr(ToyToolkits, "unwatched", "toy images are not watched", raising=False)
    Environments(load_matrix(DEFAULT_MATRIX), "toy", tmp_path, Quiet(), ledger=ledger)
    assert ledger.refusals == ["toy images are not watched"]


def test_no_module_outside_providers_compares_a_providers_name() -> None:
    """A provider's abilities are its protocol's attributes (local, unwatched) and its
    environments' (from_wheels), never `provider == "wheels"` elsewhere."""
    import re

    from conftest import source_lines

    names = "wheels|docker|host|debian"
    pattern = re.compile(rf"provider\w*\s*(==|!=|in)\s*\(?[\"']({names})|"
                         rf"[\"']({names})[\"']\s*(==|!=)\s*[\w.]*provider")
    assert source_lines(pattern, outside="providers") == []
