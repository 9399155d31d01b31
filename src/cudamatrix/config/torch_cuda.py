"""The CUDA each torch release is built with, and which toolkits a tier pairs it with.

PyTorch's extensions are built by `torch.utils.cpp_extension`, which compares the toolkit
it is given with the CUDA its torch was built with (`torch.version.cuda`): another major
is refused outright, another minor only warned about. PyPI's Linux wheels of a release
pin their CUDA runtime (``Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127``: 2.5.1 is
CUDA 12.4, 2.7.1 12.6, 2.9.1 12.8), so a release's pairing is read from its wheel's
METADATA alone, never the 900 MB wheel: the copy kept beside its headers where the
library axis already fetched them, else the index's PEP 658 ``.metadata`` file (30 KB).
Each answer is kept in the cache (``libraries/torch-cuda.json``) and read once a process.

A tier (``torch_pairing``) or a variant chooses what is planned: ``all`` (every toolkit
with every torch, the default), ``major`` (the toolkits whose major is the release's, as
cpp_extension accepts them) or ``exact`` (the release's own major.minor). A cell the
pairing leaves out is ruled out with its reason, like any cell that cannot exist. Where a
release's CUDA cannot be read (offline, an index without PEP 658, a CPU-only torch) the
run says so once and keeps every toolkit for it: never a silent prune.
"""

from __future__ import annotations

import contextlib
import email.parser
import functools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from ..common import package_index
from ..common.files import read_marker, write_atomic
from ..common.log_line import say
from ..common.versions import INSTALLED

# The values a tier's or a variant's `torch_pairing` takes; the first is the default.
PAIRINGS = ("all", "major", "exact")
ALL = PAIRINGS[0]
# The library whose releases are paired (matrix.toml's [libraries.torch]).
TORCH = "torch"
# Where the answers are kept, under the cache folder.
KEPT = Path("libraries") / "torch-cuda.json"
# A CUDA version as the cache keeps it (major.minor): anything else there is damage.
_KEPT_CUDA = re.compile(r"\d{1,3}\.\d{1,3}")
# The CUDA runtime's package, as a torch wheel requires it (cu12, cu13, or unsuffixed).
_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
# `cuda: Optional[str] = '12.8'` (or `cuda = None`) in an installed torch's version.py.
_VERSION_PY_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)",
                              re.MULTILINE)


@dataclass(frozen=True)
class TorchCuda:
    """A torch release's CUDA (major.minor) and where it was read; `cuda` None: unknown,
    `why` says why."""

    version: str
    cuda: str | None
    source: str = ""
    why: str = ""


def cuda_of_metadata(text: str) -> tuple[str, str] | None:
    """(major.minor, the requirement) of the CUDA runtime a wheel's METADATA pins, or None
    where it pins none (a CPU-only wheel)."""
    message = email.parser.Parser().parsestr(text, headersonly=True)
    for line in message.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if not _RUNTIME.match(canonicalize_name(requirement.name)):
            continue
        for spec in requirement.specifier:
            if spec.operator in ("==", "==="):
                try:
                    release = Version(spec.version.rstrip(".*")).release
                except InvalidVersion:
                    continue
                if len(release) >= 2:
                    return f"{release[0]}.{release[1]}", f"{requirement.name}{spec}"
    return None


def cuda_of_version_py(text: str) -> str | None:
    """The CUDA an installed torch's version.py names (None for a CPU build)."""
    found = _VERSION_PY_CUDA.search(text)
    value = (found.group(1) or found.group(2)) if found else None
    if not value:
        return None
    parts = value.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) \
        else None


