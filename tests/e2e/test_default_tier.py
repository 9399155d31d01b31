"""The main job, as `nox -s matrix` runs it: the default tier with every seed case."""

from __future__ import annotations

from conftest import Run

SEED_CASES = {"wmma-jitify", "marlin-sm75", "smem-oversize", "cutlass-sm90", "cute-dsl-cache",
              "ptx-driver-jit", "launch-limits", "host-compiler-range"}


def test_default_tier(main_job: Run) -> None:
    run = main_job  # run once for the session (conftest.py), its cache read by other tests
    assert run.code == 0, run.output[-3000:]
    results = run.results
    assert results["run"]["tier"] == "pr"
    assert {c["case"] for c in results["cells"]} == SEED_CASES
    assert results["summary"]["error"] == 0 and results["summary"]["fail"] == 0
    cells = run.cells()
    silent = cells["cutlass-sm90/unguarded/13.0/sm_90/cutlass-4.2.0"]
    assert silent["outcome"] == "xfail" and silent["stage"] == "inspect"
    assert "lacks /wgmma" in silent["message"]
    # The case's own check, named as such with what it found (issue 71, point 4).
    assert silent["diagnosis"]["rule"] == "case-artifact-check"
    assert "lacks /wgmma" in silent["diagnosis"]["title"]
    assert cells["cutlass-sm90/unguarded/13.0/sm_90a/cutlass-4.2.0"]["outcome"] == "pass"
    guarded = cells["cutlass-sm90/arch-guarded/13.0/sm_90/cutlass-4.2.0"]
    assert guarded["outcome"] == "xfail" and guarded["stage"] == "compile"
    # 12.4's nvcc comes from Debian: CUTLASS's Hopper GEMM builds there; 12.9 has none.
    debian = cells["cutlass-sm90/unguarded/12.4/sm_90a/cutlass-4.2.0"]
    assert debian["outcome"] == "pass", debian["message"]
    assert debian["versions"]["nvcc"] == "12.4.131"  # recorded in the cell itself
    assert debian["versions"]["nvcc_from"].startswith("nvidia-cuda-toolkit 12.4.131")
    assert results["run"]["toolkits"]["12.4"]["tool_versions"]["nvcc"] == "12.4.131"
    nvcc_less = cells["cutlass-sm90/unguarded/12.9/sm_90a/cutlass-4.2.0"]
    assert nvcc_less["outcome"] == "skip" and "no nvcc" in nvcc_less["message"]
    dsl = cells["cute-dsl-cache/implicit-call/bundled/sm_90a/cute_dsl-4.8.1"]
    report = dsl["stages"][0]["details"]["report"]
    assert dsl["outcome"] == "pass" and report["cache_files_after_second"] == 1
    assert cells["cute-dsl-cache/cute-compile/bundled/sm_90a/cute_dsl-4.8.1"]["outcome"] == \
        "xfail"
    assert "reports:" in run.output
