"""Since which arch a name is declared (stages/compile/arch_guard.py): the place a name
first appears in a preprocessor's real output (nvcc 13.0, `nvcc -E --gpu-architecture`,
for sm_75 and sm_80 of a kernel whose header declares `dequant` only from sm_80 on:
tests/data/preprocessed/), the guard enclosing that line in its header, and the search
over archs, stopped at the first that declares the name."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cudamatrix.stages.compile.arch_guard import (
    enclosing_guard,
    host_preprocess_command,
    locations,
    new_locations,
    newer_archs,
    since_arch,
    undefined_name,
)

DATA = Path(__file__).parents[1] / "data" / "preprocessed"
SM75 = (DATA / "dequant-sm_75.ii").read_text()
SM80 = (DATA / "dequant-sm_80.ii").read_text()


def test_the_lines_a_name_is_on_are_read_through_the_line_markers() -> None:
    assert locations(SM75, "dequant") == [("k.cu", 2)]
    assert locations(SM80, "dequant") == [("dequant.h", 4), ("k.cu", 2)]
    # A word, not a part of one.
    assert locations(SM80, "deq") == [] and locations(SM80, "unpack") == [("k.cu", 2)]


def test_the_newer_arch_adds_the_declaration_and_nothing_else() -> None:
    assert new_locations(SM75, SM80, "dequant") == [("dequant.h", 4)]
    assert new_locations(SM80, SM75, "dequant") == []


def test_the_guard_is_the_nearest_enclosing_if_that_names_the_arch() -> None:
    header = (DATA / "dequant.h").read_text()
    guard = enclosing_guard(header, 4)
    assert guard is not None
    assert (guard.line, guard.text) == (3, "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800")
    assert enclosing_guard(header, 2) is None


def test_a_guard_nested_continued_or_on_the_else_side_is_named_as_written() -> None:
    header = """\
#ifndef HEADER_H
#define HEADER_H
#if defined(__CUDA_ARCH__) && \\
    __CUDA_ARCH__ < 900  // pre-Hopper
