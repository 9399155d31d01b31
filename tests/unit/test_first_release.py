"""Since which CCCL release (providers/first_release.py): what the compiler could not find,
read off real logs, and the first release whose headers declare it, over include trees
laid out as the nvidia-cuda-cccl wheels lay theirs, each answer kept by name and release."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from packaging.version import Version

from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers.first_release import (
    SINCE_RELEASE,
    SINCE_RELEASE_UNKNOWN,
    FirstReleases,
    Lacking,
    NotLooked,
    SinceRelease,
    declares_word,
    has,
    lacking,
    own_cccl,
    with_first_release,
)
from cudamatrix.stages.cell.result import StageResult

LOGS = Path(__file__).parents[1] / "data" / "logs"


def _log(name: str) -> str:
    return str(json.loads((LOGS / f"{name}.json").read_text())["stage"]["log"])


def test_what_the_compile_lacks_is_read_off_real_logs() -> None:
    # nvcc 13.0: a struct member of a type CCCL 13.0 lacks, named only under the caret.
    assert lacking(_log("cccl-from-release")) == Lacking("name", "cuda::fast_mod_div")
    # NVRTC 12.4: a header its CCCL lacks.
    assert lacking(_log("cccl-from-release-2")) == Lacking("header", "cuda/cmath")
    # gcc (nvcc 11.8's host pass) and EDG (nvcc 12.4) on FlashInfer's sampling kernel.
    assert lacking(_log("cccl-newer-than-toolkit")) == Lacking("header", "cuda/functional")
    assert lacking(_log("cccl-newer-than-toolkit-2")) == Lacking("name", "cuda::maximum")
    # Not CCCL's: a header of the case's own, an undefined name of its own.
    assert lacking(_log("missing-header")) is None
    assert lacking(_log("declared-from-newer-arch")) is None


def test_a_declaration_is_told_from_a_comment_a_string_and_a_call() -> None:
    assert declares_word("struct _CCCL_TYPE_VISIBILITY_DEFAULT maximum\n{", "maximum")
    assert declares_word("template <class _Tp>\nclass fast_mod_div\n{", "fast_mod_div")
    assert declares_word("_CCCL_API constexpr _Tp ceil_div(_Tp a, _Up b)", "ceil_div")
    assert declares_word("using maximum = ::cuda::std::max;", "maximum")
    assert not declares_word("// Alignment: Use the maximum of the alignment of _Tp", "maximum")
    assert not declares_word('static_assert(x, " exceeds maximum supported size");', "maximum")
    assert not declares_word("/* the\n maximum (of two) */ int a;", "maximum")
    assert not declares_word("  return maximum(a, b);", "maximum")
    assert not declares_word("  auto m = maximum(a, b);", "maximum")


def _release(root: Path, version: str, files: dict[str, str], complete: bool = True) -> Path:
    """An include tree as a CCCL wheel has it (`cub/cub.cuh`, `nv/target` and
    `cuda/pipeline` where it is complete)."""
    include = root / version / "include"
    marks = dict.fromkeys(("cub/cub.cuh", "nv/target", "cuda/pipeline"), "#pragma once\n")
    for name, text in {**files, **(marks if complete else {})}.items():
        (include / name).parent.mkdir(parents=True, exist_ok=True)
        (include / name).write_text(text)
    return include


class _Headers:
    """Release folders by version, and which releases were read (or cannot be)."""

    def __init__(self, folders: dict[str, Path], unreachable: Sequence[str] = ()) -> None:
        self.folders, self.unreachable = folders, unreachable
        self.read: list[str] = []

    def __call__(self, release: str) -> tuple[Sequence[str], str]:
        if release in self.unreachable:
            raise EnvironmentUnavailable(f"{release}: the index did not answer")
        self.read.append(release)
        return [str(self.folders[release])], f"{release}.post1"


def test_the_first_newer_release_that_declares_it_is_named_and_kept(tmp_path: Path) -> None:
    folders = {
        "12.4": _release(tmp_path, "12.4", {"cuda/pipeline": "// the maximum of two\n"}),
        "12.6": _release(tmp_path, "12.6", {"cuda/functional": "int f();\n"}, complete=False),
        "12.8": _release(tmp_path, "12.8", {"cuda/__functional/maximum.h":
                                            "struct maximum {};\n", "cuda/cmath": ""}),
        "13.0": _release(tmp_path, "13.0", {"cuda/cmath": ""}),
    }
    headers = _Headers(folders)
    lookups = FirstReleases(list(folders), headers, tmp_path / "cache")
    found = lookups.find(Lacking("name", "cuda::maximum"), Version("12.3"))
    assert found is not None and (found.release, found.toolkit) == ("12.8.post1", "12.8")
    # 12.6's wheel is incomplete (no cub/, nv/, cuda/pipeline): it cannot say, is not
    # counted, and the finding says so.
    assert found.checked == ("12.4.post1", "12.8.post1") and found.unknown == ("12.6.post1",)
    assert found.said() == ("`cuda::maximum` is in CCCL from 12.8.post1 on (toolkit 12.8); the "
                            "wheels of 12.6.post1 lack libcu++'s public headers and cannot say")
    header = lookups.find(Lacking("header", "cuda/cmath"), Version("12.4.post1"))
    assert header is not None and header.release == "12.8.post1"
    assert header.said().startswith("`<cuda/cmath>` is in CCCL from 12.8.post1 on (toolkit 12.8)")
    # Only releases newer than the cell's own are read.
    assert lookups.find(Lacking("name", "cuda::maximum"), Version("13.0")) is None

    # Kept by name and release in the run's cache: another run reads no header again.
    kept = json.loads((tmp_path / "cache" / "first-release" / "cccl.json").read_text())
    assert kept["name:cuda::maximum@12.4"] is False and kept["name:cuda::maximum@12.8"] is True
    again = _Headers(folders)
    second = FirstReleases(list(folders), again, tmp_path / "cache")
    assert second.find(Lacking("name", "cuda::maximum"), Version("12.3")) == found
    assert again.read == []


def test_a_release_that_cannot_be_fetched_is_said_and_nothing_kept(tmp_path: Path) -> None:
    """Issue 82, item 7: a runner without the index said "No rule matched"; the look-up
    now says it could not look, and why, keeps no answer, and asks the release that
    could not be fetched once a run, not once a cell."""
    folders = {"12.4": _release(tmp_path, "12.4", {}),
               "12.8": _release(tmp_path, "12.8", {"cuda/cmath": ""})}
    headers = _Headers(folders, unreachable=["12.4"])
    lookups = FirstReleases(list(folders), headers, tmp_path / "cache")
    found = lookups.find(Lacking("header", "cuda/cmath"), None)
    assert isinstance(found, NotLooked) and found.release == "12.4"
    assert found.said() == ("could not look up which release first has `<cuda/cmath>`: "
                            "12.4: the index did not answer")
    # The search stopped there: a later release cannot answer what 12.4 may have had.
    assert headers.read == []
    assert not (tmp_path / "cache" / "first-release" / "cccl.json").exists()
    headers.unreachable = []  # the same run does not ask again ...
    assert lookups.find(Lacking("header", "cuda/cmath"), None) == found
    assert headers.read == []
    # ... the next run does.
    again = FirstReleases(list(folders), headers, tmp_path / "cache")
    answer = again.find(Lacking("header", "cuda/cmath"), None)
    assert isinstance(answer, SinceRelease) and answer.release == "12.8.post1"


def test_the_cells_own_cccl_is_the_one_ahead_of_the_toolkits() -> None:
    assert own_cccl({"nvidia-cuda-cccl-cu12": "12.4.127.post1"}, "12.4") \
        == Version("12.4.127.post1")
    assert own_cccl({"nvidia-cuda-cccl-cu12": "12.4.127", "nvidia-cuda-cccl (headers)":
                     "13.0.85"}, "12.4") == Version("13.0.85")
    assert own_cccl({"nvcc": "13.0.88"}, "13.0") == Version("13.0")


def test_only_a_failed_compile_that_lacks_a_cccl_name_gets_the_finding(tmp_path: Path) -> None:
    folders = {"13.1": _release(tmp_path, "13.1", {"cuda/__cmath/fast_modulo_division.h":
                                                   "template <class T> class fast_mod_div {};"})}
    lookups = FirstReleases(list(folders), _Headers(folders), tmp_path / "cache")
    sample = json.loads((LOGS / "cccl-from-release.json").read_text())["stage"]
    failed = StageResult("compile", "failed", sample["message"], sample["log"])
    stages = with_first_release([failed], lookups, {"nvidia-cuda-cccl": "13.0.85"}, "13.0")
    said = stages[0].details[SINCE_RELEASE]
    assert (said["name"], said["release"], said["toolkit"]) == ("cuda::fast_mod_div",
                                                                "13.1.post1", "13.1")
    passed = StageResult("compile", "ok", "", sample["log"])
    assert with_first_release([passed], lookups, {}, "13.0") == [passed]
    assert with_first_release([failed], None, {}, "13.0") == [failed]


def test_a_finding_replaces_the_earlier_runs_could_not_look(tmp_path: Path) -> None:
    """A compile served from the cache of a run that could not reach the index carries its
    `since_release_unknown`; this run, reaching it, finds the release, and the record then
    says that alone (both would say the release was and was not looked up)."""
    folders = {"13.1": _release(tmp_path, "13.1", {"cuda/__cmath/fast_modulo_division.h":
                                                   "template <class T> class fast_mod_div {};"})}
    lookups = FirstReleases(list(folders), _Headers(folders), tmp_path / "cache")
    sample = json.loads((LOGS / "cccl-from-release.json").read_text())["stage"]
    earlier = {"kind": "name", "name": "cuda::fast_mod_div", "release": "13.1",
               "why": "13.1: the index did not answer"}
    served = StageResult("compile", "failed", sample["message"], sample["log"],
                         details={SINCE_RELEASE_UNKNOWN: earlier})
    (stage,) = with_first_release([served], lookups, {"nvidia-cuda-cccl": "13.0.85"}, "13.0")
    assert stage.details[SINCE_RELEASE]["release"] == "13.1.post1"
    assert SINCE_RELEASE_UNKNOWN not in stage.details, stage.details


def test_each_matrix_gets_the_lookups_of_its_own_releases(tmp_path: Path) -> None:
    """One lookup object per cache folder and process, reused by the run's cells; a second
    matrix in the same process (another run, a --rejudge) names other CCCL releases and
    gets lookups over those, not the first matrix's."""
    import dataclasses

    from cudamatrix.common.up_to_date import InputLedger
    from cudamatrix.config.matrix import load_matrix
    from cudamatrix.providers.first_release import for_run

    matrix = load_matrix(Path(__file__).parents[2] / "src" / "cudamatrix" / "config" / "data"
                         / "matrix.toml")
    cccl = matrix.libraries["cccl"]
    first = for_run(matrix, tmp_path, InputLedger())
    assert first is not None and "12.4.127" in first.releases
    assert for_run(matrix, tmp_path, InputLedger()) is first  # read once a run
    fewer = dataclasses.replace(matrix, libraries={
        **matrix.libraries, "cccl": dataclasses.replace(cccl, versions=("toolkit", "13.0.85"))})
    second = for_run(fewer, tmp_path, InputLedger())
    assert second is not None and "12.4.127" not in second.releases
    assert "13.0.85" in second.releases and "12.4" in second.releases


