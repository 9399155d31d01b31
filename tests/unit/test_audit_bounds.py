"""`audit` reads a stranger's library within bounds of size and time (issue 68, point 4):
a small library whose compressed PTX expands to hundreds of MiB is refused by the ratio
every archive is held to, a module cuobjdump never finishes is refused at the time limit,
and the PTX's `.version` search is linear (1 MiB of blank lines took hours). Each refusal
is one line naming the module; the library is a real ELF with a real fatbinary (the fuzz
seed's), and cuobjdump a stand-in that does what a bomb makes the real one do."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cudamatrix.stages.binaries import facts
from cudamatrix.stages.binaries.elf import UnreadableFile
from cudamatrix.stages.binaries.facts import PtxHead, ptx_head, read_modules, read_ptx
from fuzzing import synthetic_library


def _tool(tmp_path: Path, body: str) -> str:
    tool = tmp_path / "cuobjdump"
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)
    return str(tool)


def _library(tmp_path: Path) -> Path:
    library = tmp_path / "libstranger.so"
    library.write_bytes(synthetic_library())
    return library


def test_a_ptx_expanding_past_the_ratio_is_refused_naming_the_module(tmp_path: Path) -> None:
    """The module's fatbinary is a few hundred bytes; cuobjdump writes 256 MiB of its PTX
    (a compression bomb): stopped at 64 MiB, the module named, nothing left behind."""
    tool = _tool(tmp_path, "head -c 268435456 /dev/zero > libstranger.1.sm_90.ptx")
    began = time.monotonic()
    with pytest.raises(UnreadableFile) as caught:
        read_modules(_library(tmp_path), "x.whl!libstranger.so", tool)
    said = str(caught.value)
    assert said.startswith("module 1: its images expand past 67,108,864 bytes"), said
    assert "\n" not in said
    assert time.monotonic() - began < 30


def test_a_module_past_the_time_limit_is_refused_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(facts, "MODULE_SECONDS", 1.0, raising=False)
    tool = _tool(tmp_path, "sleep 20")
    began = time.monotonic()
    with pytest.raises(UnreadableFile, match=r"^module 1: not read within 1 s, the audit's "
                                             r"limit per module$"):
        read_modules(_library(tmp_path), "x.whl!libstranger.so", tool)
    assert time.monotonic() - began < 10


def test_a_module_within_bounds_is_still_read(tmp_path: Path) -> None:
    ptx = ".version 8.4\n.target sm_80\n.visible .entry k()\n{\n ret;\n}\n"
    tool = _tool(tmp_path, f"printf '{ptx}' > libstranger.1.sm_80.ptx")
    modules = read_modules(_library(tmp_path), "x.whl!libstranger.so", tool)
    assert [(i.kind, i.arch, i.ptx_isa, i.kernels) for i in modules[0].images] == \
        [("ptx", "sm_80", "8.4", 1)]


def test_the_ptx_head_is_read_once_and_nothing_after_it() -> None:
    """Blank lines before `.version`: the reading examines each byte of the head once, the
    count growing with the head as the head grows, never more (a search whose blanks
    spanned lines rescanned every blank line for each: 32 KiB took 48 s, 1 MiB hours);
    and nothing after the head, however long the module's body. Counted, not timed: the
    wall-time ratio this replaced failed once on a loaded machine."""
    head = b".version 8.4\n.target sm_90"
    body = b"\n.visible .entry k()\n{\n ret;\n}\n" * 4096
    for size in (2 << 10, 8 << 10, 32 << 10, 128 << 10, 1 << 20):
        blanks = b"\n" * size + b" \t\n" * 8
        for after in (b"\n", body):
            read = ptx_head(blanks + head + after)
            assert (read.version, read.target) == ("8.4", "sm_90")
            assert read.examined == len(blanks) + len(head), (size, read.examined)
    image = read_ptx(b"// a comment\n/* and\n another */\n" + head + body, "sm_80")
    assert (image.ptx_isa, image.arch, image.kernels) == ("8.4", "sm_90", 4096)
    nothing = b"\n" * (1 << 20) + b"\t\n" * (1 << 18)
    assert ptx_head(nothing) == PtxHead(None, None, len(nothing))
    # The ISA puts .version first: a module whose first directive is another has none.
    assert ptx_head(b".target sm_90\n.version 8.4\n") == PtxHead(None, None, 0)