#ifdef USE_FAST
__device__ int slow();
#endif
#else
__device__ int tma_copy();
#endif
#if __CUDA_ARCH__ >= 800 /* Ampere */
#if ENABLE_BF16
__device__ int bf16_dot();
#endif
#elif __CUDA_ARCH__ >= 700
__device__ int fp16_dot();
#endif
#endif
"""
    # Under an #ifdef that names no arch, the enclosing one that does.
    said = enclosing_guard(header, 6)
    assert said is not None and said.line == 3
    assert said.text == "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900"
    other = enclosing_guard(header, 9)
    assert other is not None and other.line == 8
    assert other.text == ("#else (of `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900`, "
                          "line 3)")
    nested = enclosing_guard(header, 13)
    assert nested is not None and nested.text == "#if __CUDA_ARCH__ >= 800"
    elif_side = enclosing_guard(header, 16)
    assert elif_side is not None and elif_side.line == 15
    assert elif_side.text.startswith("#elif __CUDA_ARCH__ >= 700 (of `#if __CUDA_ARCH__ >= 800`")
    # Guarded by nothing of the arch: the innermost conditional.
    plain = enclosing_guard("#ifndef H\n#define H\nint f();\n#endif\n", 3)
    assert plain is not None and plain.text == "#ifndef H"


def test_the_name_is_read_off_the_compilers_first_errors() -> None:
    assert undefined_name('k.cu(2): error: identifier "dequant" is undefined') == "dequant"
    assert undefined_name('a.cu(9): error: no instance of overloaded function "cute::copy" '
                          'matches the argument list') == "cute::copy"
    assert undefined_name('a.cu(9): error: namespace "cuda" has no member "fast_mod_div"') \
        == "cuda::fast_mod_div"
    assert undefined_name("a.cu(9): error: expected a \";\"") is None


def test_the_archs_tried_are_the_newer_ones_the_toolkit_lists() -> None:
    listed = ["compute_75", "compute_80", "compute_90", "compute_110", "compute_103",
              "compute_100"]
    assert newer_archs("sm_75", listed) == ["sm_80", "sm_90", "sm_100", "sm_103", "sm_110"]
    assert newer_archs("sm_90a", listed) == ["sm_100", "sm_103", "sm_110"]


def test_the_search_stops_at_the_first_arch_that_declares_it() -> None:
    asked: list[str] = []
    texts = {"sm_75": SM75, "sm_80": SM80, "sm_86": SM80, "sm_90": SM80}

    def preprocess(arch: str, left: float) -> str | None:
        asked.append(arch)
        return texts[arch]

    found = since_arch("dequant", "sm_75", ["sm_80", "sm_86", "sm_90"], preprocess,
                       time.monotonic() + 60, DATA)
    assert (found.arch, found.file, found.line) == ("sm_80", "dequant.h", 4)
    assert found.guard_line == 3 and asked == ["sm_75", "sm_90", "sm_80"]
    assert found.said() == ("`dequant` is declared only for sm_80 and newer: dequant.h:4 under "
                            "`#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800` (line 3)")


def test_a_name_no_newer_arch_declares_costs_two_preprocesses() -> None:
    asked: list[str] = []

    def preprocess(arch: str, left: float) -> str | None:
        asked.append(arch)
        return SM75

    found = since_arch("dequant", "sm_75", ["sm_80", "sm_86", "sm_90"], preprocess,
                       time.monotonic() + 60)
    assert found.arch == "" and asked == ["sm_75", "sm_90"]
    assert "none of the archs preprocessed (sm_75, sm_90)" in found.said()


def test_no_preprocess_starts_past_the_cells_time_limit() -> None:
    asked: list[str] = []

    def preprocess(arch: str, left: float) -> str | None:
        asked.append(arch)
        return SM80

    found = since_arch("dequant", "sm_75", ["sm_80"], preprocess, time.monotonic() + 0.5)
    assert found.arch == "" and asked == []


def test_a_declaration_the_host_pass_never_sees_works_on_no_arch() -> None:
    """The host pass reads the kernel's call (k.cu:2) without the declaration (SM75 stands
    for it: no __CUDA_ARCH__, and a guard `defined(__CUDA_ARCH__) && ...`)."""
    def preprocess(arch: str, left: float) -> str | None:
        return SM75 if arch == "sm_75" else SM80

    found = since_arch("dequant", "sm_75", ["sm_80"], preprocess, time.monotonic() + 60, DATA,
                       host=lambda arch, left: SM75)
    assert (found.arch, found.device_only) == ("", "sm_80")
    assert found.said().startswith("`dequant` is declared only for the device code of sm_80 "
                                   "and newer, never for the host pass: dequant.h:4")
    seen = since_arch("dequant", "sm_75", ["sm_80"], preprocess, time.monotonic() + 60, DATA,
                      host=lambda arch, left: SM80)
    assert seen.arch == "sm_80" and seen.checked == ("sm_75", "sm_80", "host")


def test_the_host_pass_line_is_taken_from_nvccs_dry_run() -> None:
    # nvcc 13.0's own lines (cut short): the device pass's preprocessing, the host's, cudafe++.
    dry = (
        '#$ _NVVM_BRANCH_=nvvm\n'
        '#$ gcc -std=c++17 -D__CUDA_ARCH__=800 -D__CUDA_ARCH_LIST__=800 -E -x c++ "k.cu" '
        '-o "/tmp/a.cpp1.ii"\n'
        '#$ gcc -std=c++17 -D__CUDA_ARCH_LIST__=800 -E -x c++ -D__CUDACC__ -include '
        '"cuda_runtime.h" -m64 "k.cu" -o "/tmp/tmpxft-5_k.cpp4.ii"\n'
        '#$ cudafe++ --c++17 --gen_c_file_name "/tmp/x.cudafe1.cpp"\n')
    command = host_preprocess_command(dry, Path("/work/out.ii"))
    assert command == ["gcc", "-std=c++17", "-D__CUDA_ARCH_LIST__=800", "-E", "-x", "c++",
                       "-D__CUDACC__", "-include", "cuda_runtime.h", "-m64", "k.cu", "-o",
                       "/work/out.ii"]
    assert host_preprocess_command("#$ cicc --c++17 k.cpp1.ii", Path("x")) is None


def test_where_no_preprocessor_can_be_asked_the_unit_is_compiled_again() -> None:
    """NVRTC's way (since_arch_compiled): the newest arch first, then from the oldest on;
    no compile starts unless the failed compile's time is left."""
    from cudamatrix.stages.compile.arch_guard import since_arch_compiled

    asked: list[str] = []

    def still(arch: str) -> bool | None:
        asked.append(arch)
        return arch in ("sm_80", "sm_86")

    found = since_arch_compiled("bf16_dot", "sm_75", ["sm_80", "sm_86", "sm_90", "sm_120"],
                                still, time.monotonic() + 60, 0.1, "NVRTC 13.0")
    assert found.arch == "sm_90" and asked == ["sm_120", "sm_80", "sm_86", "sm_90"]
    assert found.checked == ("sm_75", "sm_120", "sm_80", "sm_86", "sm_90")
    assert found.said() == ("`bf16_dot` compiles only for sm_90 and newer: NVRTC 13.0 finds it "
                            "for sm_90, not for sm_75")
    asked.clear()
    nowhere = since_arch_compiled("x", "sm_75", ["sm_80", "sm_90"], lambda arch: True,
                                  time.monotonic() + 60, 0.1, "NVRTC 13.0")
    assert nowhere.arch == "" and nowhere.checked == ("sm_75", "sm_90")
    # The failed compile took 30 s and 10 s are left: nothing is compiled again.
    late = since_arch_compiled("x", "sm_75", ["sm_80"], still, time.monotonic() + 10, 30.0,
                               "NVRTC 13.0")
    assert late.arch == "" and asked == []


