"""The default a run uses is the declared one, for every key of case.toml and
cudamatrix.toml: the readers fill each declared default in once, into frozen specs whose
fields have no default of their own (stages/cell/specs.py), and no stage reads a key with
a default of its own. block, shared_opt_in, atol and seed were documented [1], false,
1e-8 and 0 while runs used [32], true, 1e-5 and 2024 (the values cases rely on, kept);
[variant.time]'s noise and max_seconds, and an integer array's range, had defaults only
in the GPU code."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from conftest import source_lines
from cudamatrix.config.corpus import Variant, load_case
from cudamatrix.config.declarations import (
    ARG,
    ARTIFACT,
    BUILD,
    CASE,
    LIBRARY,
    PROJECT,
    RESOURCES,
    RUN,
    TIME,
    VARIANT,
    Table,
    declared_defaults,
    json_schema,
)
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.project import read_project
from cudamatrix.stages.cell import specs
from cudamatrix.stages.cell.job import Job

SRC = Path(__file__).resolve().parents[2] / "src" / "cudamatrix"
KERNEL_CASE = """title = "t"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
[variant.run]
args = [{ name = "x", shape = [4], output = true }, { value = 2 },
        { name = "i", dtype = "int32", shape = [4] }]
[variant.time]
[[variant.artifact]]
contains = "ld"
[variant.resources]
max_registers = 64
"""
BUILD_CASE = """title = "b"
[[variant]]
name = "b"
frontend = "build"
[variant.build]
commands = ["true"]
"""
# Each spec and the table it is the typed form of (args: each [[variant.run.args]]).
SPECS: list[tuple[type[Any], Table, set[str]]] = [
    (specs.LaunchSpec, RUN, set()),
    (specs.ArgumentSpec, ARG, set()),
    (specs.TimingSpec, TIME, set()),
    (specs.ResourceBudget, RESOURCES, set()),
    (specs.BuildSpec, BUILD, set()),
]


def _same(declared: object) -> object:
    return tuple(declared) if isinstance(declared, list) else declared


def _case(tmp_path: Path, text: str) -> Variant:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "k.cu").write_text('extern "C" __global__ void k(float *x, int a, int *i) {}\n')
    (folder / "case.toml").write_text(text)
    return load_case(folder).variants[0]


@pytest.mark.parametrize(("spec", "table", "_"), SPECS, ids=lambda v: getattr(v, "title", ""))
def test_each_spec_has_a_field_a_key_and_no_default_of_its_own(
        spec: type[Any], table: Table, _: set[str]) -> None:
    fields = dataclasses.fields(spec)
    assert {f.name for f in fields} == set(table.names())
    assert [f.name for f in fields if f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING] == []


def test_the_readers_fill_every_declared_default(tmp_path: Path) -> None:
    variant = _case(tmp_path, KERNEL_CASE)
    assert variant.run is not None and variant.time is not None
    filled: list[tuple[Table, object]] = [(RUN, variant.run), (ARG, variant.run.args[2]),
                                          (TIME, variant.time)]
    for table, spec in filled:
        declared = declared_defaults(table)
        assert {k: getattr(spec, k) for k in declared} == {
            k: _same(v) for k, v in declared.items()}, table.title
    assert variant.artifacts[0].kind == ARTIFACT.key("in").default
    # The defaults that depend on the argument: a scalar is arg<N> and int32, an array float32.
    scalar, array = variant.run.args[1], variant.run.args[0]
    assert (scalar.name, scalar.dtype, array.dtype) == ("arg1", "int32", "float32")
    assert variant.run.args[2].range == tuple(ARG.key("range").default)
    assert declared_defaults(RUN)["block"] == [32] and RUN.key("shared_opt_in").default is True
    assert RUN.key("atol").default == 1e-5 and RUN.key("seed").default == 2024


def test_a_variant_and_a_build_take_the_declared_defaults(tmp_path: Path) -> None:
    variant = _case(tmp_path, BUILD_CASE)
    assert variant.build is not None
    assert {k: getattr(variant.build, k) for k in declared_defaults(BUILD)} == {
        k: _same(v) for k, v in declared_defaults(BUILD).items()}
    fields = {f.name: f.default for f in dataclasses.fields(Variant)}
    for key, default in declared_defaults(VARIANT).items():
        assert getattr(variant, key) == _same(default), key
        assert fields[key] == _same(default), key  # a Variant made in code, too


def test_a_case_and_a_project_take_the_declared_defaults(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "k.cu").write_text("")
    (tmp_path / "c" / "case.toml").write_text(KERNEL_CASE)
    case = load_case(tmp_path / "c")
    assert case.upstream == tuple(CASE.key("upstream").default)
    project = read_project(tmp_path / "cudamatrix.toml", {"known_bugs": True})
    declared = declared_defaults(PROJECT)
    assert project.cases == tuple(declared["cases"]) and project.known_bugs is True
    assert load_matrix(DEFAULT_MATRIX).default_tier == declared["default_tier"]
    own = read_project(tmp_path / "cudamatrix.toml", {
        "known_bugs": True, "libraries": {"mine": {"headers": True, "versions": ["1"]}}})
    assert "default_tier" not in own.overrides  # a matrix of your own keeps its own
    assert LIBRARY.key("headers").default is False


def test_the_schema_publishes_the_same_defaults() -> None:
    run = json_schema("case")["properties"]["variant"]["items"]["properties"]["run"]
    assert {k: run["properties"][k]["default"] for k in declared_defaults(RUN)} == \
        declared_defaults(RUN)


def test_a_job_carries_its_specs_to_the_worker_unchanged(tmp_path: Path) -> None:
    variant = _case(tmp_path, KERNEL_CASE)
    job = Job(cell_id="c", arch="sm_80", source="k.cu", frontend="nvrtc", workdir="w",
              timeout=1, artifacts=variant.artifacts, run=variant.run, time=variant.time,
              resources=variant.resources)
    assert Job.from_json(job.to_json()) == job


def test_no_stage_reads_a_case_key_with_a_default_of_its_own() -> None:
    """Outside the readers (config/), no `.get("<a declared key>", <default>)` on a case
    table or a frontend's options."""
    keys = {k.name for table in (RUN, ARG, TIME, RESOURCES, BUILD, VARIANT, ARTIFACT)
            for k in table.keys} | {"jitify", "enable_cooperative_groups"}
    pattern = re.compile(r"\b(run|time|build|budgets|resources|options|spec|settings|arg)"
                         rf"\.get\(\s*[\"']({'|'.join(map(re.escape, keys))})[\"']\s*,")
    assert source_lines(pattern, outside="config") == []


