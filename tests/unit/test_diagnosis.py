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
