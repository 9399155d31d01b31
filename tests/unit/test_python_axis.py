"""The python axis (issue 69, item 2): a tier's or a variant's `python` multiplies only the
cells whose frontend includes Python's headers (torch-extension), the installed one keeping
the id it had; `when`/`only`/exclude rows match it; a bad value is one line naming the file
and the key, exit status 2; Debian's Packages index read as Debian writes it; the compile
key and the load stage tell one Python's build from another's."""

from __future__ import annotations

import json
import shutil
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO, cudamatrix_in_process
from cudamatrix.config.plan import Cell
from cudamatrix.orchestrator.compile_cache import compile_key
from cudamatrix.providers.debian import package_stanza
from cudamatrix.providers.python_headers import ext_suffix, include_dirs, releases_listed
from cudamatrix.record.results import CellResult
from cudamatrix.reports.labels import row_label
from cudamatrix.stages.cell.environment import Environment, PythonHeaders
from cudamatrix.stages.cell.job import Job
from cudamatrix.stages.cell.result import StageResult
from cudamatrix.stages.cell.steps import Carried
from cudamatrix.stages.frontends.torch_extension import _ExtensionCell, built_for

TIER = '[tiers.pr]\ntoolkit = ["13.0"]\narch = ["sm_90"]\ntorch = ["2.9.1"]\n'
SCALE = "scale/scale/13.0/sm_90/torch-2.9.1"
NVRTC = "all-headers/nvrtc/13.0/sm_90"


def _project(tmp_path: Path, tier: str = "", variant: str = "") -> Path:
    """A project of two cases: torch-extension's scale (which includes Python's headers)
    and an NVRTC case (which does not), under a one-toolkit, one-arch tier."""
    cases = tmp_path / "cases"
    shutil.copytree(REPO / "tests/data/torch-extension/scale", cases / "scale")
    shutil.copytree(REPO / "tests/data/cases/all-headers", cases / "all-headers")
    if variant:
        case = cases / "scale" / "case.toml"
        case.write_text(case.read_text() + variant)
    (tmp_path / "cudamatrix.toml").write_text(f'cases = ["cases"]\n{TIER}{tier}')
    return tmp_path


def _listed(project: Path) -> list[str]:
    said = cudamatrix_in_process("list", cwd=project)
    assert said.code == 0, said.output
    return said.output.split()


def test_no_key_leaves_every_cell_as_it_was(tmp_path: Path) -> None:
    assert _listed(_project(tmp_path)) == [NVRTC, SCALE]


def test_a_tiers_pythons_multiply_only_the_cells_that_include_pythons_headers(
        tmp_path: Path) -> None:
    project = _project(tmp_path, 'python = ["installed", "3.13", "3.14"]\n')
    assert _listed(project) == [NVRTC, SCALE, f"{SCALE}/py3.13", f"{SCALE}/py3.14"]
    said = cudamatrix_in_process("list", "--json", cwd=project)
    pythons = {cell["id"]: cell["python"] for cell in json.loads(said.output)}
    assert pythons == {NVRTC: None, SCALE: None, f"{SCALE}/py3.13": "3.13",
                       f"{SCALE}/py3.14": "3.14"}


def test_a_variants_pythons_narrow_the_tiers(tmp_path: Path) -> None:
    tier = 'python = ["installed", "3.13", "3.14"]\n'
    assert _listed(_project(tmp_path / "a", tier, 'python = ["3.14", "3.15"]\n')) == [
        NVRTC, f"{SCALE}/py3.14"]
    # Without a tier's list, the variant's own are its cells.
    assert _listed(_project(tmp_path / "b", "", 'python = ["installed", "3.13"]\n')) == [
        NVRTC, SCALE, f"{SCALE}/py3.13"]


def test_when_only_and_exclude_match_python(tmp_path: Path) -> None:
    tier = 'python = ["installed", "3.13", "3.14"]\n'
    assert _listed(_project(tmp_path / "only", tier, 'only = { python = ">=3.14" }\n')) == [
        NVRTC, f"{SCALE}/py3.14"]
    assert _listed(_project(tmp_path / "installed", tier,
                            'only = { python = "installed" }\n')) == [NVRTC, SCALE]
    excluded = tier + '[[tiers.pr.exclude]]\npython = "3.13"\n'
    assert _listed(_project(tmp_path / "exclude", excluded)) == [
        NVRTC, SCALE, f"{SCALE}/py3.14"]
    cell = Cell("scale", "scale", "13.0", "sm_90", "torch-extension", "torch", "2.9.1",
                python="3.14")
    assert cell.axes()["python"] == "3.14"
    assert Cell("scale", "scale", "13.0", "sm_90", "torch-extension").axes()["python"] \
        == "installed"
    assert "python" not in Cell("k", "v", "13.0", "sm_90", "nvrtc").axes()


