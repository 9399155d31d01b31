"""A real nvcc for toolkits whose PyPI wheels carry none, from Debian's archive.

Debian's ``non-free`` section packages NVIDIA's toolkit: ``nvidia-cuda-toolkit`` 11.8.89
in bookworm and 12.4.131 in trixie hold nvcc, cicc, cudafe++, ptxas, fatbinary, nvlink
and libdevice, the same releases as the 11.8 and 12.4 wheels. No root and no apt
configuration is needed: the suite's InRelease is checked with gpgv against the Debian
archive keyring and only the text its signature covers is read (common/signed_text.py),
the Packages index against the SHA-256 that text gives, the .deb against the one the index
gives, each read no further than the size its signer gives it (common/bounded_fetch.py);
then ``dpkg-deb -x`` unpacks it into the cache. Debian's own
nvcc.profile points at /usr; the unpacked nvcc gets one of its own that points at its
own folders and at the headers of the same release's wheels (nvidia-cuda-dev, with the
headers, is 933 MB: the wheels already have them).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..common import bounded_fetch
from ..common.files import read_marker, write_atomic
from ..common.interruption import run_preparation
from ..common.locks import folder_lock
from ..common.signed_text import verified_text
from ..common.up_to_date import InputLedger
from ..errors import EnvironmentUnavailable
from ..stages.cell.environment import Environment

ARCHIVE = "http://deb.debian.org/debian"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
PACKAGE = "nvidia-cuda-toolkit"
INDEX = "non-free/binary-amd64/Packages.xz"
MARKER = "cudamatrix-debian.json"
DEBIAN_NVCC_BIN = "usr/lib/nvidia-cuda-toolkit/bin"  # nvcc and its tools, in the package
_TIMEOUT_S = 300
# The most read of Debian's answers: a suite's InRelease is 100 to 200 KB (sid's 190 KB, as
# of 2026-12); a Packages.xz no more than InRelease gives it, main's 8.4 MiB, unpacked
# 48 MiB (bookworm's). An endless InRelease read whole was a MemoryError (issue 79).
MAX_RELEASE_BYTES = 8 << 20
MAX_INDEX_BYTES = 64 << 20
MAX_UNPACKED_INDEX_BYTES = 512 << 20


@dataclass(frozen=True)
class DebianNvcc:
    nvcc: str
    root: Path  # the unpacked package, in the cache
    package: str  # "nvidia-cuda-toolkit 12.4.131~12.4.1-2 (trixie)"
    version: str  # nvcc's own: "12.4.131"


def _fetch(url: str, max_bytes: int, bound: str) -> bytes:
    """`url`'s answer from Debian's archive, at most `max_bytes` read (`bound` says what
    that is): bounded_fetch's errors, an HTTP error status one of them."""
    got = bounded_fetch.fetch(url, max_bytes, bound, _TIMEOUT_S)
    if got.status != 200:
        raise bounded_fetch.FetchFailed(f"{url}: HTTP {got.status}")
    return got.body


def _signed_release(suite: str) -> str:
    """The text of the suite's InRelease that its signature covers, checked against
    Debian's keyring (signed_text): never a line around the signed block."""
    if not KEYRING.is_file():
        raise EnvironmentUnavailable(f"checking Debian's signatures needs {KEYRING} "
                                     "(apt-get install gpgv debian-archive-keyring)")
    signed = _fetch(f"{ARCHIVE}/dists/{suite}/InRelease", MAX_RELEASE_BYTES,
                    "any release file of Debian's")
    return verified_text(signed, KEYRING, f"Debian {suite}'s InRelease")


def verified_release(suite: str) -> str:
    """The suite's signed release text (`_signed_release`), refused where it is not the
    answer to `suite` though signed (`_not_the_release_asked`)."""
    text = _signed_release(suite)
    refusal = _not_the_release_asked(text, suite)
    if refusal:
        raise bounded_fetch.AnswerRefused(f"Debian {suite}'s InRelease: {refusal}: refused")
    return text


