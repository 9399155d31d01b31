"""What the fuzzers found (tests/unit/test_fuzz.py), each input kept, minimised by hand
from Hypothesis's falsifying example: each was a traceback before its fix."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from cudamatrix.common.tomlfile import load_toml
from cudamatrix.errors import UserError
from cudamatrix.record.results import load_cell, load_results
from cudamatrix.stages.binaries.elf import UnreadableFile, elf_sections, fatbins
from fuzzing import EVIDENCE, REPO, stream, synthetic_library

SEED = json.loads((EVIDENCE / "realworld-h100" / "results.json").read_text())


def test_toml_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """UnicodeDecodeError from tomllib, a traceback for `cudamatrix validate`."""
    path = tmp_path / "case.toml"
    path.write_bytes(b"\x80title = 1\n")
    with pytest.raises(UserError, match="not UTF-8 text"):
        load_toml(path)


def test_a_toml_path_that_is_a_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read it"):
        load_toml(tmp_path)


def _results_with(change: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(SEED))
    document["cells"] = document["cells"][:2]
    change(document)
    return document


def _set_cell(key: str, value: Any) -> Any:
    return lambda d: d["cells"][0].__setitem__(key, value)


@pytest.mark.parametrize("change", [
    # markdown.py header: 'NoneType' object has no attribute 'items'
    lambda d: d["run"]["toolkits"]["13.0"].__setitem__("tool_versions", None),
    # markdown.py md_text: expected string or bytes-like object, got 'NoneType'
    _set_cell("diagnosis", {"rule": "unclassified", "title": None, "links": []}),
    # resource_changes.usage_text: int() argument must be ... not 'list'
    lambda d: d["cells"][0]["stages"][0]["details"]["resources"][0].__setitem__(
        "registers", [1]),
    # plan.sort_key: invalid literal for int() with base 10: ''
    _set_cell("toolkit", ""),
    _set_cell("arch", "sm_"),
    # results.summary: unhashable type: 'list'
    _set_cell("outcome", ["pass"]),
    # html._cell_data: type NoneType doesn't define __round__ method
    _set_cell("seconds", None),
    # markdown.md_link: expected string or bytes-like object, got 'NoneType'
    _set_cell("upstream", [None]),
    # plan.Cell.id: sequence item 0: expected str instance, NoneType found
    _set_cell("case", None),
    # results._compiled: 'NoneType' object is not iterable
    lambda d: d["cells"][0]["stages"][0]["details"].__setitem__("warnings", None),
], ids=["tool_versions-null", "diagnosis-title-null", "registers-list", "toolkit-empty",
        "arch-bare", "outcome-list", "seconds-null", "upstream-null", "case-null",
        "warnings-null"])
def test_a_damaged_results_field_is_one_line(tmp_path: Path, change: Any) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results_with(change)))
    with pytest.raises(UserError, match="damaged results file") as caught:
        load_results(path)
    assert "\n" not in str(caught.value)
    damaged_cell = _results_with(change)["cells"][0]
    if damaged_cell != SEED["cells"][0]:  # a cell's own field: --resume's reader too
        cell = tmp_path / "cell.json"
        cell.write_text(json.dumps(damaged_cell))
        with pytest.raises(UserError, match="damaged cell record"):
            load_cell(cell)


def test_a_lying_fatbinary_size_is_named_with_its_offset() -> None:
    library = bytearray(synthetic_library())
    at = bytes(library).find(struct.pack("<I", 0xBA55ED50))
    library[at + 8:at + 16] = (1 << 62).to_bytes(8, "little")
    with pytest.raises(UnreadableFile, match=rf"fatbinary at offset {at:#x} claims"):
        fatbins(stream(bytes(library)))


def test_a_section_table_past_the_end_is_no_section() -> None:
    library = bytearray(synthetic_library())
    library[0x28:0x30] = (len(library) + 8).to_bytes(8, "little")
    assert elf_sections(stream(bytes(library))) == {}


KEPT = (REPO / "reports", EVIDENCE)  # the published run, the evidence


@pytest.mark.parametrize("path", sorted(str(p.relative_to(REPO)) for folder in KEPT
                                        for p in folder.rglob("results.json")))
def test_every_results_file_this_repository_keeps_is_read(path: str) -> None:
    """Typed reading must take every real record: a build's load stage records `modules` as
    a count where its inspect stage records a list (the first typed reader refused
    bench/evidence/build-h100)."""
    info, results = load_results(REPO / path)
    assert results and info.tier


def test_an_inspect_stage_that_named_no_kernel_is_reported() -> None:
    """results.CellResult.kernel: dict(None), a traceback from every report of a run whose
    inspect stage recorded `"kernel": null` (bench/evidence/realworld-h100 has such cells)."""
    from cudamatrix.record.results import CellResult

    document = _results_with(lambda d: None)
    cell = document["cells"][0]
    cell["stages"] = [*cell["stages"][:1], {"stage": "inspect", "status": "ok", "message": "",
                                            "log": "", "seconds": 0.0,
                                            "details": {"kernel": None}}]
    result = CellResult.from_dict(cell)
    assert result.kernel is None
    assert result.to_dict()["kernel"] is None


@pytest.mark.parametrize("source", ["[" * 3000 + "saxpy.cu", "a" * 300 + "/k.cu",
                                    "x/" * 2100 + "k.cu"])
def test_a_path_longer_than_any_file_can_have_is_a_case_error(tmp_path: Path, source: str
                                                               ) -> None:
    """Found by the case.toml fuzz target: a source name of 3,000 characters raised
    OSError (ENAMETOOLONG) out of validate instead of naming the file."""
    from cudamatrix.config.corpus import load_case

    case = tmp_path / "corpus" / "c"
    case.mkdir(parents=True)
    (case / "case.toml").write_text(f'title = "t"\n[[variant]]\nname = "v"\nsource = "{source}"\n'
                                    'frontend = "nvrtc"\nkernel = "k"\n')
    with pytest.raises(UserError, match="longer than a file's name or path can be"):
        load_case(case)
