"""Every header of a CUDA release in a toolkit made of wheels, as a full install has them.

The toolkit's compilers come from a few wheels (nvcc, NVRTC, the runtime, CCCL); a full
install of the same release also has cuRAND's ``curand_kernel.h``, cuBLAS's and
cuBLASLt's, cuFFT's, cuSPARSE's, cuSOLVER's, NPP's, nvJPEG's, NVTX's, NVML's, CUPTI's,
nvJitLink's headers, and real kernels include them. Without them a source that builds
on any CUDA install was reported as failing to compile on that release: the tool's
environment, shown as CUDA's answer.

Which components make up a release, and at which versions, is NVIDIA's own word: the
``cuda-toolkit`` metapackage of that release pins every component in its ``all`` extra
(the newest build of the release: ``cuda-toolkit==12.4.*``). Only the headers of the
components the compilers' wheels do not already bring are taken, read out of each wheel
by byte ranges (wheel_index.py): a few MB a toolkit, against the 1.5 GB of libraries the
same wheels hold. They go into the toolkit's own tree at the path their wheel gives them
(``nvidia/cu13/include`` for 13.x, ``nvidia/<component>/include`` before), so nvcc's
own profile, NVRTC's include folders, Debian's nvcc and the containers' copies of the
tree see one toolkit, as an install lays it out. A file the compilers' wheels ship is
never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..common.files import read_marker, write_atomic
from ..common.interruption import interrupted
from ..common.locks import folder_lock
from ..common.up_to_date import InputLedger
from ..errors import EnvironmentUnavailable
from .wheel_index import IndexUnreachable, extract_downloaded, extract_members, wheel_for

HEADERS_MARKER = "cudamatrix-release-headers.json"
METAPACKAGE = "cuda-toolkit"
# Bump when what is taken from the components changes.
HEADERS_FORMAT = 1
_DOWNLOAD_TIMEOUT_S = 900
_PARALLEL = 8


def is_header(member: str) -> bool:
    """A member of a wheel's include folder that a compile can read (not the folder's
    Python package marker)."""
    parts = member.split("/")
    return "include" in parts[:-1] and parts[-1] != "__init__.py" and "__pycache__" not in parts


def _metadata_requirements(text: str) -> list[Requirement]:
    found = []
    for line in Parser().parsestr(text).get_all("Requires-Dist") or []:
        try:
            found.append(Requirement(line))
        except InvalidRequirement:
            continue
    return found


def release_components(toolkit: str) -> list[Requirement]:
    """Every component of CUDA `toolkit` for this machine, pinned as NVIDIA's
    ``cuda-toolkit`` metapackage of that release pins it (its ``all`` extra)."""
    pin = Requirement(f"{METAPACKAGE}=={toolkit}.*")
    with tempfile.TemporaryDirectory(prefix="cudamatrix-release-") as folder:
        def metadata(member: str) -> bool:
            return member.endswith(".dist-info/METADATA")
        try:
            extract_members(wheel_for(pin), metadata, Path(folder))
        except IndexUnreachable:
            extract_downloaded(str(pin), metadata, Path(folder), _DOWNLOAD_TIMEOUT_S)
        found = sorted(Path(folder).glob("*.dist-info/METADATA"))
        if not found:
            raise EnvironmentUnavailable(f"{pin}: the index has no such metapackage")
        requirements = _metadata_requirements(found[0].read_text(errors="replace"))
    components: dict[str, Requirement] = {}
    for requirement in requirements:
        marker = requirement.marker
        if marker is None or not marker.evaluate({"extra": "all"}):
            continue
        components.setdefault(canonicalize_name(requirement.name), requirement)
    if not components:
        raise EnvironmentUnavailable(f"{pin}: its metadata lists no component")
    return [components[name] for name in sorted(components)]


def _component_headers(requirement: Requirement, staging: Path) -> str:
    """One component's headers into `staging`; the version taken."""
    if interrupted():  # the run is stopping: no more requests for it
        raise KeyboardInterrupt
    target = staging / canonicalize_name(requirement.name)
    try:
        wheel = wheel_for(requirement)
        extract_members(wheel, is_header, target)
        return str(wheel.version)
    except IndexUnreachable:
        shutil.rmtree(target, ignore_errors=True)
        extract_downloaded(str(requirement), is_header, target, _DOWNLOAD_TIMEOUT_S)
        return str(requirement.specifier)