def _field(text: str, name: str) -> str:
    found = re.search(rf"^{name}:[ \t]*(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def _not_the_release_asked(text: str, suite: str) -> str:
    """Why a release text the signature covers is still not the answer to `suite`, or "":
    another suite's (its Codename and Suite name neither). Each suite's release is signed
    by the same key: served in place of the one asked, bullseye's would roll the toolkit
    back to its nvcc. apt refuses it too. (Valid-Until is not held against the clock: the
    archives this tool is pointed at include frozen mirrors and snapshots, whose testing
    suites' releases are all past it; forky's here was, by a month.)"""
    names = {_field(text, "Codename"), _field(text, "Suite")} - {""}
    if suite not in names:
        return f"is {_field(text, 'Codename') or _field(text, 'Suite') or 'no suite'}'s"
    return ""


def _listed(release: str, path: str) -> tuple[str, int] | None:
    """The SHA-256 and size a verified release text gives `path`, or None."""
    found = re.search(rf"^ ([0-9a-f]{{64}})\s+(\d+)\s+{re.escape(path)}$", release,
                      re.MULTILINE)
    return (found.group(1), int(found.group(2))) if found else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified_index(release: str, suite: str, index: str) -> str:
    """The suite's `index` (``main/binary-amd64/Packages.xz``), fetched and checked against
    the SHA-256 its verified InRelease gives, as text. Read no further than the size the
    release gives it, and unpacked no further than the size it gives the unpacked index
    (each capped: MAX_INDEX_BYTES, MAX_UNPACKED_INDEX_BYTES)."""
    listed = _listed(release, index)
    if listed is None:
        raise EnvironmentUnavailable(f"Debian {suite}: InRelease lists no {index}")
    digest, size = listed
    if size > MAX_INDEX_BYTES:
        raise bounded_fetch.AnswerRefused(
            f"Debian {suite}: InRelease gives {index} {size} bytes, more than any index "
            f"({bounded_fetch.amount(MAX_INDEX_BYTES)})")
    data = _fetch(f"{ARCHIVE}/dists/{suite}/{index}", size,
                  f"the {size} bytes its release file gives it")
    if _sha256(data) != digest:
        raise bounded_fetch.AnswerRefused(f"Debian {suite}: {index} does not match its "
                                          "SHA-256")
    unpacked = _listed(release, index.removesuffix(".xz"))
    limit = min(unpacked[1] if unpacked else MAX_UNPACKED_INDEX_BYTES,
                MAX_UNPACKED_INDEX_BYTES)
    try:
        text = lzma.LZMADecompressor().decompress(data, max_length=limit + 1)
    except lzma.LZMAError as exc:
        raise bounded_fetch.AnswerRefused(f"Debian {suite}: {index} is no xz file "
                                          f"({exc})") from None
    if len(text) > limit:
        raise bounded_fetch.AnswerRefused(f"Debian {suite}: {index} unpacks past "
                                          f"{bounded_fetch.amount(limit)}")
    return text.decode(errors="replace")


def package_stanza(text: str, package: str, version_prefix: str = "") -> dict[str, str] | None:
    """The fields of `package`'s first stanza in a Packages index whose version starts
    with `version_prefix`, or None. Found by its Package line, not by splitting the whole
    index (main's is 60,000 stanzas)."""
    for found in re.finditer(rf"^Package: {re.escape(package)}$", text, re.MULTILINE):
        end = text.find("\n\n", found.start())
        stanza = text[found.start():end if end >= 0 else len(text)]
        fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", stanza, re.MULTILINE))
        if fields.get("Version", "").startswith(version_prefix):
            return fields
    return None


def package_entry(release: str, suite: str, index: str, package: str,
                  version_prefix: str = "") -> dict[str, str]:
    """`package`'s stanza in the suite's `index` (its section's Packages.xz), the index
    verified; a package the index lacks raises, naming the suite and the section."""
    fields = package_stanza(verified_index(release, suite, index), package, version_prefix)
    if fields is None:
        section = index.split("/")[0]
        raise EnvironmentUnavailable(f"Debian {suite} {section} has no {package} "
                                     f"{version_prefix}".rstrip())
    return fields


def fetch_deb(entry: dict[str, str], into: Path) -> Path:
    """The .deb a stanza names, streamed into `into`, no further than the Size the stanza
    gives it, and checked against its SHA-256."""
    size = entry.get("Size", "")
    if not size.isdigit():
        raise bounded_fetch.AnswerRefused(f"{entry['Filename']}: its stanza gives no Size")
    deb = into / "package.deb"
    got = bounded_fetch.download(f"{ARCHIVE}/{entry['Filename']}", deb, int(size),
                                 f"the {size} bytes its stanza gives it", _TIMEOUT_S)
    if got.sha256 != entry["SHA256"]:
        deb.unlink(missing_ok=True)
        raise bounded_fetch.AnswerRefused(f"{entry['Filename']} does not match its SHA-256")
    return deb


def _from_here(folder: str, nvcc_dir: Path | None) -> str:
    """`folder` as nvcc.profile names it: from nvcc's own folder ($(_HERE_)) where both are
    on this machine, so every run sharing one unpacked tree through a linked cache (a
    team's, the tests') writes the same profile; a run that named its own cache's path
    rewrote it under another run's running nvcc (CUTLASS's host pass then missed
    crt/host_runtime.h). Absolute where not (a path inside an image)."""
    if nvcc_dir is None or not os.path.isdir(folder) or not nvcc_dir.is_dir():
        return folder
    return "$(_HERE_)/" + os.path.relpath(os.path.realpath(folder), os.path.realpath(nvcc_dir))


def nvcc_profile(include_dirs: tuple[str, ...], library_dirs: tuple[str, ...],
                 nvcc_dir: Path | None = None) -> str:
    """nvcc.profile for the unpacked tree: its tools, libdevice, and the wheels' headers
    (paths as nvcc will see them: here, from its folder, or inside an image)."""
    includes = " ".join(f'"-I{_from_here(d, nvcc_dir)}"' for d in include_dirs)
    libraries = " ".join(f'"-L{_from_here(d, nvcc_dir)}"' for d in library_dirs)
    return ("# Written by cudamatrix for an unpacked Debian nvidia-cuda-toolkit.\n"
            "NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice\n"
            "PATH += $(_HERE_):$(_HERE_)/../../../bin:\n"
            f"INCLUDES += {includes} $(_SPACE_)\n"
            f"LIBRARIES =+ $(_SPACE_) {libraries}\n")


def unpack_once(root: Path, marker_name: str, ledger: InputLedger, what: str, label: str,
                find: Callable[[Path], tuple[dict[str, str], str]],
                tidy: Callable[[Path], None] | None = None) -> dict[str, object]:
    """A Debian package unpacked once into `root`, known by its marker (`marker_name`,
    watched in `ledger`): the marker's facts. `find` gives, from a scratch folder, the
    package's stanza (its index verified) and how the marker names it; `tidy` takes out
    what the unpacked tree must not keep. Whole or not at all: unpacked beside `root`,
    renamed into place. `what` (dpkg-deb's absence) and `label` (a failure) say which
    package. The caller holds the folder's lock."""
    marker = root / marker_name
    ledger.watch(marker, 0)  # the unpacked package, known by its marker
    facts = read_marker(marker)
    if isinstance(facts, dict) and "package" in facts:
        return facts
    if shutil.which("dpkg-deb") is None:
        raise EnvironmentUnavailable(f"unpacking {what} needs dpkg-deb")
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        entry, named = find(staging)
        deb = fetch_deb(entry, staging)
        run_preparation(["dpkg-deb", "-x", str(deb), str(staging)]).check_returncode()
        deb.unlink()
        if tidy is not None:
            tidy(staging)
    except (OSError, subprocess.CalledProcessError, KeyError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentUnavailable(f"{label}: {exc}") from None
    except EnvironmentUnavailable:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    facts = {"package": named}
    (staging / marker_name).write_text(json.dumps(facts))
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return facts


def unpack_debian_toolkit(suite: str, toolkit: str, cache: Path, ledger: InputLedger
                          ) -> tuple[Path, dict[str, object]]:
    """Debian `suite`'s nvidia-cuda-toolkit for `toolkit` (e.g. trixie, 12.4), unpacked once
    into the cache (its marker watched in `ledger`): its root and the marker's facts. The
    caller holds the folder's lock."""
    root = cache / "debian" / f"{suite}-{toolkit}"

    def find(staging: Path) -> tuple[dict[str, str], str]:
        entry = package_entry(verified_release(suite), suite, INDEX, PACKAGE,
                              f"{toolkit}.")
        return entry, f"{PACKAGE} {entry['Version']} ({suite})"

    def tidy(staging: Path) -> None:
        # Debian's gcc/g++ wrappers pick a host compiler by their own list: the cell's
        # host compiler is chosen by the run instead (-ccbin), and said.
        for wrapper in ("gcc", "g++", "nvcc.profile"):
            (staging / DEBIAN_NVCC_BIN / wrapper).unlink(missing_ok=True)

    facts = unpack_once(root, MARKER, ledger, "Debian's nvcc", f"Debian {suite} {PACKAGE}",
                        find, tidy)
    return root, facts


def unpack_debian_nvcc(suite: str, toolkit: str, cache: Path, ledger: InputLedger) -> None:
    """Debian `suite`'s nvcc for `toolkit` fetched and unpacked once into the cache, under
    its folder's lock, without what a toolkit's install adds to it (its profile naming the
    wheels' folders, its version): started beside the wheels' install, which it does not
    need (issue 72)."""
    with folder_lock(cache / "debian" / f"{suite}-{toolkit}"):
        unpack_debian_toolkit(suite, toolkit, cache, ledger)


def prepare_debian_nvcc(suite: str, toolkit: str, cache: Path, include_dirs: tuple[str, ...],
                        library_dirs: tuple[str, ...], ledger: InputLedger) -> DebianNvcc:
    """Debian `suite`'s nvcc for `toolkit` (e.g. trixie, 12.4), unpacked once into the cache."""
    root = cache / "debian" / f"{suite}-{toolkit}"
    with folder_lock(root):  # a second run sharing the cache waits for this unpack
        root, facts = unpack_debian_toolkit(suite, toolkit, cache, ledger)
        marker = root / MARKER
        nvcc_dir = root / DEBIAN_NVCC_BIN
        profile = nvcc_dir / "nvcc.profile"
        wanted = nvcc_profile(include_dirs, library_dirs, nvcc_dir)
        if not profile.is_file() or profile.read_text() != wanted:  # a warm run writes nothing
            # Whole or not at all: another run's nvcc may be reading it (each run names the
            # wheels' folders through its own cache path).
            write_atomic(profile, wanted)
        nvcc = nvcc_dir / "nvcc"
        if "version" not in facts:  # asked of nvcc itself once, then kept with the unpack
            said = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                                  check=False)
            found = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", said.stdout)
            if not found:
                raise EnvironmentUnavailable(f"Debian {suite}'s nvcc does not run: "
                                             f"{(said.stderr or said.stdout).strip()[-200:]}")
            facts["version"] = found.group(1)
            write_atomic(marker, json.dumps(facts))
    return DebianNvcc(str(nvcc), root, str(facts["package"]), str(facts["version"]))


def nvcc_unavailable(toolkit: str, suite: str, exc: Exception) -> str:
    """Why a wheels toolkit has no nvcc when Debian's could not be had (fetch, checks,
    unpack): the same words here and in the images."""
    return f"toolkit {toolkit} (wheels) has no nvcc, and Debian {suite}'s could not be had: {exc}"


def shared_cudart_dirs(env: Environment, cache: Path) -> tuple[str, ...]:
    """Where a host build links the wheels' shared cudart: the 12.x wheels ship only
    libcudart.so.12 (no static cudart, no unversioned name), so a folder of the cache
    gives it the name ``-lcudart`` looks for, and its own folder is where it loads from."""
    found = sorted(Path(env.root).glob("nvidia/cuda_runtime/lib/libcudart.so.*"))
    if not found:
        return ()
    link = cache / "debian" / f"cudart-{env.toolkit}"
    link.mkdir(parents=True, exist_ok=True)
    name = link / "libcudart.so"
    if not name.is_symlink() or name.resolve() != found[0].resolve():
        name.unlink(missing_ok=True)
        name.symlink_to(found[0])
    return str(link), str(found[0].parent)
