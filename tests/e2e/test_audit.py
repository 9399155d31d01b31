"""`cudamatrix audit` on real wheels nobody here built (issue 13): torchao 0.18.0 and
bitsandbytes 0.50.2 from PyPI (downloaded once, cached), read with cuobjdump 13.5, predicted
for five GPUs under three drivers. The facts asserted here were read independently with
cuobjdump's own listing (`cuobjdump -lelf -lptx`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, cudamatrix
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.config.options import default_cache
from cudamatrix.providers.sass_tools import prepare_sass_tools
from cudamatrix.stages.binaries.facts import read_modules

GPUS = ("sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
DRIVERS = ("535", "550", "580")
MXFP8 = "torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl!" \
        "torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so"
CUTLASS_90A = "torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl!" \
              "torchao/_C_cutlass_90a.abi3.so"
BNB = "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl!bitsandbytes/"


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("audit")
    args = ["audit", "torchao==0.18.0", "bitsandbytes==0.50.2", "--no-measure"]
    for gpu in GPUS:
        args += ["--gpu", gpu]
    for driver in DRIVERS:
        args += ["--driver", driver]
    run = cudamatrix(*args, out=out, timeout=900)
    assert (out / "results.json").exists(), run.output[-3000:]
    return run


def _modules(run: Run, file: str) -> dict[str, dict[str, Any]]:
    """module name -> its facts (the inspect stage's details), from any of its cells."""
    found = {}
    for cell in run.cells().values():
        if cell["case"] == file:
            found[cell["variant"]] = cell["stages"][0]["details"]
    return found


def _images(facts: dict[str, Any], kind: str) -> list[str]:
    return sorted(i["arch"] for i in facts["images"] if i["kind"] == kind)


def test_facts_of_the_real_wheels(audit: Run) -> None:
    mxfp8 = _modules(audit, MXFP8)
    assert sorted(mxfp8) == ["module-1", "module-2", "module-3"]
    for facts in mxfp8.values():
        assert _images(facts, "sass") == ["sm_100"] and _images(facts, "ptx") == ["sm_120"]
        ptx = next(i for i in facts["images"] if i["kind"] == "ptx")
        sass = next(i for i in facts["images"] if i["kind"] == "sass")
        assert ptx["ptx_isa"] == "9.0" and ptx["kernels"] == sass["kernels"] > 0
        assert sass["toolkit"] == "13.0.88"
    cutlass = _modules(audit, CUTLASS_90A)
    assert len(cutlass) == 6
    assert all(_images(f, "sass") == ["sm_90a"] and not _images(f, "ptx")
               for f in cutlass.values())
    old = _modules(audit, BNB + "libbitsandbytes_cuda118.so")
    new = _modules(audit, BNB + "libbitsandbytes_cuda130.so")
    assert old and new
    old_archs = sorted({a for f in old.values() for a in _images(f, "sass")},
                       key=lambda a: int(a[3:]))
    new_archs = sorted({a for f in new.values() for a in _images(f, "sass")},
                       key=lambda a: int(a[3:]))
    assert old_archs[0] == "sm_60" and old_archs[-1] == "sm_90"
    assert new_archs[0] == "sm_75" and new_archs[-1] == "sm_120"
    assert not any(_images(f, "ptx") for f in [*old.values(), *new.values()])
    # Issue 61, point 2: CUDA 13.5's cuobjdump calls CUDA 12.1's fatbinary an "Invalid ELF"
    # (it was 32 error cells, "could not read it whole"); the newest of Debian's (12.5,
    # experimental) reads its 7 cubins.
    cuda121 = _modules(audit, BNB + "libbitsandbytes_cuda121.so")
    assert cuda121 and all(f["read_by"] == "cuobjdump 12.5 (Debian experimental)"
                           for f in cuda121.values()), cuda121
    assert sum(len(_images(f, "sass")) for f in cuda121.values()) == 7
    assert not any(c["outcome"] == "error" for c in audit.cells().values()
                   if c["case"].startswith(BNB + "libbitsandbytes_cuda121"))


def _outcome(run: Run, file: str, module: str, gpu: str, driver: str) -> dict[str, Any]:
    return run.cells()[f"{file}/{module}/{driver}/{gpu}"]


@pytest.mark.parametrize("gpu, driver, loads, via", [
    ("sm_80", "580", False, None), ("sm_86", "580", False, None),
    ("sm_90", "580", False, None),
    ("sm_100", "535", False, None), ("sm_100", "550", False, None),
    ("sm_100", "580", True, "sass"),
    ("sm_120", "550", False, None), ("sm_120", "580", True, "ptx-jit"),
])
def test_mxfp8_predictions(audit: Run, gpu: str, driver: str, loads: bool,
                           via: str | None) -> None:
    cell = _outcome(audit, MXFP8, "module-2", gpu, driver)
    assert cell["outcome"] == ("pass" if loads else "fail"), cell["message"]
    assert cell["stages"][1]["details"]["via"] == via


@pytest.mark.parametrize("gpu, driver, loads", [
    ("sm_90", "580", True), ("sm_90", "535", False), ("sm_80", "580", False),
    ("sm_100", "580", False), ("sm_120", "580", False),
])
def test_cutlass_90a_predictions(audit: Run, gpu: str, driver: str, loads: bool) -> None:
    cell = _outcome(audit, CUTLASS_90A, "module-1", gpu, driver)
    assert cell["outcome"] == ("pass" if loads else "fail"), cell["message"]
    if not loads and gpu == "sm_90":
        assert "built by CUDA 13.0.88" in cell["message"]


def test_bitsandbytes_predictions(audit: Run) -> None:
    cells = audit.cells().values()
    for name, fits, drivers in (("cuda118", {"sm_80", "sm_86", "sm_90"}, set(DRIVERS)),
                                ("cuda130", set(GPUS), {"580"})):
        mine = [c for c in cells if c["case"] == f"{BNB}libbitsandbytes_{name}.so"]
        assert mine
        for cell in mine:
            loads = cell["arch"] in fits and cell["toolkit"] in drivers
            assert (cell["outcome"] == "pass") == loads, (cell["id"], cell["message"])


def test_expected_gpus_gate_and_reports_are_written(tmp_path: Path) -> None:
    run = cudamatrix("audit", "torchao==0.18.0", "--no-measure", "--gpu", "sm_90",
                     "--gpu", "sm_100", "--driver", "580", "--expect-gpu", "sm_90",
                     out=tmp_path)
    assert run.code == 1  # _C_mxfp8 does not load on the expected sm_90
    cells = run.cells()
    assert cells[f"{MXFP8}/module-1/580/sm_90"]["outcome"] == "fail"
    assert cells[f"{CUTLASS_90A}/module-1/580/sm_100"]["outcome"] == "xfail"
    for name in ("COMPATIBILITY.md", "junit.xml", "report.html"):
        assert (tmp_path / name).exists()
    assert json.loads((tmp_path / "results.json").read_text())["run"]["tier"] == "audit"


def test_facts_agree_with_cuobjdumps_own_listing(tmp_path: Path) -> None:
    """The images read module by module are the ones cuobjdump -lelf -lptx lists for the
    whole library."""
    cuobjdump = prepare_sass_tools(default_cache(), InputLedger())
    assert cuobjdump
    wheel = next((default_cache() / "audit-wheels" / "torchao-0.18.0").glob("*.whl"))
    subprocess.run(["python3", "-m", "zipfile", "-e", str(wheel), str(tmp_path)], check=True)
    library = next(tmp_path.rglob("_C_mxfp8*.so"))
    listing = subprocess.run([cuobjdump, "-lelf", "-lptx", str(library)], capture_output=True,
                             text=True, check=False).stdout.split()
    listed = sorted((".".join(word.split(".")[-2:])) for word in listing
                    if word.endswith((".cubin", ".ptx")))
    modules = read_modules(library, "x", cuobjdump)
    ours = sorted(f"{i.arch}.{'cubin' if i.kind == 'sass' else 'ptx'}"
                  for m in modules for i in m.images)
    assert ours == listed and len(modules) == 3


def test_a_file_the_newest_cuobjdump_cannot_read_is_read_by_an_older_one(audit: Run) -> None:
    """bitsandbytes' libbitsandbytes_cuda121.so: its fatbinary holds 7 cubins; cuobjdump
    13.5 extracts the sm_60 one, then stops ('Invalid ELF'). It was an error, never a guess;
    it is now read whole by Debian 12.4's cuobjdump (issue 61, point 2) and judged from all
    7: it loads up to Hopper, not on Blackwell (no SASS of it, no PTX). A module no tool
    reads stays an error naming each tool (tests/unit/test_bounded_readers.py)."""
    cells = {c["id"].rpartition("!")[2]: c for c in audit.cells().values()
             if c["case"] == BNB + "libbitsandbytes_cuda121.so"}
    assert cells and {c["outcome"] for c in cells.values()} == {"pass", "fail"}
    assert cells["bitsandbytes/libbitsandbytes_cuda121.so/module-1/580/sm_90"]["outcome"] \
        == "pass"
    assert cells["bitsandbytes/libbitsandbytes_cuda121.so/module-1/580/sm_100"]["outcome"] \
        == "fail"


def test_compiled_cells_say_what_they_ship(tmp_path: Path) -> None:
    """Issue 13, point 5: the matrix's own builds get the same facts as a wheel's modules."""
    run = cudamatrix("run", "--case", "marlin-sm75", "--toolkit", "13.0", "--arch", "sm_80",
                     out=tmp_path)
    cell = run.cells()["marlin-sm75/arch-guard/13.0/sm_80"]
    ships = {i["kind"]: i for i in cell["stages"][0]["details"]["ships"]}
    assert ships["sass"]["arch"] == "sm_80" and ships["sass"]["kernels"] == 1
    assert ships["sass"]["toolkit"].startswith("13.0.")
    assert ships["ptx"]["ptx_isa"] == "9.0"
    assert "What the build ships" in (tmp_path / "report.html").read_text()


def test_relative_paths_read_the_same_images(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`cudamatrix audit --cache cache lib.so`, as typed in a project: cuobjdump runs in the
    scratch folder it extracts into, where relative paths named nothing (no images)."""
    cuobjdump = prepare_sass_tools(default_cache(), InputLedger())
    assert cuobjdump
    wheel = next((default_cache() / "audit-wheels" / "torchao-0.18.0").glob("*.whl"))
    subprocess.run(["python3", "-m", "zipfile", "-e", str(wheel), str(tmp_path)], check=True)
    library = next(tmp_path.rglob("_C_mxfp8*.so"))
    absolute = read_modules(library, "x", cuobjdump)
    monkeypatch.chdir(tmp_path)
    relative = read_modules(library.relative_to(tmp_path), "x",
                            os.path.relpath(cuobjdump, tmp_path))
    assert relative == absolute and sum(len(m.images) for m in relative) > 0