def _move_in(source: Path, root: Path) -> None:
    """Each file of `source` into `root` at the same path, where `root` has none."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            destination = root / path.relative_to(source)
            if not destination.exists():
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, destination)


def _kept(root: Path, toolkit: str) -> dict[str, str] | None:
    """The components whose headers `root` already holds for `toolkit`, by its marker."""
    marker = root / HEADERS_MARKER
    if not marker.is_file():
        return None
    kept = read_marker(marker)
    if not isinstance(kept, dict) or kept.get("format") != HEADERS_FORMAT \
            or kept.get("release") != toolkit:
        return None
    components = kept.get("components")
    if not isinstance(components, dict) \
            or not all(isinstance(v, str) for v in components.values()):
        return None
    return dict(components)


@dataclass(frozen=True)
class FetchedHeaders:
    """The headers of the components the compilers' wheels do not bring, each in its own
    folder of `staging` (by canonical name), and the version taken of each."""

    staging: Path
    components: dict[str, str]


# A staging folder untouched this long is a killed run's: none takes more than minutes.
LEFTOVER_AFTER_S = 24 * 3600


def _remove_old_stagings(root: Path) -> None:
    """Stagings of `root`'s headers a killed run left: by age, not by process id (another
    process's id may mean nothing here: a container sharing the cache)."""
    now = time.time()
    for pattern in (f"{root.name}.headers.partial-*", f"{root.name}.headers-partial-*"):
        for leftover in root.parent.glob(pattern):
            with contextlib.suppress(OSError):
                if now - leftover.stat().st_mtime > LEFTOVER_AFTER_S:
                    shutil.rmtree(leftover, ignore_errors=True)


def fetch_headers(root: Path, toolkit: str, compilers: Sequence[str]) -> FetchedHeaders:
    """The release's other components' headers into a staging folder of its own beside
    `root`: this needs nothing of `root`, so it runs while pip installs the compilers
    there, outside the folder's lock (a process preparing the same toolkit at the same
    time has its own staging)."""
    own = {canonicalize_name(Requirement(r).name) for r in compilers}
    wanted = [c for c in release_components(toolkit) if canonicalize_name(c.name) not in own]
    _remove_old_stagings(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{root.name}.headers.partial-", dir=root.parent))
    try:
        with ThreadPoolExecutor(_PARALLEL) as pool:
            versions = list(pool.map(lambda c: _component_headers(c, staging), wanted))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return FetchedHeaders(staging, {c.name: v for c, v in zip(wanted, versions, strict=True)})


def release_headers(root: Path, toolkit: str, compilers: Sequence[str], ledger: InputLedger
                    ) -> dict[str, str]:
    """Put the headers of every component of CUDA `toolkit` that the compilers' wheels
    (`compilers`, requirement strings) do not bring into the toolkit tree `root`, once;
    the components taken, by name and version."""
    marker = root / HEADERS_MARKER
    ledger.watch(marker, 0)
    with folder_lock(root):
        kept = _kept(root, toolkit)
        if kept is not None:
            return kept
        fetched = fetch_headers(root, toolkit, compilers)
        try:
            for name in fetched.components:
                _move_in(fetched.staging / canonicalize_name(name), root)
        finally:
            shutil.rmtree(fetched.staging, ignore_errors=True)
        write_atomic(marker, json.dumps({"format": HEADERS_FORMAT, "release": toolkit,
                                         "components": fetched.components}, sort_keys=True))
        return fetched.components
