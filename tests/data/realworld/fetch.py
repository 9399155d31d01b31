"""Bring the real kernels of sources.toml into a scratch corpus, from cached PyPI packages.

    python tests/data/realworld/fetch.py OUT_DIR      # what the test does, by hand

Each package is downloaded once (pip download, no dependencies) into
``$CUDAMATRIX_CACHE/realworld`` and read in place; only the named members are
written (a member ending in ``/`` is a whole folder, such as a library's headers),
next to a copy of our case.toml. Nothing fetched is ever committed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from cudamatrix.common.tomlfile import tomllib

HERE = Path(__file__).parent


def cache_dir() -> Path:
    base = os.environ.get("CUDAMATRIX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cudamatrix")
    return Path(base) / "realworld"


def _wheel(package: str, version: str) -> Path:
    folder = cache_dir()
    stem = re.sub(r"[-_.]+", "_", package).lower() + f"-{version}-"
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(stem)]
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--disable-pip-version-check", "-d", str(folder),
                    f"{package}=={version}"], check=True, timeout=900)
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(stem)]
    if not found:
        raise RuntimeError(f"pip download {package}=={version} left no wheel in {folder}")
    return found[0]


def _sdist(package: str, version: str) -> Path:
    """A release's sdist, unpacked: fetched from the index and checked against its sha256
    by the tool's own `sdist:` source (no build step, no code of the package run)."""
    from cudamatrix.config.sources import SourceSpec
    from cudamatrix.config.sources import fetch as fetch_source

    spec = SourceSpec.parse(f"sdist:{package}=={version}", "tests/data/realworld/sources.toml")
    return fetch_source(spec, HERE, cache_dir().parent).path


def fetch(out: Path) -> dict[str, str]:
    """Write every case of sources.toml under `out`; returns {package: wheel file name, or
    the unpacked sdist's folder}."""
    spec = tomllib.loads((HERE / "sources.toml").read_text())
    wheels = {name: _wheel(name, version) for name, version in spec["packages"].items()}
    sdists = {name: _sdist(name, version) for name, version in spec.get("sdists", {}).items()}
    for entry in spec["fetch"]:
        case = out / entry["case"]
        shutil.copytree(HERE / "cases" / entry["case"], case, dirs_exist_ok=True)
        if entry["package"] in sdists:  # members are paths in the unpacked sdist
            for target, member in entry["files"].items():
                found = sdists[entry["package"]] / member
                if not found.exists():
                    raise RuntimeError(f"{entry['package']}'s sdist has no {member}")
                if found.is_dir():
                    shutil.copytree(found, case / target, dirs_exist_ok=True)
                else:
                    (case / target).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(found, case / target)
            continue
        with zipfile.ZipFile(wheels[entry["package"]]) as archive:
            names = archive.namelist()
            for target, member in entry["files"].items():
                # A member ending in "/" is a folder (a library's headers): all of it.
                pairs = [(target + name[len(member):], name) for name in names
                         if name.startswith(member) and not name.endswith("/")] \
                    if member.endswith("/") else [(target, member)]
                if not pairs:
                    raise RuntimeError(f"{entry['package']} has no {member}")
                for relative, name in pairs:
                    path = case / relative
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(archive.read(name))
    return {**{name: wheel.name for name, wheel in wheels.items()},
            **{name: str(folder) for name, folder in sdists.items()}}


if __name__ == "__main__":
    print(fetch(Path(sys.argv[1])))
