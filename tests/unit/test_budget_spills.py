"""A spill budget is judged by ptxas's figures, never passed unjudged (issue 69, point 4).

A built module's cubins record registers, stack and shared memory, not spills: the
torch-extension and build frontends read their figures with cuobjdump, so a
`max_spill_stores` budget found no figure and passed every kernel, mamba's selective-scan
forward spilling 56 bytes on sm_90 among them (checked on a lent H200 against ptxas run
by hand). The figures ptxas printed during the compile now join cuobjdump's, and a limit
with no figure is an error saying why.
"""

from __future__ import annotations

from cudamatrix.errors import Failure
from cudamatrix.stages.cell.specs import ResourceBudget
from cudamatrix.stages.compile.logs import PtxasFigures, cuobjdump_resource_usage
from cudamatrix.stages.inspect.budgets import judge_budget, with_ptxas_figures

SPILLS = "_Z4scanILi1EEvPf"
CLEAN = "_Z4scanILi0EEvPf"
# cuobjdump -res-usage of the linked library, in the shape it prints.
CUOBJDUMP = f"""
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function {SPILLS}:
  REG:168 STACK:56 SHARED:0 LOCAL:0 CONSTANT[0]:632 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function {CLEAN}:
  REG:159 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:632 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
# What ptxas -v printed compiling the file for sm_90, in the shape it prints.
PTXAS = f"""ptxas info    : 28 bytes gmem, 224 bytes cmem[4]
ptxas info    : Compiling entry function '{SPILLS}' for 'sm_90'
ptxas info    : Function properties for {SPILLS}
    56 bytes stack frame, 56 bytes spill stores, 56 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 632 bytes cmem[0]
ptxas info    : Compiling entry function '{CLEAN}' for 'sm_90'
ptxas info    : Function properties for {CLEAN}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 159 registers, used 1 barriers, 632 bytes cmem[0]
"""


def _budget(**limits: int) -> ResourceBudget:
    values: dict[str, int | None] = {"max_registers": None, "max_spill_stores": None,
                                     "max_spill_loads": None, "max_stack": None,
                                     "max_shared": None}
    values.update(limits)
    return ResourceBudget(kernel=None, **values)


def _ptxas() -> list[dict[str, object]]:
    figures = PtxasFigures()
    for line in PTXAS.splitlines():
        figures.feed(line)
    return figures.for_arch("sm_90")


def test_a_spill_limit_with_no_spill_figure_is_an_error_not_a_pass() -> None:
    built = cuobjdump_resource_usage(CUOBJDUMP)
    assert {r["kernel"] for r in built} == {SPILLS, CLEAN}
    judged = judge_budget(_budget(max_spill_stores=40), built, "cuobjdump -res-usage, sm_90")
    assert isinstance(judged, Failure)
    assert "max_spill_stores" in judged.reason and "ptxas" in judged.reason
    # The figures a cubin does record are judged as before.
    kept = judge_budget(_budget(max_registers=255), built, "cuobjdump -res-usage, sm_90")
    assert not isinstance(kept, Failure) and not kept.broken and len(kept.lines) == 2


def test_ptxas_spills_join_the_modules_figures_kernel_by_kernel() -> None:
    merged = with_ptxas_figures(cuobjdump_resource_usage(CUOBJDUMP), _ptxas())
    by_kernel = {r["kernel"]: r for r in merged}
    assert by_kernel[SPILLS]["spill_store_bytes"] == 56
    assert by_kernel[CLEAN]["spill_store_bytes"] == 0
    assert by_kernel[SPILLS]["registers"] == 168  # cuobjdump's own figures kept
    judged = judge_budget(_budget(max_spill_stores=40), merged, "cuobjdump and ptxas, sm_90")
    assert not isinstance(judged, Failure)
    assert len(judged.broken) == 1 and "56 bytes of spill stores > max_spill_stores 40" \
        in judged.broken[0]


def test_another_archs_ptxas_figures_are_not_taken() -> None:
    other = [{**r, "arch": "sm_89"} for r in _ptxas()]
    merged = with_ptxas_figures(cuobjdump_resource_usage(CUOBJDUMP), other)
    assert all("spill_store_bytes" not in r for r in merged)