def test_an_expectation_is_chosen_by_python(tmp_path: Path) -> None:
    from cudamatrix.config.corpus import load_case

    project = _project(tmp_path, "", '[[variant.expect]]\nwhen = { python = "3.14" }\n'
                       'outcome = "fail"\nstage = "compile"\n')
    variant = load_case(project / "cases" / "scale").variants[0]
    newer = Cell("scale", "scale", "13.0", "sm_90", "torch-extension", "torch", "2.9.1",
                 python="3.14")
    installed = Cell("scale", "scale", "13.0", "sm_90", "torch-extension", "torch", "2.9.1")
    assert variant.expectation_for(newer.axes()).outcome == "fail"
    assert variant.expectation_for(installed.axes()).outcome == "pass"


@pytest.mark.parametrize(("tier", "said"), [
    ('python = "3.13"\n', "tiers.pr.python: expected a list of strings"),
    ('python = ["installed", "3.x"]\n', "tiers.pr.python: got '3.x'"),
    ('python = ["2.7"]\n', "tiers.pr.python: got '2.7'"),
    ('pythn = ["3.13"]\n', "tiers.pr: unknown key 'pythn'"),
])
def test_a_tiers_bad_python_is_one_line_and_status_2(tmp_path: Path, tier: str,
                                                     said: str) -> None:
    project = _project(tmp_path, tier)
    done = cudamatrix_in_process("list", cwd=project)
    assert done.code == 2
    assert done.output.strip() == done.output.strip().splitlines()[0]
    assert done.output.startswith(f"error: {project / 'cudamatrix.toml'}: {said}"), done.output


@pytest.mark.parametrize(("variant", "said"), [
    ('python = "3.13"\n', "variant 'scale'.python: expected a list of strings"),
    ('python = ["three"]\n', "variant 'scale'.python: got 'three'"),
    ('python = []\n', "variant 'scale'.python: give at least one"),
    ('only = { python = "x" }\n', "variant 'scale'.only.python: bad version specifier"),
])
def test_a_variants_bad_python_is_one_line_and_status_2(tmp_path: Path, variant: str,
                                                        said: str) -> None:
    project = _project(tmp_path, "", variant)
    done = cudamatrix_in_process("list", cwd=project)
    case = project / "cases" / "scale" / "case.toml"
    assert done.code == 2 and done.output.startswith(f"error: {case}: {said}"), done.output


def test_a_frontend_without_pythons_headers_refuses_the_key(tmp_path: Path) -> None:
    project = _project(tmp_path)
    case = project / "cases" / "all-headers" / "case.toml"
    case.write_text(case.read_text() + 'python = ["3.13"]\n')
    done = cudamatrix_in_process("list", cwd=project)
    assert done.code == 2
    assert done.output.startswith(f"error: {case}: variant 'nvrtc'.python: the nvrtc frontend "
                                  "includes no Python headers"), done.output


def _result(cell: Cell) -> CellResult:
    return CellResult(cell=cell, outcome="pass", stage="compile", reached="compile",
                      message="", reason="", expected="pass", diagnosis=None, stages=(),
                      seconds=1.0)


def test_a_cells_python_is_recorded_and_labelled() -> None:
    cell = Cell("scale", "scale", "13.0", "sm_90", "torch-extension", "torch", "2.9.1",
                python="3.13")
    result = _result(cell)
    again = CellResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.cell == cell and again.cell.id == f"{SCALE}/py3.13"
    assert row_label(cell) == "13.0 · torch 2.9.1 · Python 3.13"
    # A cell without the axis keeps the record it had: no python field.
    plain = _result(Cell("k", "v", "13.0", "sm_90", "nvrtc"))
    assert "python" not in plain.to_dict()


# Two stanzas of trixie's main/binary-amd64/Packages as Debian writes them (the shape of
# the 2026-11 index: the fields in its order, a folded Description, a blank line apart).
PACKAGES = """\
Package: libpython3.13
Source: python3.13
Version: 3.13.5-2+deb13u5
Installed-Size: 7465
Maintainer: Matthias Klose <doko@debian.org>
Architecture: amd64
Multi-Arch: same
Depends: libpython3.13-stdlib (= 3.13.5-2+deb13u5), libc6 (>= 2.38)
Description: Shared Python runtime library (version 3.13)
Homepage: https://www.python.org/
Description-md5: 0b5e9a47e1f2b0a0c9b2d27f1c4c7a91
Section: libs
Priority: optional
Filename: pool/main/p/python3.13/libpython3.13_3.13.5-2+deb13u5_amd64.deb
Size: 2250224
MD5sum: 4b1a3c1c3d1b1c8f9e0d3e7a6a7f0b11
SHA256: 5f0c3bd1d2b6b3e0e3e8a0a1ad6f0f9b0d7e2f8f6a9c1d3e4b5a6f7e8d9c0b1a

Package: libpython3.13-dev
Source: python3.13
Version: 3.13.5-2+deb13u5
Installed-Size: 27040
Maintainer: Matthias Klose <doko@debian.org>
Architecture: amd64
Multi-Arch: same
Depends: libpython3.13-stdlib (= 3.13.5-2+deb13u5), libpython3.13 (= 3.13.5-2+deb13u5)
Description: Header files and a static library for Python (v3.13)
Homepage: https://www.python.org/
Description-md5: 8c3a1d2f5e7b9a0c4d6e8f1a3b5c7d9e
Section: libdevel
Priority: optional
Filename: pool/main/p/python3.13/libpython3.13-dev_3.13.5-2+deb13u5_amd64.deb
Size: 5380456
MD5sum: 1a2b3c4d5e6f708192a3b4c5d6e7f809
SHA256: 0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c

Package: libpython3.14-dev-doc
Version: 3.14.0-1
Filename: pool/main/p/python3.14/libpython3.14-dev-doc_3.14.0-1_all.deb
"""


