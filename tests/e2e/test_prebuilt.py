"""--prebuilt: a run takes each cell's compile from an earlier run's folder (another
machine's, as the GPU runs do) and judges it again: the same verdicts, that run's
versions, and a cell it never built said so. Real NVRTC (the 12.4 and 13.0 wheels)."""

from __future__ import annotations

from pathlib import Path

from conftest import Run, cudamatrix, main_job_cache


def test_a_prebuilt_run_gives_the_earlier_runs_verdicts(tmp_path: Path) -> None:
    selection = ("--case", "smem-oversize", "--toolkit", "12.4", "--toolkit", "13.0",
                 "--arch", "sm_80")
    built = cudamatrix("run", *selection, out=tmp_path / "built")
    assert built.code == 0, built.output[-2000:]
    again = cudamatrix("run", *selection, "--toolkit", "12.9", "--prebuilt",
                       str(tmp_path / "built"), out=tmp_path / "again")
    before, after = built.cells(), again.cells()
    for cell_id, cell in before.items():
        assert (after[cell_id]["outcome"], after[cell_id]["message"]) == \
            (cell["outcome"], cell["message"]), cell_id
        assert after[cell_id]["versions"] == cell["versions"], cell_id
    missing = [c for i, c in after.items() if "/12.9/" in i]
    assert missing and all(c["outcome"] == "skip" and c["message"] ==
                           f"not built in {tmp_path / 'built'}" for c in missing)


def test_a_prebuilt_cells_machine_code_checks_and_kernel_name_are_judged_again(
        tmp_path: Path) -> None:
    """On the GPU machine a prebuilt cell's toolkit is never prepared: its `in = "cubin"`
    check still reads the SASS (the run's SASS tools), and its C++ kernel name is the one
    the compile recorded. It was a skip, "no cuobjdump in this environment"."""
    from conftest import write_case

    write_case(tmp_path / "c", "spills", """
        title = "a C++ kernel that spills under 32 registers"
        [[variant]]
        name = "capped"
        source = "k.cu"
        frontend = "nvrtc"
        flags = ["--maxrregcount=32"]
        kernel = "ns::spill<64>"
          [[variant.artifact]]
          in = "cubin"
          lacks = "STL|LDL"
          [[variant.expect]]
          outcome = "fail"
          stage = "inspect"
          match = "cubin contains"
        """, {"k.cu": "namespace ns {\ntemplate <int N> __global__ void spill(float *x) {\n"
                      "    float a[N];\n    for (int i = 0; i < N; i++) a[i] = x[i * threadIdx.x];"
                      "\n    float s = 0;\n    for (int i = 0; i < N; i++) "
                      "s += a[(i * 7 + threadIdx.x) % N] * a[i];\n    x[threadIdx.x] = s;\n}\n}\n"})
    selection = ("--corpus", str(tmp_path / "c"), "--toolkit", "13.0", "--arch", "sm_80")
    built = cudamatrix("run", *selection, out=tmp_path / "built")
    cell_id = "spills/capped/13.0/sm_80"
    assert built.cells()[cell_id]["outcome"] == "xfail", built.output[-2000:]
    again = cudamatrix("run", *selection, "--prebuilt", str(tmp_path / "built"),
                       out=tmp_path / "again")
    cell = again.cells()[cell_id]
    assert cell["outcome"] == "xfail" and "cubin contains" in cell["message"], cell["message"]
    assert cell["kernel"]["lowered"] == "_ZN2ns5spillILi64EEEvPf", cell["kernel"]


def test_a_prebuilt_shared_library_is_loaded_with_its_toolkits_runtime(
        tmp_path: Path, main_job: Run) -> None:
    """A host-entry case's libcase.so links its toolkit's CUDA runtime; on the GPU machine
    that takes it prebuilt, the toolkit is prepared by that machine's provider for it, so
    the library finds libcudart there (it was a skip there: "libcudart.so.12: cannot open
    shared object file"). CUTLASS's Hopper GEMM built by the 13.0 wheels' nvcc: the main
    job's compiles of these cells, libcase.so with them (this is about the prebuilt run,
    not the compile: two CUTLASS builds were 140 s of this test)."""
    from cudamatrix.orchestrator.cell_jobs import RUNTIME_FOR_LIBRARY

    selection = ("--known-bugs", "--case", "cutlass-sm90", "--toolkit", "13.0",
                 "--arch", "sm_90a")
    built = cudamatrix("run", *selection, "--no-gpu", "--compile-cache-from",
                       str(main_job_cache(main_job)), out=tmp_path / "built")
    assert built.code == 0, built.output[-2000:]
    libraries = sorted(p.parent.name for p in (tmp_path / "built" / "artifacts").glob(
        "*/libcase.so"))
    assert libraries, built.output[-2000:]
    again = cudamatrix("run", *selection, "--no-gpu", "--prebuilt", str(tmp_path / "built"),
                       out=tmp_path / "again")
    said = {cell_id: c["versions"].get(RUNTIME_FOR_LIBRARY)
            for cell_id, c in again.cells().items()}
    with_runtime = [v for v in said.values() if v is not None]
    assert len(with_runtime) == len(libraries), (said, libraries)
    assert set(with_runtime) == {"toolkit 13.0 (wheels)"}
    assert any(v is None for v in said.values())  # the bundled CUTLASS Python cells: none
    # Where the machine's provider cannot prepare the toolkit (the host provider pointed at
    # a folder with no CUDA in it), the cells go on as before: no runtime named, and no
    # environment error the run would blame the user for, since no cell needed it.
    (tmp_path / "no-cuda").mkdir()
    elsewhere = cudamatrix("run", *selection, "--no-gpu", "--provider", "host", "--prebuilt",
                           str(tmp_path / "built"), out=tmp_path / "elsewhere",
                           env={"CUDA_HOME": str(tmp_path / "no-cuda")})
    assert elsewhere.results["run"]["environment_errors"] == {}, elsewhere.output[-2000:]
    assert not any(c["versions"].get(RUNTIME_FOR_LIBRARY)
                   for c in elsewhere.cells().values())


def test_a_damaged_prebuilt_record_is_its_cells_error(tmp_path: Path) -> None:
    """Issue 50, point 6: --prebuilt read another machine's cells/ records with a raw
    json.loads beside the bounded readers: a damaged one was a traceback that ended the
    run. It is read as every record is, and a damaged one is that cell's error."""
    import json

    from conftest import ADD_KERNEL, TWO_COMPILERS_CASE, write_case

    write_case(tmp_path / "cases", "pre", TWO_COMPILERS_CASE, {"k.cu": ADD_KERNEL})
    args = ("run", "--corpus", str(tmp_path / "cases"), "--case", "pre", "--toolkit", "13.0",
            "--arch", "sm_80", "--no-gpu")
    built = cudamatrix(*args, out=tmp_path / "built")
    assert built.code == 0, built.output
    damaged = next((tmp_path / "built" / "cells").glob("pre__nvcc__*.json"))
    damaged.write_text(json.dumps({"id": 1, "stages": "x"}))
    again = cudamatrix(*args, "--prebuilt", str(tmp_path / "built"), out=tmp_path / "again")
    assert "Traceback" not in again.output, again.output[-2000:]
    cells = again.cells()
    assert cells["pre/nvcc/13.0/sm_80"]["outcome"] == "error"
    assert str(damaged) in cells["pre/nvcc/13.0/sm_80"]["message"]
    assert cells["pre/nvrtc-ptxas/13.0/sm_80"]["outcome"] == "pass"
