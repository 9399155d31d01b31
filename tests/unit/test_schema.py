"""The JSON Schemas of case.toml and cudamatrix.toml (issue 51, point 3): made from the
declarations `validate` checks with, shipped in the package as they are made, satisfied
by every case and project this repository ships, and refusing an unknown key wherever
`validate` refuses it."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cudamatrix.config.corpus import load_case
from cudamatrix.config.declarations import CASE, PROJECT, json_schema, walk
from cudamatrix.config.defaults import KNOWN_BUGS
from cudamatrix.config.project import find_project, init_project
from cudamatrix.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "src" / "cudamatrix" / "config" / "data" / "schema"


def _validator(which: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(which)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("which", ["case", "project"])
def test_the_shipped_schema_is_the_declarations(which: str) -> None:
    shipped = json.loads((SHIPPED / f"{which}.json").read_text())
    assert shipped == json_schema(which), (
        f"config/data/schema/{which}.json is stale: cudamatrix schema {which} > "
        f"src/cudamatrix/config/data/schema/{which}.json")


def _shipped_cases(tmp_path: Path) -> list[Path]:
    (tmp_path / "starter").mkdir()
    init_project(tmp_path / "starter")
    realworld = ROOT / "tests" / "data" / "realworld" / "cases"
    return sorted([*KNOWN_BUGS.glob("*/case.toml"), *realworld.glob("*/case.toml"),
                   *(tmp_path / "starter").rglob("case.toml")])


def test_every_shipped_case_and_project_satisfies_its_schema(tmp_path: Path) -> None:
    cases = _shipped_cases(tmp_path)
    assert len(cases) >= 20
    case_schema = _validator("case")
    for path in cases:
        errors = [e.message for e in case_schema.iter_errors(tomllib.loads(path.read_text()))]
        assert errors == [], (path, errors)
    project_schema = _validator("project")
    for path in (ROOT / "cudamatrix.toml", tmp_path / "starter" / "cudamatrix.toml"):
        errors = [e.message for e in project_schema.iter_errors(tomllib.loads(path.read_text()))]
        assert errors == [], (path, errors)


MINIMAL_CASE = """\
title = "t"
[[variant]]
name = "v"
source = "k.cu"
frontend = "nvrtc"
kernel = "k"
"""
# Where each table of a case can be written, a minimal instance of it for the unknown key.
PLACES: dict[str, str] = {
    "case.toml": "bogus_key = 1\n" + MINIMAL_CASE,
    "variant": MINIMAL_CASE + "bogus_key = 1\n",
    # A when table's open keys are library names (the variant's, to validate): the schema
    # refuses what no library could be called.
    "variant.only": MINIMAL_CASE + 'only = { "bogus_key!" = "1" }\n',
    "variant.expect": MINIMAL_CASE + '[[variant.expect]]\noutcome = "pass"\nbogus_key = 1\n',
    "variant.artifact": MINIMAL_CASE + '[[variant.artifact]]\ncontains = "x"\nbogus_key = 1\n',
    "variant.run": MINIMAL_CASE + "[variant.run]\nbogus_key = 1\n",
    "variant.run.args": MINIMAL_CASE + "[variant.run]\n[[variant.run.args]]\nvalue = 1\n"
                                       "bogus_key = 1\n",
    "variant.resources": MINIMAL_CASE + "[variant.resources]\nbogus_key = 1\n",
    "variant.time": MINIMAL_CASE + "[variant.run]\ngrid = [1]\n[variant.time]\nbogus_key = 1\n",
    "variant.flags_if": MINIMAL_CASE + '[[variant.flags_if]]\nflags = ["-O3"]\nwhen = {}\n'
                                       "bogus_key = 1\n",
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_an_unknown_key_is_refused_by_the_schema_and_by_validate(place: str, tmp_path: Path
                                                                  ) -> None:
    text = PLACES[place]
    raw: Any = tomllib.loads(text)
    said = [e.message for e in _validator("case").iter_errors(raw)]
    assert any("bogus_key" in m for m in said), said
    case = tmp_path / "corpus" / "c"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(text)
    (case / "k.cu").write_text("__global__ void k() {}\n")
    with pytest.raises(UserError, match="bogus_key"):
        load_case(case)


def test_every_declared_table_of_a_case_is_placed() -> None:
    """The unknown-key test covers every table the declarations hold (a new table gets a
    place above, or this fails)."""
    tables = {place for place, table in walk(CASE) if table.extra is None}
    assert tables - set(PLACES) <= {"variant.time.max_slowdown", "variant.build"}


def test_an_unknown_project_key_is_refused_by_both(tmp_path: Path) -> None:
    (tmp_path / "cudamatrix.toml").write_text("known_bugs = true\nbogus_key = 1\n"
                                              "[tiers.pr]\nbogus_tier_key = 1\n")
    raw = tomllib.loads((tmp_path / "cudamatrix.toml").read_text())
    said = " ".join(e.message for e in _validator("project").iter_errors(raw))
    assert "bogus_key" in said and "bogus_tier_key" in said
    with pytest.raises(UserError, match="bogus_key"):
        find_project(tmp_path)
    assert {t.title for _, t in walk(PROJECT)} >= {"[tiers.NAME]", "[libraries.NAME]"}


def test_every_library_table_validate_accepts_the_schema_accepts(tmp_path: Path) -> None:
    """Issue 56, point 7: the built-in matrix's [libraries.*] tables (CCCL's `package` is a
    table of CUDA major = package), written into a project, pass `validate` and the schema
    alike: an editor never marks a file the tool takes."""
    import tomli_w

    from cudamatrix.config.declarations import LIBRARY
    from cudamatrix.config.defaults import DEFAULT_MATRIX

    matrix = tomllib.loads(DEFAULT_MATRIX.read_text())
    libraries = {name: {k: v for k, v in entry.items() if k in LIBRARY.names()}
                 for name, entry in matrix["libraries"].items()}
    assert isinstance(libraries["cccl"]["package"], dict)
    project = {"known_bugs": True, "libraries": libraries}
    errors = [e.message for e in _validator("project").iter_errors(project)]
    assert errors == [], errors
    (tmp_path / "cudamatrix.toml").write_text(tomli_w.dumps(project))
    done = subprocess.run([sys.executable, "-m", "cudamatrix", "validate"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # What neither takes: a package under a name that is no CUDA major.
    bad = {**project, "libraries": {"cccl": {**libraries["cccl"],
                                             "package": {"twelve": "nvidia-cuda-cccl-cu12"}}}}
    assert list(_validator("project").iter_errors(bad))
