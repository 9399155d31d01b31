"""Resource changes against a baseline: which moves are findings and which are not."""

from __future__ import annotations

from cudamatrix.record.resource_changes import resource_changes, usage_text


def _record(**figures: int) -> dict[str, object]:
    base = {"kernel": "_Z4gemmPf", "name": "gemm", "registers": 40, "spill_store_bytes": 0,
            "spill_load_bytes": 0, "stack_bytes": 0, "smem_bytes": 1024}
    return {**base, **figures}


def test_growth_beyond_the_threshold_and_new_spills_are_findings() -> None:
    changes = resource_changes("c", [_record()], [_record(registers=45, spill_store_bytes=8,
                                                          smem_bytes=2048)])
    assert [(c.what, c.before, c.after) for c in changes] == [
        ("spill", 0, 8), ("registers", 40, 45), ("shared memory", 1024, 2048)]
    assert changes[0].describe() == "gemm starts to spill: 8 bytes of spill stores (was 0)"


def test_small_or_favourable_moves_are_not() -> None:
    assert resource_changes("c", [_record()], [_record(registers=44)]) == []  # exactly 10%
    assert resource_changes("c", [_record(spill_store_bytes=8)],
                            [_record(spill_store_bytes=16, registers=30)]) == []
    assert resource_changes("c", [_record(kernel="_Z5otherv")], [_record()]) == []  # new kernel
    assert resource_changes("c", [{"kernel": "_Z4gemmPf", "registers": "x"}], [_record()]) == []


def test_usage_text_leaves_out_zeros() -> None:
    assert usage_text(_record()) == "40 reg · 1024 B smem"
    assert usage_text(_record(spill_store_bytes=8, stack_bytes=8, smem_bytes=0)) == \
        "40 reg · 8 B spill · 8 B stack"