def test_arch_specific_targets_are_never_the_archs_tried() -> None:
    """A listing may hold arch-specific targets beside the plain archs (nvcc 12.x lists
    compute_90a, 12.9 compute_100f): a name found there is found for code that only that
    one GPU family builds, never "from sm_90 on", so only plain archs are tried."""
    listed = ["compute_80", "compute_90", "compute_90a", "compute_100", "compute_100a",
              "compute_100f", "compute_120a"]
    assert newer_archs("sm_80", listed) == ["sm_90", "sm_100"]
    assert newer_archs("sm_90a", listed) == ["sm_100"]


# Issue 79, break 3: the files a line marker names are the source's to choose (#line 1
# "/dev/zero" under an arch guard had the cell's worker read 3.8 GB): only bounded regular
# files inside the case, the toolkit and the include folders are read.
GUARDED = "#if __CUDA_ARCH__ >= 900\n__device__ int dequant(int x);\n#endif\n"


def _preprocessed(marker: str) -> dict[str, str]:
    """What the preprocessor gives for sm_80 and sm_90 of a unit whose declaration of
    `dequant`, guarded for sm_90, sits at line 2 of the file `marker` names."""
    use = '# 5 "k.cu"\n__global__ void k(int *p) { *p = dequant(1); }\n'
    declared = f'# 2 "{marker}"\n__device__ int dequant(int x);\n'
    return {"sm_80": use, "sm_90": declared + use}


def _search(texts: dict[str, str], folder: Path, *readable: Path) -> tuple[str, int]:
    """The guard the search names (and its line); `readable`: the folders headers may be
    read from (none given: `folder`, where the preprocessor ran)."""
    more = {"readable": list(readable)} if readable else {}
    found = since_arch("dequant", "sm_80", ["sm_90"], lambda arch, left: texts[arch],
                       time.monotonic() + 60, folder, **more)
    assert (found.arch, found.line) == ("sm_90", 2)
    return found.guard, found.guard_line


def test_a_header_of_the_case_has_its_guard_read(tmp_path: Path) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / "dequant.h").write_text(GUARDED)
    assert _search(_preprocessed(str(case / "dequant.h")), tmp_path / "work", case) == (
        "#if __CUDA_ARCH__ >= 900", 1)


def test_a_line_marker_naming_a_file_outside_is_not_read(tmp_path: Path) -> None:
    case, elsewhere = tmp_path / "case", tmp_path / "machine"
    case.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret.h").write_text(GUARDED)
    # A marker by absolute path, and one that climbs from the folder the search ran in.
    assert _search(_preprocessed(str(elsewhere / "secret.h")), case) == ("", 0)
    assert _search(_preprocessed("../machine/secret.h"), case) == ("", 0)


def test_a_line_marker_naming_a_huge_file_is_not_read(tmp_path: Path) -> None:
    """``#line 1 "/dev/zero"`` was read whole (3.8 GB): a header past its bound is not."""
    case = tmp_path / "case"
    case.mkdir()
    huge = case / "huge.h"
    with huge.open("wb") as file:
        file.write(GUARDED.encode())
        file.truncate(64 << 20)  # sparse: over MAX_HEADER_BYTES, nothing on the disk
    assert _search(_preprocessed(str(huge)), case) == ("", 0)


def test_a_line_marker_naming_a_device_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    """/dev/zero never ends, a FIFO blocks the worker (even in a folder headers may be
    read from): only a regular file is read."""
    case = tmp_path / "case"
    case.mkdir()
    os.mkfifo(case / "fifo.h")
    assert _search(_preprocessed(str(case / "fifo.h")), case) == ("", 0)
    assert _search(_preprocessed("/dev/zero"), case, case, Path("/dev")) == ("", 0)


def test_a_preprocessors_output_is_read_within_its_bound(tmp_path: Path) -> None:
    from cudamatrix.stages.compile.arch_guard import MAX_PREPROCESSED_BYTES, read_preprocessed

    small = tmp_path / "small.ii"
    small.write_text('# 1 "k.cu"\nint x;\n')
    assert read_preprocessed(small) == '# 1 "k.cu"\nint x;\n'
    large = tmp_path / "large.ii"
    with large.open("wb") as file:
        file.truncate(MAX_PREPROCESSED_BYTES + 1)
    assert read_preprocessed(large) is None
    assert read_preprocessed(tmp_path / "none.ii") is None
