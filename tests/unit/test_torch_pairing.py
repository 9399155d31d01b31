"""torch as a library axis of every command that plans (issue 69, point 1): each release's
CUDA, read from its wheel's METADATA (tests/data/torch-metadata: the real files' header
sections of torch 2.5.1, 2.7.1 and 2.9.1 from PyPI), pairs it with the toolkits a tier or
a variant asks for, the other cells ruled out with their reason; where the CUDA cannot be
read the cells are kept and that is said; and `--library torch==X` on list, validate, plan,
run and bisect changes the planned cells."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from cudamatrix.cli import build_parser
from cudamatrix.commands.merge import planned_shards
from cudamatrix.commands.selection import options_from
from cudamatrix.common import package_index
from cudamatrix.config.options import CACHE_ENV
from cudamatrix.config.planning import make_plan
from cudamatrix.config.torch_cuda import KEPT, cuda_of_metadata, cuda_of_version_py

METADATA = REPO / "tests" / "data" / "torch-metadata"
SCALE = REPO / "tests" / "data" / "torch-extension" / "scale"
# The wheels' CUDA runtime pins, as PyPI's METADATA gives them.
PINNED = {"2.5.1": "12.4", "2.7.1": "12.6", "2.9.1": "12.8"}


def test_the_cuda_a_wheel_pins() -> None:
    """2.5.1 writes its pin in parentheses (`nvidia-cuda-runtime-cu12 (==12.4.127)`), 2.9.1
    without: both read; a METADATA without the runtime (a CPU wheel) names none."""
    for version, cuda in PINNED.items():
        found = cuda_of_metadata((METADATA / f"torch-{version}.METADATA").read_text())
        assert found is not None and found[0] == cuda, (version, found)
        assert found[1].startswith("nvidia-cuda-runtime-cu12==12.")
    cpu = "\n".join(line for line in (METADATA / "torch-2.9.1.METADATA").read_text()
                    .splitlines() if not line.startswith("Requires-Dist: nvidia"))
    assert cuda_of_metadata(cpu) is None
    assert cuda_of_version_py("cuda: Optional[str] = '12.8'\n") == "12.8"
    assert cuda_of_version_py("cuda: Optional[str] = None\n") is None


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every index request refused (a closed port), as on a machine without network."""
    for name, value in (("PIP_INDEX_URL", "http://127.0.0.1:9/simple"),
                        ("PIP_EXTRA_INDEX_URL", ""), ("PIP_FIND_LINKS", ""),
                        ("PIP_NO_INDEX", ""), ("PIP_TRUSTED_HOST", "")):
        monkeypatch.setenv(name, value)
    package_index.configured.cache_clear()
    yield
    package_index.configured.cache_clear()


def _project(root: Path, pairing: str | None, variant_pairing: str | None = None,
             torch: tuple[str, ...] = ("2.5.1", "2.9.1"),
             toolkits: tuple[str, ...] = ("12.4", "12.8", "13.0")) -> Path:
    """A project of the scale case over `toolkits` and `torch`, sm_90."""
    case = root / "cases" / "scale"
    shutil.copytree(SCALE, case)
    if variant_pairing:
        text = (case / "case.toml").read_text()
        (case / "case.toml").write_text(text.replace(
            'frontend = "torch-extension"',
            f'frontend = "torch-extension"\ntorch_pairing = "{variant_pairing}"'))
    tier = [f"toolkit = {json.dumps(list(toolkits))}", 'arch = ["sm_90"]',
            f"torch = {json.dumps(list(torch))}"]
    if pairing:
        tier.append(f'torch_pairing = "{pairing}"')
    (root / "cudamatrix.toml").write_text('cases = ["cases"]\n\n[tiers.pr]\n'
                                          + "\n".join(tier) + "\n")
    return root


def _kept_headers(cache: Path, *versions: str) -> Path:
    """The cache as the torch library axis leaves it: each release's METADATA beside its
    headers (nothing else is read for the pairing)."""
    for version in versions:
        info = cache / "libraries" / f"torch-{version}-headers" / f"torch-{version}.dist-info"
        info.mkdir(parents=True)
        shutil.copy(METADATA / f"torch-{version}.METADATA", info / "METADATA")
    return cache


def _planned(root: Path, cache: Path, *words: str) -> tuple[set[tuple[str, str]],
                                                              dict[tuple[str, str], str]]:
    """(torch, toolkit) of the planned cells, and of the ruled-out ones with their reason."""
    import os

    here = os.getcwd()
    os.chdir(root)
    try:
        plan = make_plan(options_from(build_parser().parse_args(
            ["run", "--cache", str(cache), *words])))
    finally:
        os.chdir(here)
    kept = {(str(c.library_version), c.toolkit) for c in plan.cells}
    out = {(str(c.library_version), c.toolkit): why for c, why in plan.ruled_out}
    return kept, out