def test_a_settings_key_takes_its_kind_and_default_from_its_field() -> None:
    """Issue 80: a key that is a VariantSettings field wrote its type twice (`kind="string"`
    and `kernel: str | None`) and its default twice (`default=True` and `arch_flag: bool =
    True`); its declaration now reads both off the field, so the reader's check, the schema
    and the reference say what the worker receives. A field of no scalar type has no such
    key."""
    from cudamatrix.config.corpus import DECLARED_SETTINGS
    from cudamatrix.config.declarations import VARIANT, setting
    from cudamatrix.stages.cell.job import VariantSettings

    made = VariantSettings()
    hints = typing.get_type_hints(VariantSettings)
    # TOML's word for each scalar annotation, read here off the field (no list of keys: a
    # new setting is held to it by being declared).
    words = {str: "string", bool: "boolean", int: "integer", float: "number"}
    for name in DECLARED_SETTINGS:
        key = VARIANT.key(name)
        scalar, = (t for t in typing.get_args(hints[name]) or (hints[name],)
                   if t is not type(None))
        assert (key.kind, key.default) == (words[scalar], getattr(made, name)), name
        assert (setting(name, "").kind, setting(name, "").default) == (key.kind, key.default)
    with pytest.raises(TypeError, match=r"VariantSettings\.options: .* is not one scalar"):
        setting("options", "")