def _installed() -> TorchCuda:
    """The CUDA of the torch this Python has (its version.py read, torch not imported)."""
    import importlib.util

    found = importlib.util.find_spec(TORCH)
    if found is None or not found.submodule_search_locations:
        return TorchCuda(INSTALLED, None, why=f"this Python ({sys.executable}) has no torch")
    path = Path(next(iter(found.submodule_search_locations))) / "version.py"
    try:
        cuda = cuda_of_version_py(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return TorchCuda(INSTALLED, None, why=f"{path}: {exc.strerror or exc}")
    if cuda is None:
        return TorchCuda(INSTALLED, None, why=f"{path} names no CUDA (a CPU-only torch)")
    return TorchCuda(INSTALLED, cuda, f"{path}")


def _kept_headers(version: str, cache: Path) -> TorchCuda | None:
    """The release's METADATA as the library axis kept it beside its headers."""
    folder = cache / "libraries" / f"{TORCH}-{version}-headers"
    for metadata in sorted(folder.glob(f"{TORCH}-*.dist-info/METADATA")):
        try:
            found = cuda_of_metadata(metadata.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if found:
            return TorchCuda(version, found[0], f"{found[1]} ({metadata.name} kept in {folder})")
    return None


def _candidates(version: str) -> list[str]:
    """The URLs of the release's wheels whose METADATA is asked: this machine's first,
    then Linux x86_64's (the wheels that carry CUDA), at most three."""
    here = package_index.installable_tags()
    ranked: list[tuple[int, str]] = []
    for entry in package_index.listing(TORCH).files:
        filename = str(entry.get("filename", ""))
        if not filename.endswith(".whl") or entry.get("yanked"):
            continue
        try:
            _, found, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        if str(found) != version:
            continue
        rank = 0 if tags & here else 1 if "linux" in filename and "x86_64" in filename else 2
        if rank < 2:
            ranked.append((rank, str(entry["url"])))
    return [url for _, url in sorted(ranked)[:3]]


def _from_index(version: str) -> TorchCuda:
    """The release's CUDA from its wheels' PEP 658 METADATA on the configured index."""
    try:
        urls = _candidates(version)
        if not urls:
            return TorchCuda(version, None, why="the index lists no Linux wheel of it")
        for url in urls:
            status, _, body = package_index.get(url + ".metadata")
            if status != 200:
                continue
            found = cuda_of_metadata(body.decode("utf-8", errors="replace"))
            if found:
                return TorchCuda(version, found[0], f"{found[1]} (its wheel's METADATA)")
        return TorchCuda(version, None, why="its wheels' METADATA (PEP 658) pins no CUDA "
                         "runtime, or the index serves none")
    except package_index.IndexUnreachable as exc:
        return TorchCuda(version, None, why=f"the index did not answer ({exc})")


def _kept_answer(kept: object, version: str) -> TorchCuda | None:
    """The cache's answer for `version`, or None where it has none or a damaged one (a CUDA
    that is no major.minor was an InvalidVersion in list, plan and run): asked again, and
    the record made again."""
    said = kept.get(version) if isinstance(kept, dict) else None
    if not isinstance(said, dict):
        return None
    cuda, source = said.get("cuda"), said.get("source", "")
    if not isinstance(cuda, str) or not _KEPT_CUDA.fullmatch(cuda) \
            or not isinstance(source, str):
        return None
    return TorchCuda(version, cuda, source)


def _remember(cache: Path, found: TorchCuda) -> None:
    path = cache / KEPT
    kept = read_marker(path)
    kept = kept if isinstance(kept, dict) else {}
    kept[found.version] = {"cuda": found.cuda, "source": found.source}
    # A cache that cannot be written is asked again next time: nothing is lost.
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(kept, indent=1, sort_keys=True))


@functools.cache
def torch_cuda(version: str, cache: Path) -> TorchCuda:
    """The CUDA torch `version` is built with: the cache's answer, the METADATA kept beside
    its headers, else its wheel's METADATA from the index (kept once read). An unknown
    answer is not kept: the next run online reads it."""
    if version == INSTALLED:
        return _installed()
    kept = _kept_answer(read_marker(cache / KEPT), version)
    if kept is not None:
        return kept
    found = _kept_headers(version, cache) or _from_index(version)
    if found.cuda is not None:
        _remember(cache, found)
    return found


@functools.cache
def _say_unknown(version: str, why: str) -> None:
    """Said once a process: a pairing asked for that cannot be read keeps the cells."""
    say(f"cudamatrix: torch {version}'s CUDA is not known ({why}): its cells are kept with "
        "every toolkit, as torch_pairing = \"all\" keeps them", stderr=True)


def unpaired(version: str, toolkit: str, pairing: str, cache: Path) -> str | None:
    """Why torch `version` is not planned with `toolkit` under `pairing`, or None."""
    if pairing == ALL:
        return None
    found = torch_cuda(version, cache)
    if found.cuda is None:
        _say_unknown(version, found.why)
        return None
    cuda, given = Version(found.cuda).release, Version(toolkit).release
    if pairing == "major" and cuda[0] == given[0]:
        return None
    if pairing == "exact" and cuda[:2] == given[:2]:
        return None
    paired = f"CUDA {cuda[0]}.x" if pairing == "major" else f"CUDA {found.cuda}"
    return (f"torch {version} is built with CUDA {found.cuda}: torch_pairing = "
            f"\"{pairing}\" pairs it with {paired} only")