def test_a_tier_pairs_torch_with_its_cuda(tmp_path: Path, offline: None) -> None:
    """`major`: the toolkits cpp_extension accepts for the release (its CUDA's major);
    `exact`: its own major.minor; `all` (the default): every toolkit. What a pairing
    leaves out is ruled out with its reason (a skip in the results), never dropped; all of
    it read offline from the METADATA kept beside the headers."""
    cache = _kept_headers(tmp_path / "cache", "2.5.1", "2.9.1")
    every = {(t, k) for t in ("2.5.1", "2.9.1") for k in ("12.4", "12.8", "13.0")}
    kept, out = _planned(_project(tmp_path / "all", None), cache)
    assert kept == every and not out
    kept, out = _planned(_project(tmp_path / "major", "major"), cache)
    assert kept == {p for p in every if p[1] != "13.0"}
    assert out == {("2.5.1", "13.0"): 'torch 2.5.1 is built with CUDA 12.4: torch_pairing = '
                   '"major" pairs it with CUDA 12.x only',
                   ("2.9.1", "13.0"): 'torch 2.9.1 is built with CUDA 12.8: torch_pairing = '
                   '"major" pairs it with CUDA 12.x only'}
    kept, out = _planned(_project(tmp_path / "exact", "exact"), cache)
    assert kept == {("2.5.1", "12.4"), ("2.9.1", "12.8")}
    assert set(out) == every - kept
    assert out[("2.9.1", "12.4")].endswith('"exact" pairs it with CUDA 12.8 only')
    # A variant's own pairing is taken over its tier's.
    kept, _ = _planned(_project(tmp_path / "variant", "all", "exact"), cache)
    assert kept == {("2.5.1", "12.4"), ("2.9.1", "12.8")}


def test_pairing_read_from_the_index_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """A release not fetched yet: its CUDA from the index's PEP 658 `.metadata` file (a
    file:// index, as pip reads one; the 900 MB wheel is not there and never asked),
    kept in the cache, then answered from there with the index gone."""
    index = tmp_path / "simple"
    wheel = "torch-2.7.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    (index / "torch").mkdir(parents=True)
    (index / "torch" / "index.html").write_text(
        f'<html><body><a href="{wheel}" data-core-metadata="true">{wheel}</a></body></html>')
    shutil.copy(METADATA / "torch-2.7.1.METADATA", index / "torch" / f"{wheel}.metadata")
    for name, value in (("PIP_INDEX_URL", index.as_uri()), ("PIP_EXTRA_INDEX_URL", ""),
                        ("PIP_FIND_LINKS", ""), ("PIP_NO_INDEX", ""), ("PIP_TRUSTED_HOST", "")):
        monkeypatch.setenv(name, value)
    package_index.configured.cache_clear()
    cache = tmp_path / "cache"
    try:
        kept, out = _planned(_project(tmp_path / "p", "exact", torch=("2.7.1",),
                                      toolkits=("12.6", "12.8", "13.0")), cache)
    finally:
        package_index.configured.cache_clear()
    assert kept == {("2.7.1", "12.6")} and set(out) == {("2.7.1", "12.8"), ("2.7.1", "13.0")}
    assert "built with CUDA 12.6" in out[("2.7.1", "12.8")]
    assert json.loads((cache / KEPT).read_text())["2.7.1"]["cuda"] == "12.6"
    shutil.rmtree(index)
    from cudamatrix.config.torch_cuda import torch_cuda

    torch_cuda.cache_clear()  # a new process: the cache file alone answers
    kept, out = _planned(_project(tmp_path / "q", "major", torch=("2.7.1",)), cache)
    assert kept == {("2.7.1", "12.4"), ("2.7.1", "12.8")}