def test_a_packages_stanza_is_read_as_debian_writes_it() -> None:
    found = package_stanza(PACKAGES, "libpython3.13-dev")
    assert found is not None
    assert found["Version"] == "3.13.5-2+deb13u5"
    assert found["Filename"].endswith("libpython3.13-dev_3.13.5-2+deb13u5_amd64.deb")
    assert found["SHA256"].startswith("0d9c8b7a") and found["Section"] == "libdevel"
    # Not the runtime's stanza before it, nor a package whose name only starts alike.
    assert package_stanza(PACKAGES, "libpython3.14-dev") is None
    assert package_stanza(PACKAGES, "libpython3.13-dev", "3.12") is None
    assert releases_listed(PACKAGES) == ["3.13"]


def test_the_headers_folders_and_suffix_of_a_release() -> None:
    root = Path("/cache/debian/libpython3.13-dev")
    assert include_dirs(root, "3.13") == (
        "/cache/debian/libpython3.13-dev/usr/include/python3.13",
        "/cache/debian/libpython3.13-dev/usr/include/x86_64-linux-gnu/python3.13",
        # python3.13/pyconfig.h includes <x86_64-linux-gnu/python3.13/pyconfig.h>.
        "/cache/debian/libpython3.13-dev/usr/include")
    assert ext_suffix("3.14") == ".cpython-314-x86_64-linux-gnu.so"
    assert built_for(Path(f"scale_ext{ext_suffix('3.13')}")) == "3.13"
    assert built_for(Path("scale_ext.so")) is None


def _headers(version: str) -> PythonHeaders:
    return PythonHeaders(version, (f"/c/usr/include/python{version}",), ext_suffix(version),
                         f"libpython{version}-dev {version}.0-1 (forky)")


def test_two_cells_differing_only_in_python_share_no_compile(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    env = Environment(toolkit="13.0", provider="wheels", root=str(tmp_path),
                      packages={"nvidia-cuda-nvcc": "13.0.88"})
    job = Job(cell_id="c", arch="sm_90", source=str(tmp_path / "k.cu"),
              frontend="torch-extension", workdir=str(tmp_path / "w"), timeout=60, env=env)
    keys = {compile_key(job, "wheels", folders=[])}
    for version in ("3.13", "3.14"):
        keys.add(compile_key(Job(**{**job.__dict__, "python_headers": _headers(version)}),
                             "wheels", folders=[]))
    assert len(keys) == 3
    # Where the cache unpacked them is no input: the same release elsewhere, the same key.
    moved = PythonHeaders("3.13", ("/elsewhere/python3.13",), ext_suffix("3.13"),
                          _headers("3.13").package)
    assert compile_key(Job(**{**job.__dict__, "python_headers": moved}), "wheels",
                       folders=[]) == compile_key(
        Job(**{**job.__dict__, "python_headers": _headers("3.13")}), "wheels", folders=[])
    # The job crosses into the worker whole.
    sent = Job(**{**job.__dict__, "python_headers": _headers("3.13")})
    assert Job.from_json(sent.to_json()) == sent


def test_a_library_for_another_python_is_not_imported(tmp_path: Path) -> None:
    """The load stage says which Python the library was built for and that this one does
    not import it: a stage not run here (a skip), never a failure of the case."""
    other = "3.13" if not sysconfig.get_config_var("EXT_SUFFIX").startswith(".cpython-313") \
        else "3.14"
    library = tmp_path / f"scale_ext{ext_suffix(other)}"
    job = Job(cell_id="c", arch="sm_90", source=str(tmp_path / "scale.cu"),
              frontend="torch-extension", workdir=str(tmp_path), timeout=60,
              python_headers=_headers(other))
    built = StageResult("compile", "ok", details={"outputs": [str(library)]})
    said = _ExtensionCell(job).load_and_run(Carried(job, [built]))
    here = PythonHeaders.of_this_interpreter().version
    assert said == [StageResult("load", "skipped", f"built against Python {other}'s headers; "
                                f"this Python is {here}: not imported")]
