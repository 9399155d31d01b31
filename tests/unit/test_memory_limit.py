"""The cell's memory limit bounds the memory a tool writes, not the address space it
reserves: every CUDA process reserves far more than it uses (torch 2.11 with CUDA 13.0
could not even count its GPUs under a 7.9 GiB RLIMIT_AS on a lent H200, "Error 2: out of
memory", while under RLIMIT_DATA it ran and a 12 GiB bytearray was refused:
bench/evidence/torch-ext/rlimit-h200.txt). A reservation here is what CUDA makes: a large
PROT_NONE (0: Python 3.11 names no PROT_NONE) anonymous mapping."""

from __future__ import annotations

import mmap
import sys

import pytest

from cudamatrix.stages.process.limits import memory_limit, run_tool

LIMIT = 1 << 30
RESERVE = (
    "import mmap; m = mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, "
    "prot=0); print('reserved', len(m) >> 30, 'GiB')"
)


def test_a_tool_may_reserve_address_space_beyond_the_limit() -> None:
    tool = run_tool([sys.executable, "-c", RESERVE], timeout=60, memory_bytes=LIMIT)
    assert tool.code == 0 and tool.accident is None, tool.output
    assert "reserved 16 GiB" in tool.output


def test_a_tool_that_writes_beyond_the_limit_is_stopped_by_it() -> None:
    script = "b = bytearray(3 << 30); print(len(b))"
    tool = run_tool([sys.executable, "-c", script], timeout=60, memory_bytes=LIMIT)
    assert tool.code != 0
    assert tool.accident is not None and "memory limit" in tool.accident, tool.output


def test_in_process_the_limit_bounds_writes_and_lets_reservations_be() -> None:
    with memory_limit(LIMIT):
        reserved = mmap.mmap(-1, 16 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                             prot=0)
        reserved.close()
        with pytest.raises(MemoryError):
            bytearray(3 << 30)
    assert len(bytearray(8 << 20)) == 8 << 20  # the limit moved back