# Issue 79, break 9: a header name is the source's own words (#include
# <cuda/../../etc/hostname>); the run's own process tested that path, whatever the provider,
# and kept the name in its cache.
CLIMBING = ('k.cu(1): error: cannot open source file "cuda/../../etc/hostname"\n'
            "  #include <cuda/../../etc/hostname>\n")


def test_a_header_name_that_climbs_is_no_lookup(tmp_path: Path) -> None:
    include = tmp_path / "release" / "include"
    (include / "cuda").mkdir(parents=True)
    (tmp_path / "release" / "etc").mkdir()
    (tmp_path / "release" / "etc" / "hostname").write_text("a file of the machine's\n")
    assert lacking(CLIMBING) is None
    assert lacking(CLIMBING.replace("cuda/../../etc/hostname", "cuda/cmath")) == \
        Lacking("header", "cuda/cmath")
    # Even asked directly, no folder is asked for a name that climbs out of it.
    assert not has([str(include)], Lacking("header", "cuda/../../etc/hostname"))
    assert not has([str(include)], Lacking("header", "cuda/../cuda/../../etc/hostname"))
    # ... and nothing is kept in the run's cache for it.
    asked: list[str] = []

    def headers(release: str) -> tuple[list[str], str]:
        asked.append(release)
        return [str(include)], release

    lookups = FirstReleases(["13.0.0"], headers, tmp_path / "cache")
    failed = StageResult("compile", "failed", "", CLIMBING)
    assert with_first_release([failed], lookups, {}, "12.4") == [failed]
    assert asked == [] and not (tmp_path / "cache").exists()


def test_a_name_read_off_a_message_must_climb_nowhere() -> None:
    from cudamatrix.common.confined import plain_relative

    assert plain_relative("cuda/cmath") and plain_relative("cub/cub.cuh")
    for name in ("cuda/../../etc/hostname", "/etc/hostname", "..", "", "cuda/\0x"):
        assert not plain_relative(name), name
