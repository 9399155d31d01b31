"""Archs a toolkit cannot build (issue 12, point 5): pruned at plan time with the reason,
from the matrix's table of each arch's first and last toolkit; that table is checked
against each toolkit's own ptxas when the toolkit is prepared. Pure: the default matrix
and the known-bug corpus."""

from __future__ import annotations

from pathlib import Path

from cudamatrix.config.corpus import load_corpus
from cudamatrix.config.defaults import DEFAULT_MATRIX, KNOWN_BUGS
from cudamatrix.config.matrix import load_matrix
from cudamatrix.config.plan import expand, pruned


def test_a_cell_its_toolkit_cannot_build_is_pruned_with_the_reason(tmp_path: Path) -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    cases = load_corpus([KNOWN_BUGS])
    tier = matrix.tiers["nightly"]
    selection = {"toolkits": ["11.8", "12.9", "13.0"], "archs": ["sm_70", "sm_90a", "sm_100a"]}
    cells = expand(matrix, tier, cases, **selection, cache=tmp_path)
    pairs = {(c.toolkit, c.arch) for c in cells if c.toolkit != "bundled"}
    assert pairs == {("11.8", "sm_70"), ("12.9", "sm_70"), ("12.9", "sm_90a"),
                     ("12.9", "sm_100a"), ("13.0", "sm_90a"), ("13.0", "sm_100a")}
    reasons = pruned(matrix, tier, cases, **selection, cache=tmp_path)
    assert "CUDA 12.9 was the last to build sm_70" in reasons
    assert "sm_90a first came with CUDA 12.0" in reasons
    assert "sm_100a first came with CUDA 12.8" in reasons
    # Toolkit-free cells (the CuTe DSL brings its own compiler) are never pruned by arch.
    assert any(c.toolkit == "bundled" and c.arch == "sm_100a" for c in cells)


def test_the_table_is_checked_against_what_a_toolkits_ptxas_accepts() -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    # CUDA 13.0's ptxas as it lists its targets (the family and Thor's renamed sm_110).
    accepted = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a",
                "sm_100", "sm_100a", "sm_100f", "sm_103", "sm_103a", "sm_103f", "sm_110",
                "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f", "sm_121", "sm_121a",
                "sm_121f"]
    assert matrix.arch_disagreements("13.0", accepted) == []
    said = matrix.arch_disagreements("13.0", [a for a in accepted if a != "sm_110"] + ["sm_70"])
    assert said == ["matrix.toml prunes sm_70 for toolkit 13.0, whose ptxas builds it",
                    "matrix.toml keeps sm_110 for toolkit 13.0, whose ptxas refuses it"]


def test_nvrtc_is_asked_too_for_the_plain_archs_it_can_name() -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    # CUDA 13.0's nvrtcGetSupportedArchs, as it answers (no a/f targets: it cannot say them).
    nvrtc = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103",
             "sm_110", "sm_120", "sm_121"]
    assert matrix.arch_disagreements("13.0", nvrtc, "NVRTC") == []
    assert matrix.arch_disagreements("13.0", [a for a in nvrtc if a != "sm_75"], "NVRTC") == [
        "matrix.toml keeps sm_75 for toolkit 13.0, whose NVRTC refuses it"]


def test_nvcc_is_asked_too_where_the_toolkit_has_one() -> None:
    matrix = load_matrix(DEFAULT_MATRIX)
    # CUDA 13.0's nvcc --list-gpu-code, in its own order (plain targets only).
    nvcc = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_110",
            "sm_103", "sm_120", "sm_121"]
    assert matrix.arch_disagreements("13.0", nvcc, "nvcc") == []
    assert matrix.arch_disagreements("13.0", [*nvcc, "sm_70"], "nvcc") == [
        "matrix.toml prunes sm_70 for toolkit 13.0, whose nvcc builds it"]