def _torch_index(root: Path, version: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file:// index listing one Linux wheel of torch `version` with its PEP 658
    METADATA (the wheel itself absent), configured as pip's only index."""
    index = root / "simple"
    wheel = f"torch-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    (index / "torch").mkdir(parents=True)
    (index / "torch" / "index.html").write_text(
        f'<html><body><a href="{wheel}" data-core-metadata="true">{wheel}</a></body></html>')
    shutil.copy(METADATA / f"torch-{version}.METADATA", index / "torch" / f"{wheel}.metadata")
    for name, value in (("PIP_INDEX_URL", index.as_uri()), ("PIP_EXTRA_INDEX_URL", ""),
                        ("PIP_FIND_LINKS", ""), ("PIP_NO_INDEX", ""), ("PIP_TRUSTED_HOST", "")):
        monkeypatch.setenv(name, value)
    package_index.configured.cache_clear()
    return index


def test_the_plan_reads_and_keeps_pairings_in_the_runs_cache_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cache` is the plan's cache too: the check of a tier's exclude rows expanded the
    tier with the tool's default cache, so a run given `--cache` asked the index again and
    wrote its answer into ~/.cache/cudamatrix (and read a stale one kept there)."""
    default = tmp_path / "default-cache"
    monkeypatch.setenv(CACHE_ENV, str(default))
    _torch_index(tmp_path, "2.7.1", monkeypatch)
    cache = tmp_path / "cache"
    try:
        kept, _ = _planned(_project(tmp_path / "p", "exact", torch=("2.7.1",),
                                    toolkits=("12.6", "12.8")), cache)
    finally:
        package_index.configured.cache_clear()
    assert kept == {("2.7.1", "12.6")}
    assert json.loads((cache / KEPT).read_text())["2.7.1"]["cuda"] == "12.6"
    assert not default.exists(), sorted(str(p) for p in default.rglob("*"))


def test_an_unknown_pairing_keeps_the_cells_and_says_so(tmp_path: Path, offline: None,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """Offline with nothing kept: the cells stay, for every toolkit, and the run says once
    why (never a silent prune, never a failed plan)."""
    kept, out = _planned(_project(tmp_path / "p", "exact", torch=("2.5.1",)), tmp_path / "c")
    assert kept == {("2.5.1", t) for t in ("12.4", "12.8", "13.0")} and not out
    said = capsys.readouterr().err
    assert said.count("torch 2.5.1's CUDA is not known") == 1, said
    assert "the index did not answer" in said and "kept with every toolkit" in said


def test_pairing_values_refused_by_name(tmp_path: Path, read_cli: Any) -> None:
    root = _project(tmp_path / "t", "minor")
    said = read_cli("validate", cwd=root)
    assert said.code == 2 and "tiers.pr.torch_pairing" in said.output
    assert "'all', 'major', 'exact'" in said.output
    case = tmp_path / "n" / "cases" / "k"
    case.mkdir(parents=True)
    (case / "k.cu").write_text("__global__ void k() {}\n")
    (case / "case.toml").write_text('title = "t"\n[[variant]]\nname = "v"\nfrontend = "nvcc"\n'
                                    'source = "k.cu"\ntorch_pairing = "major"\n')
    said = read_cli("validate", "--corpus", "cases", cwd=tmp_path / "n")
    assert said.code == 2 and "torch_pairing" in said.output and "no torch axis" in said.output


@pytest.mark.parametrize("command", ["list", "validate", "plan", "run", "bisect"])
def test_every_planning_command_takes_library(command: str, tmp_path: Path) -> None:
    """--library is a selection's flag: each command that plans takes it, and the cells it
    plans are the release's (the pr tier's torch is 2.9.1)."""
    import os

    root = tmp_path
    shutil.copytree(SCALE, root / "cases" / "scale")
    extra = ["--over", "toolkit"] if command == "bisect" else []
    here = os.getcwd()
    os.chdir(root)
    try:
        def torches(*words: str) -> set[str | None]:
            args = build_parser().parse_args([command, "--corpus", "cases", *extra, *words])
            return {c.library_version for c in make_plan(options_from(args)).cells}

        assert torches() == {"2.9.1"}
        assert torches("--library", "torch==2.7.1") == {"2.7.1"}
        assert torches("--library", "torch==2.5.1", "--library", "torch==2.7.1") == {
            "2.5.1", "2.7.1"}
    finally:
        os.chdir(here)


def test_list_validate_and_plan_print_the_chosen_release(tmp_path: Path, read_cli: Any
                                                         ) -> None:
    """What a user sees: list's ids, validate's count, and the plan's jobs carrying
    --library (so each job runs the cells the plan counted: merge --plan reads them back)."""
    shutil.copytree(SCALE, tmp_path / "cases" / "scale")
    words = ["--corpus", "cases", "--arch", "sm_90", "--toolkit", "13.0"]
    listed = read_cli("list", *words, "--library", "torch==2.7.1", cwd=tmp_path)
    assert listed.code == 0, listed.output
    assert listed.output.split() == ["scale/scale/13.0/sm_90/torch-2.7.1"]
    checked = read_cli("validate", *words, "--library", "torch==2.5.1", "--library",
                       "torch==2.7.1", cwd=tmp_path)
    assert checked.code == 0 and "2 cells in tier pr" in checked.output, checked.output
    planned = read_cli("plan", *words, "--library", "torch==2.7.1", "--cpu", cwd=tmp_path)
    assert planned.code == 0, planned.output
    jobs = json.loads(planned.output)["include"]
    assert jobs and all("--library torch==2.7.1" in job["args"] for job in jobs)
    (tmp_path / "plan.json").write_text(planned.output)
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        shards = planned_shards(tmp_path / "plan.json", None, build_parser())
    finally:
        os.chdir(here)
    assert [c.id for s in shards for c in s.cells] == ["scale/scale/13.0/sm_90/torch-2.7.1"]


def test_a_pairing_that_leaves_no_cell_says_why(tmp_path: Path, offline: None) -> None:
    """torch 2.7.1 (CUDA 12.6) paired exactly with toolkits that hold no 12.6: the empty
    selection names the pairing, not only the axes."""
    from cudamatrix.errors import UserError

    cache = _kept_headers(tmp_path / "cache", "2.7.1")
    with pytest.raises(UserError, match=r"3 ruled out: torch 2\.7\.1 is built with CUDA "
                                        r"12\.6: torch_pairing = \"exact\""):
        _planned(_project(tmp_path / "p", "exact", torch=("2.7.1",)), cache)
