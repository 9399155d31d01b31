"""Header libraries as an axis of any frontend (issue 37): `[libraries.NAME] headers = true`
in matrix.toml or a project's cudamatrix.toml, named by a variant (`libraries = ["cccl"]`)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from cudamatrix.config.corpus import load_case
from cudamatrix.config.defaults import DEFAULT_MATRIX
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.plan import expand
from cudamatrix.errors import UserError

CASE = """title = "a kernel over CCCL releases"
[[variant]]
name = "v"
source = "k.cu"
frontend = "{frontend}"
libraries = {libraries}
only = {{ {only} }}
  [[variant.expect]]
  when = {{ {when} }}
  outcome = "fail"
"""


def _case(tmp_path: Path, frontend: str = "nvrtc", libraries: str = '["cccl"]',
          only: str = 'cccl = ">=13.0"', when: str = 'cccl = "<13.1"') -> Path:
    folder = tmp_path / "k"
    folder.mkdir(exist_ok=True)
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    (folder / "case.toml").write_text(CASE.format(frontend=frontend, libraries=libraries,
                                                  only=only, when=when))
    return folder


def test_cccl_is_a_header_library_of_the_default_matrix() -> None:
    cccl = load_matrix(DEFAULT_MATRIX).libraries["cccl"]
    assert cccl.headers
    # A release's package is the one of its own CUDA major.
    assert cccl.package_of("12.9.27") == "nvidia-cuda-cccl-cu12"
    assert cccl.package_of("13.1.115") == "nvidia-cuda-cccl"
    assert cccl.package_for(12) == "nvidia-cuda-cccl-cu12"


def test_a_variant_naming_it_gets_a_cell_per_release_its_when_can_select(
        tmp_path: Path) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    case = load_case(_case(tmp_path))
    cells = expand(matrix, matrix.tiers["nightly"], [case], toolkits=["13.0"], archs=["sm_90a"],
                   cache=tmp_path / "cache")
    versions = sorted(c.library_version or "" for c in cells)
    assert versions == ["13.0.85", "13.1.115", "13.2.86", "13.3.5.0.6"]
    assert {c.library for c in cells} == {"cccl"}
    assert cells[0].id.endswith(f"/cccl-{cells[0].library_version}")
    variant = case.variants[0]
    old = next(c for c in cells if c.library_version == "13.0.85")
    new = next(c for c in cells if c.library_version == "13.1.115")
    assert variant.expectation_for(old.axes()).outcome == "fail"
    assert variant.expectation_for(new.axes()).outcome == "pass"


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"frontend": "cutlass"}, "has its own library axis (cutlass)"),
    ({"libraries": '["cccl", "other"]'}, "one header library a variant"),
    ({"libraries": '["Bad-Name"]'}, "is not a library's name"),
    ({"libraries": "[]", "only": 'cccl = ">=13"'}, "unknown key 'cccl'"),
])
def test_what_a_case_may_not_say(tmp_path: Path, kwargs: dict[str, str], said: str) -> None:
    with pytest.raises(UserError, match=re.escape(said)) as caught:
        load_case(_case(tmp_path, **kwargs))
    assert "case.toml" in str(caught.value)


def test_an_unknown_library_is_named_with_the_case(tmp_path: Path) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    case = load_case(_case(tmp_path, libraries='["flashinfer"]', only='flashinfer = ">=0.7"',
                           when='flashinfer = "<0.7.2"'))
    with pytest.raises(UserError, match=r"case.toml: variant 'v'.libraries: unknown library "
                                        r"'flashinfer' \(header libraries of matrix.toml: cccl"):
        expand(matrix, matrix.tiers["pr"], [case], toolkits=["13.0"], archs=["sm_90a"],
               cache=tmp_path / "cache")
    with pytest.raises(UserError, match="cutlass is not a header library"):
        expand(matrix, matrix.tiers["pr"],
               [load_case(_case(tmp_path, libraries='["cutlass"]', only='cutlass = ">=4"',
                                when='cutlass = "<4"'))], toolkits=["13.0"], archs=["sm_90a"],
               cache=tmp_path / "cache")


def test_a_project_declares_its_own(tmp_path: Path) -> None:
    """A project's cudamatrix.toml adds a header library of its own; one no frontend
    brings must say it is one."""
    overrides = {"libraries": {"flashinfer": {"headers": True, "package": "flashinfer-python",
                                              "versions": ["0.7.1", "0.7.2"],
                                              "include": ["flashinfer/data/include"]}}}
    matrix = load_matrix(DEFAULT_MATRIX, overrides)
    library = matrix.libraries["flashinfer"]
    assert library.headers and library.include == ("flashinfer/data/include",)
    assert matrix.tiers["pr"].libraries["flashinfer"] == ("0.7.1", "0.7.2")
    case = load_case(_case(tmp_path, libraries='["flashinfer"]', only='flashinfer = ">=0.7"',
                           when='flashinfer = "<0.7.2"'))
    cells = expand(matrix, matrix.tiers["pr"], [case], toolkits=["13.0"], archs=["sm_90a"],
                   cache=tmp_path / "cache")
    assert sorted(c.library_version or "" for c in cells) == ["0.7.1", "0.7.2"]



def test_a_project_library_without_headers_is_a_build_variants_python_package(
        tmp_path: Path) -> None:
    """A project's library that is not headers is a Python package installed for the cell
    (a torch wheel a setup.py builds against): a build variant names it and gets a cell
    per version; a kernel variant naming it is refused in one line saying why."""
    wheel = {"libraries": {"torch_wheel": {"package": "torch", "versions": ["2.9.1"]}}}
    matrix = load_matrix(DEFAULT_MATRIX, wheel)
    assert not matrix.libraries["torch_wheel"].headers
    kernel = load_case(_case(tmp_path, libraries='["torch_wheel"]', only='arch = "sm_90a"',
                             when='torch_wheel = "2.9.1"'))
    with pytest.raises(UserError, match=r"torch_wheel is a Python package .*only a build "
                                        r"variant"):
        expand(matrix, matrix.tiers["pr"], [kernel], toolkits=["13.0"], archs=["sm_90a"],
               cache=tmp_path / "cache")
    build = tmp_path / "b"
    build.mkdir()
    (build / "case.toml").write_text(
        'title = "t"\n[[variant]]\nname = "v"\nfrontend = "build"\n'
        'libraries = ["torch_wheel"]\n  [variant.build]\n'
        '  commands = ["{python} setup.py build_ext"]\n  outputs = ["*.so"]\n')
    tier = replace(matrix.tiers["pr"], libraries={**matrix.tiers["pr"].libraries,
                                                  "torch_wheel": ("2.9.1",)})
    cells = expand(matrix, tier, [load_case(build)], toolkits=["12.4"], archs=["sm_90"],
                   cache=tmp_path / "cache")
    assert [(c.library, c.library_version) for c in cells] == [("torch_wheel", "2.9.1")]


def test_the_toolkits_own_is_a_value_of_the_axis(tmp_path: Path) -> None:
    """`cccl-toolkit`: the toolkit's own CCCL, beside the releases; `when = { cccl =
    "toolkit" }` selects it alone, and no version specifier does."""
    matrix = load_matrix(DEFAULT_MATRIX)
    case = load_case(_case(tmp_path, only='arch = "sm_90a"', when='cccl = "toolkit"'))
    cells = expand(matrix, matrix.tiers["nightly"], [case], toolkits=["13.0"], archs=["sm_90a"],
                   cache=tmp_path / "cache")
    own = next(c for c in cells if c.library_version == "toolkit")
    assert own.id.endswith("/cccl-toolkit")
    variant = case.variants[0]
    assert variant.expectation_for(own.axes()).outcome == "fail"
    assert all(variant.expectation_for(c.axes()).outcome == "pass" for c in cells if c != own)
    later = load_case(_case(tmp_path, only='cccl = ">=13.0"', when='cccl = "<13.1"'))
    assert "toolkit" not in {c.library_version for c in expand(
        matrix, matrix.tiers["nightly"], [later], toolkits=["13.0"], archs=["sm_90a"],
        cache=tmp_path / "cache")}
