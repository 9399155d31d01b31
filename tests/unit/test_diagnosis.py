"""Every diagnosis rule against real logs: each sample in tests/data/logs/ is a cell's decisive
stage exactly as a real compile or run left it (collect.py says how they are kept)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudamatrix.record.diagnose import UNCLASSIFIED, diagnose_stage, rules
from cudamatrix.stages.cell.result import StageResult

LOGS = Path(__file__).parents[1] / "data" / "logs"
SAMPLES = sorted(LOGS.glob("*.json"))
# Rules no real log could be captured for yet, and why.
NO_SAMPLE = {
    "invalid-kernel-image": "CuPy 14.2 on the H100 reports ptxas's own words through its "
                            "cooperative-groups path; the vague driver error needs an older CuPy",
    "device-assert-unsaid": "every assert captured on the H100 came with its process output "
                            "(file, line, condition), which device-assert reads",
    "misaligned-address": "the faults corpus's misaligned store is newer than its last GPU run",
}


def _sample(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_real_log_gets_its_rule(path: Path) -> None:
    sample = _sample(path)
    stage = StageResult(**sample["stage"])
    diagnosis = diagnose_stage(sample["message"], stage, sample.get("arch_reached"))
    assert diagnosis.rule == sample["rule"], (sample["cell"], diagnosis.evidence)
    if diagnosis.rule == UNCLASSIFIED:
        # Never hidden: the decisive line is shown as the evidence.
        assert diagnosis.evidence == sample["message"] and sample["message"]
    else:
        assert diagnosis.explanation and diagnosis.fix


def test_every_rule_has_a_real_sample() -> None:
    sampled = {_sample(p)["rule"] for p in SAMPLES}
    names = {r.name for r in rules()}
    assert names - sampled == set(NO_SAMPLE), "rules without a captured log"
    assert UNCLASSIFIED in sampled


def _diagnosed(name: str, message: str | None = None) -> tuple[dict, object]:
    """A kept sample's diagnosis, its message replaced where a test says what a cut or
    another folder would have left of it."""
    sample = _sample(LOGS / f"{name}.json")
    stage = StageResult(**sample["stage"])
    return sample, diagnose_stage(sample["message"] if message is None else message, stage,
                                  sample.get("arch_reached"))


@pytest.mark.parametrize("name, release", [
    ("cupy-arch-twice", "CuPy 13.0.0 and 13.6.0"),
    ("cupy-fp16-older-than-bf16", "CuPy 13.0.0"),
    ("cutlass-sm90-builder-toolkit", "nvcc 12.0"),
    ("cutlass-emitted-builder-missing", "CUTLASS 3.5"),
])
def test_a_known_bug_names_its_upstream_issue_and_releases(name: str, release: str) -> None:
    """The seed corpus's upstream failures: each named by its own rule, with the upstream
    issue (or source) to read and the releases it was measured on."""
    _, diagnosis = _diagnosed(name)
    assert diagnosis.rule == name
    assert diagnosis.links and all(link.startswith("https://github.com/")
                                   for link in diagnosis.links)
    assert release in f"{diagnosis.title} {diagnosis.explanation}"


def test_a_budget_says_which_check_and_by_how_much() -> None:
    _, diagnosis = _diagnosed("case-budget")
    assert diagnosis.rule == "case-budget"
    assert diagnosis.title == ("The case's own budget: cutlass::nchw_to_nhwc_kernel<float> has "
                               "20 bytes of spill stores, 20 over its max_spill_stores = 0")
    assert "NVRTC 11.8, sm_90" in diagnosis.explanation


def test_an_artifact_check_says_which_check_and_how_many_matches() -> None:
    _, diagnosis = _diagnosed("case-artifact-check-2")
    assert diagnosis.title == ("The case's own artifact check failed: cubin contains 15 x "
                               "/STL|LDL/ (no local-memory traffic)")


def test_a_message_that_is_only_a_path_is_diagnosed_by_its_error_line() -> None:
    """A decisive message cut to its file's path (an emitted extension's artifacts folder
    runs long) is never the evidence: the log's first error line that says more is."""
    sample = _sample(LOGS / "cutlass-emitted-builder-missing.json")
    path = sample["message"].split("(")[0]
    _, diagnosis = _diagnosed("cutlass-emitted-builder-missing", f"{path}(35)")
    assert diagnosis.rule == "cutlass-emitted-builder-missing"
    assert diagnosis.evidence.startswith(path)
    assert 'error: namespace "cutlass::epilogue::collective"' in diagnosis.evidence


def test_the_words_of_a_path_are_not_read_as_the_error() -> None:
    """A rule reads what the error says, never the folder it names: the typo kept in
    `unclassified` stays unexplained when its file lies in a case folder whose name holds
    another rule's words (`wgmma`)."""
    sample = _sample(LOGS / "unclassified.json")
    moved = {key: value.replace("bad.cu(", "/cases/wgmma-typo/bad.cu(")
             for key, value in sample["stage"].items() if isinstance(value, str)}
    stage = StageResult(**{**sample["stage"], **moved})
    diagnosis = diagnose_stage(moved["message"], stage)
    assert diagnosis.rule == UNCLASSIFIED, diagnosis.title


def test_an_intrinsic_of_a_newer_arch_says_from_which_arch_it_exists() -> None:
    """Issue 71: a kernel calling __reduce_add_sync built for sm_75 said "No rule matched".
    The real nvcc 13.0 log now names the arch the intrinsic exists from and the guard, as
    the table measured with that compiler says; a name the table lacks is no such claim."""
    from cudamatrix.record.diagnose import diagnose, intrinsic_archs

    sample = json.loads((LOGS / "intrinsic-from-newer-arch.json").read_text())
    found = diagnose_stage(sample["message"], StageResult(**sample["stage"]))
    assert found.rule == "intrinsic-from-newer-arch"
    assert found.title == "__reduce_add_sync exists from sm_80 on"
    assert "`#if __CUDA_ARCH__ >= 800`" in found.fix
    assert intrinsic_archs()["__cluster_barrier_arrive"] == "sm_90"
    other = diagnose('k.cu(3): error: identifier "__my_helper" is undefined', ())
    assert other.rule != "intrinsic-from-newer-arch"


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_placeholder_of_a_diagnosis_is_filled(path: Path) -> None:
    """A rule's title, explanation and fix name what its pattern or finding caught ({arch},
    its __CUDA_ARCH__ value {arch_number}, {first_release}): none is left as a word in
    braces for the user to read."""
    import re

    sample = _sample(path)
    diagnosis = diagnose_stage(sample["message"], StageResult(**sample["stage"]),
                               sample.get("arch_reached"))
    for text in (diagnosis.title, diagnosis.explanation, diagnosis.fix):
        assert re.search(r"\{\w+\}", text) is None, (diagnosis.rule, text)


def test_an_arch_found_by_the_search_gives_the_guard_to_write() -> None:
    _, found = _diagnosed("declared-from-newer-arch")
    assert found.rule == "declared-from-newer-arch"  # type: ignore[attr-defined]
    assert "`#if __CUDA_ARCH__ >= 800`" in found.fix  # type: ignore[attr-defined]
