"""One nvcc for three archs, its log split per arch (stages/logs.split_nvcc_trace).

The log is nvcc 13.0's real `-v` output (tests/data/logs/nvcc-13.0-three-archs-verbose.log,
its cache and case folders shortened to /cache and /case) for a host-entry kernel built for
sm_80, sm_90 and sm_90a at once, whose source has a `#warning` under __CUDA_ARCH__ < 900:
only sm_80's device preprocessing printed it.
"""

from __future__ import annotations

from pathlib import Path

from cudamatrix.errors import Failure
from cudamatrix.stages.compile.logs import resource_usage, split_nvcc_trace, warning_lines

LOG = (Path(__file__).parents[1] / "data" / "logs" / "nvcc-13.0-three-archs-verbose.log"
       ).read_text()
ARCHS = ["sm_80", "sm_90", "sm_90a"]


def test_each_arch_gets_its_own_ptxas_figures_and_warnings() -> None:
    split = split_nvcc_trace(LOG, ARCHS)
    assert isinstance(split, tuple), split
    parts, last = split
    assert last is None  # the build ended in the link, every arch's step
    for arch in ARCHS:
        text = parts[arch]
        assert "#$" not in text
        assert f"for '{arch}'" in text
        assert [a for a in ARCHS if f"for '{a}'" in text] == [arch]
        assert len(resource_usage(text)) == 1
        warned = any("pre-Hopper path" in w for w in warning_lines(text))
        assert warned == (arch == "sm_80"), (arch, text)


def test_a_step_for_an_arch_not_asked_for_is_not_split() -> None:
    said = split_nvcc_trace(LOG, ["sm_80", "sm_90"])
    assert isinstance(said, Failure) and "90a" in said.reason


def test_nvcc_speaking_outside_its_steps_is_not_split() -> None:
    said = split_nvcc_trace("nvcc warning : something of its own\n" + LOG, ARCHS)
    assert isinstance(said, Failure) and "something of its own" in said.reason


def test_the_arch_whose_own_step_failed_is_named() -> None:
    """Cut where sm_90's device preprocessing is running (the step nvcc failed in, had
    it): that step is sm_90's by the macros nvcc gave it, sm_90a's by its own."""
    lines = LOG.splitlines()
    steps = [i for i, ln in enumerate(lines) if ln.startswith("#$ ") and "-D__CUDA_ARCH__=900"
             in ln and " -E " in ln]
    for index, arch in zip(steps, ("sm_90", "sm_90a"), strict=True):
        split = split_nvcc_trace("\n".join(lines[:index + 1]), ARCHS)
        assert isinstance(split, tuple), split
        assert split[1] == arch
