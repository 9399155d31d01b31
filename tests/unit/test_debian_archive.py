"""Debian's archive as a man in the middle of a plain-http mirror answers it (issue 79,
points 1 and 2), on 127.0.0.1 with a throwaway key in place of Debian's:

1. a forged line in front of the genuine signed InRelease named a forged Packages.xz,
   hence a forged .deb whose nvcc the tool ran: now the InRelease is refused, nothing it
   names is asked for and no nvcc runs;
2. an endless InRelease, an index or a .deb longer than its signer says, were read whole
   into memory: now each is refused after its bound, in one line, in bounded memory;

and a run whose toolkit meets either fails that toolkit (exit status 2, its cells saying
why), while an archive that is what it says is still taken."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import cudamatrix_in_process, write_case
from cudamatrix.common.up_to_date import InputLedger
from cudamatrix.errors import EnvironmentUnavailable
from cudamatrix.providers import debian, python_headers, toolkits
from cudamatrix.stages.cell.environment import Environment
from debian_archive import (
    INDEX,
    NVCC,
    Archive,
    Signer,
    endless,
    needs_tools,
    nvcc_deb,
    packages_xz,
    release_text,
    served,
    sha256,
    throwaway_signer,
    without_proxy,
)

GENUINE_DEB = "pool/non-free/n/nvidia-cuda-toolkit/genuine.deb"
FORGED_DEB = "pool/non-free/n/nvidia-cuda-toolkit/forged.deb"
SAID = "Cuda compilation tools, release 11.8, V11.8.89"
# What one refused answer may cost the run's process: a block or two of the fetch's, and
# the bound of a release file (8 MiB); the bodies served here are 64 MiB.
MEMORY_BOUND = 32 << 20


@pytest.fixture(scope="module")
def signer() -> Iterator[Signer]:
    needs_tools()
    with throwaway_signer() as made:
        yield made


@pytest.fixture
def archive(signer: Signer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[Archive]:
    """A genuine archive signed by the throwaway key (Debian's keyring swapped for it) and a
    forged .deb and index beside it, as the man in the middle would have them ready."""
    without_proxy(monkeypatch)
    made = Archive()
    genuine = nvcc_deb(tmp_path, tmp_path / "genuine-nvcc-ran", SAID)
    packages, packed = packages_xz(genuine, GENUINE_DEB)
    made.answers.update({
        "dists/bookworm/InRelease": signer.clearsign(release_text(packages, packed)),
        f"dists/bookworm/{INDEX}": packed,
        GENUINE_DEB: genuine,
    })
    monkeypatch.setattr(debian, "KEYRING", signer.keyring)
    with served(made):
        monkeypatch.setattr(debian, "ARCHIVE", made.url)
        yield made


def _forge(archive: Archive, tmp_path: Path) -> Path:
    """The attack: a forged line ahead of the signed block, naming a forged index (served
    where the genuine one was) that names a forged .deb; its nvcc's marker returned."""
    marker = tmp_path / "forged-nvcc-ran"
    forged = nvcc_deb(tmp_path, marker, SAID)
    _, packed = packages_xz(forged, FORGED_DEB)
    signed = archive.answers["dists/bookworm/InRelease"]
    assert isinstance(signed, bytes)
    line = f" {sha256(packed)} {len(packed):>16} {INDEX}\n".encode()
    archive.answers.update({"dists/bookworm/InRelease": line + signed,
                            f"dists/bookworm/{INDEX}": packed, FORGED_DEB: forged})
    return marker


def test_a_genuine_archive_is_taken(archive: Archive, tmp_path: Path) -> None:
    got = debian.prepare_debian_nvcc("bookworm", "11.8", tmp_path / "cache", (), (),
                                     InputLedger())
    assert got.version == "11.8.89" and (tmp_path / "genuine-nvcc-ran").exists()
    assert archive.asked == ["dists/bookworm/InRelease", f"dists/bookworm/{INDEX}",
                             GENUINE_DEB]


def test_a_forged_line_ahead_of_the_signed_block_is_refused(archive: Archive,
                                                            tmp_path: Path) -> None:
    """Before: gpgv said "Good signature", the forged line was the first the tool found,
    and the forged nvcc ran (--version); the toolkit was prepared with it."""
    marker = _forge(archive, tmp_path)
    with pytest.raises(EnvironmentUnavailable) as refused:
        debian.prepare_debian_nvcc("bookworm", "11.8", tmp_path / "cache", (), (),
                                   InputLedger())
    said = str(refused.value)
    assert "Debian bookworm's InRelease: text before its signed block" in said
    assert "\n" not in said
    assert not marker.exists()  # no forged nvcc ran
    assert archive.asked == ["dists/bookworm/InRelease"]  # nothing it names was asked for
    assert not (tmp_path / "cache" / "debian" / "bookworm-11.8").exists()


def test_pythons_headers_meet_the_same_refusal(archive: Archive, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The python axis's headers come through the same reader (libpython3.N-dev)."""
    _forge(archive, tmp_path)
    monkeypatch.setattr(python_headers, "SUITES", ("bookworm",))
    with pytest.raises(EnvironmentUnavailable,
                       match="Debian bookworm's InRelease: text before its signed block"):
        python_headers.prepare_python_headers("3.11", tmp_path / "cache", InputLedger())
    assert archive.asked == ["dists/bookworm/InRelease"]


def test_a_line_after_the_signature_or_a_second_block_is_refused(archive: Archive,
                                                                 tmp_path: Path) -> None:
    signed = archive.answers["dists/bookworm/InRelease"]
    assert isinstance(signed, bytes)
    for forged, why in ((signed + b" 00 1 " + INDEX.encode() + b"\n", "text after its signature"),
                        (signed + signed, "not one signed block")):
        archive.answers["dists/bookworm/InRelease"] = forged
        with pytest.raises(EnvironmentUnavailable, match=why):
            debian.unpack_debian_toolkit("bookworm", "11.8", tmp_path / "cache",
                                         InputLedger())


def _peak_while(action: Callable[[], object]) -> tuple[int, BaseException | None]:
    """The most Python memory held while `action` ran, and what it raised."""
    tracemalloc.start()
    raised: BaseException | None = None
    try:
        action()
    except Exception as exc:  # what it raised is the test's to check
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, raised


def test_an_endless_release_file_is_refused_in_bounded_memory(archive: Archive,
                                                               tmp_path: Path) -> None:
    """Before: read whole (2.7 GB resident, then a MemoryError traceback)."""
    archive.answers["dists/bookworm/InRelease"] = endless()
    peak, raised = _peak_while(lambda: debian.unpack_debian_toolkit(
        "bookworm", "11.8", tmp_path / "cache", InputLedger()))
    assert isinstance(raised, EnvironmentUnavailable), raised
    assert "InRelease: an answer over 8 MiB, more than any release file of Debian's" in str(
        raised)
    assert peak < MEMORY_BOUND, peak


def test_an_index_longer_than_its_release_says_is_refused_in_bounded_memory(
        archive: Archive, tmp_path: Path) -> None:
    archive.answers[f"dists/bookworm/{INDEX}"] = endless()
    peak, raised = _peak_while(lambda: debian.unpack_debian_toolkit(
        "bookworm", "11.8", tmp_path / "cache", InputLedger()))
    assert isinstance(raised, EnvironmentUnavailable), raised
    assert "Packages.xz: an answer over" in str(raised) and "its release file gives it" in str(
        raised)
    assert peak < MEMORY_BOUND, peak
    assert GENUINE_DEB not in archive.asked


def test_a_deb_longer_than_its_stanza_says_is_refused_in_bounded_memory(
        archive: Archive, tmp_path: Path) -> None:
    genuine = archive.answers[GENUINE_DEB]
    assert isinstance(genuine, bytes)
    archive.answers[GENUINE_DEB] = endless(genuine)
    peak, raised = _peak_while(lambda: debian.unpack_debian_toolkit(
        "bookworm", "11.8", tmp_path / "cache", InputLedger()))
    assert isinstance(raised, EnvironmentUnavailable), raised
    assert f"an answer over {len(genuine)} bytes, more than the {len(genuine)} bytes its " \
           "stanza gives it" in str(raised)
    assert peak < MEMORY_BOUND, peak
    assert not list((tmp_path / "cache" / "debian").glob("*/package.deb"))


SCALE_CASE = """
    title = "nvcc of the release"
    [[variant]]
    name = "v"
    source = "k.cu"
    frontend = "nvcc"
"""


@pytest.mark.parametrize("attack", ["forged line", "endless release file"])
def test_a_run_whose_toolkit_meets_it_fails_that_toolkit_in_one_line(
        attack: str, archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """The run's toolkit 11.8 takes nvcc from Debian's bookworm (matrix.toml): the wheels'
    part (not what is tested, and no network here) is a toolkit without nvcc. Refused, the
    toolkit is not prepared: exit status 2, one line naming it, the cells saying why."""
    marker = tmp_path / "forged-nvcc-ran"
    if attack == "forged line":
        marker = _forge(archive, tmp_path)
    else:
        archive.answers["dists/bookworm/InRelease"] = endless()

    def wheels(matrix: object, version: str, cache: Path, ledger: InputLedger) -> Environment:
        return Environment(toolkit=version, provider="wheels", root=str(cache),
                           from_wheels=True)

    monkeypatch.setattr(toolkits, "prepare_toolkit", wheels)
    write_case(tmp_path / "cases", "scale", SCALE_CASE,
               {"k.cu": 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n'})
    out = tmp_path / "out"
    run = cudamatrix_in_process("run", "--corpus", str(tmp_path / "cases"), "--toolkit",
                                "11.8", "--arch", "sm_80", "--out", str(out),
                                env={"CUDAMATRIX_CACHE": str(tmp_path / "cache")},
                                cwd=tmp_path)
    assert run.code == 2, run.output
    said = [line for line in run.output.splitlines()
            if line.startswith("error: toolkit 11.8 could not be prepared")]
    assert len(said) == 1, run.output
    why = ("text before its signed block" if attack == "forged line"
           else "more than any release file of Debian's")
    assert why in said[0] and "Traceback" not in run.output
    cells = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cells"]}
    assert cells["scale/v/11.8/sm_80"]["outcome"] == "error"
    assert why in cells["scale/v/11.8/sm_80"]["message"]
    assert not marker.exists()
    assert not (tmp_path / "cache" / "debian" / "bookworm-11.8" / NVCC).exists()


def test_a_genuinely_signed_release_of_another_suite_is_refused(
        archive: Archive, signer: Signer, tmp_path: Path) -> None:
    """Signed, but not the answer to what was asked: bullseye's release served for
    bookworm's (the same key signs both) would roll the toolkit back to an older nvcc; apt
    refuses it too."""
    genuine = archive.answers[GENUINE_DEB]
    assert isinstance(genuine, bytes)
    packages, packed = packages_xz(genuine, GENUINE_DEB)
    archive.answers["dists/bookworm/InRelease"] = signer.clearsign(
        release_text(packages, packed).replace(b"Codename: bookworm", b"Codename: bullseye")
        .replace(b"Suite: oldstable", b"Suite: oldoldstable"))
    with pytest.raises(EnvironmentUnavailable) as refused:
        debian.prepare_debian_nvcc("bookworm", "11.8", tmp_path / "cache", (), (),
                                   InputLedger())
    assert "Debian bookworm's InRelease: is bullseye's: refused" in str(refused.value)
    assert archive.asked == ["dists/bookworm/InRelease"]
