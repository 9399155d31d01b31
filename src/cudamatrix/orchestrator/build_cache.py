"""A build case's build kept in the cache, so an unchanged build is not built again.

A build case (the build frontend: cmake, pip wheel, setup.py) was keyed by nothing: every
run built it anew, and a run that could not be answered whole from its record (another
case added to the corpus) rebuilt every unchanged build (8.9 s and 9.6 s each, issue 82).
A build's verdict and outputs are what its project's tree, the case's [variant.build],
what the run found for it (its tools, $CUDA_HOME), the toolkit, the arch, the host
compiler and the variables its commands see make: the key hashes all of them (the compile
key's material, the project's tree among its folders, and the build's own). An entry
holds the build's record and the built tree as the build left it (links kept as links,
never followed), copied into the cell's folder on a hit, where the pipeline takes it as an
earlier run's build (--prebuilt's way) and audits its outputs; a GPU runner that takes the
run's folders with --prebuilt finds the tree its `test` command runs in, as after a build.

Only a run without GPU stages is served: with a GPU the build's own process runs the test
in the tree it built, and builds it. A build the run stopped (a timeout, a signal, the
memory limit) says nothing about the project and is not kept.

Builds are taken, read only, from the caches `--compile-cache-from` names too, as compiles
are: a CI job's restored cache, a team's shared folder. Their builds ran with that cache's
paths (the toolkit as $CUDA_HOME, a library on $PYTHONPATH, both unpacked in the cache), so
the key holds the run's cache folder as a mark, never its path: the same build made from
the same toolkit and library releases in another cache is the same key (a build kept in a
CI job's restored cache was made again by every shard pointed at it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import asdict, replace
from pathlib import Path

from ..common.recorded import read_cache
from ..stages.cell.files import BUILD_SOURCE, COMPILE_RECORD
from ..stages.cell.job import Job
from ..stages.cell.result import StageResult
from ..stages.frontends.build_run import build_environment, set_for_build
from .compile_cache import CACHE_FORMAT, Unkeyable, compile_key, key_folders

# What a build's record may say and still be served again: the build's own verdicts.
KEPT_STATUSES = frozenset({"ok", "failed", "unavailable"})
_ENTRY_RECORD = "record.json"
# The largest built tree kept (a CMake project's is megabytes): past it, built each run.
MAX_TREE_BYTES = 1 << 30


def _size(tree: Path) -> int:
    """The bytes of the regular files under `tree` (links not followed)."""
    total = 0
    for folder, _, names in os.walk(tree):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def build_key(job: Job, provider: str, cache: Path | None = None) -> str | None:
    """Everything that decides a build, hashed; None for a job that is no build or whose
    inputs no key can stand for (compile_key's Unkeyable). Paths under `cache` (the run's
    cache folder, as given or resolved) are hashed from it, so another cache's build of
    the same inputs has the same key (BuildCache's read_from)."""
    if job.build is None or job.build_setting is None:
        return None
    # A build's source is its case's folder: its parent is the corpus, whose other cases
    # (one added) are no input of this build.
    source = Path(job.source)
    folders = [Path(job.build_setting.project), source,
               *(f for f in key_folders(job) if not (source.is_dir() and f == source.parent))]
    try:
        compiled = compile_key(job, provider, [f for f in dict.fromkeys(folders) if f.is_dir()])
    except Unkeyable:
        return None
    material = {"format": CACHE_FORMAT, "compile": compiled, "build": asdict(job.build),
                "setting": asdict(job.build_setting),
                "environment": set_for_build(build_environment(job)),
                "path": os.environ.get("PATH", "")}
    text = json.dumps(material, sort_keys=True, default=str)
    if cache is not None:
        text = _cache_marked(text, cache)
    return hashlib.sha256(text.encode()).hexdigest()


_CACHE_MARK = "<cudamatrix cache>"


def _cache_marked(text: str, cache: Path) -> str:
    """`text` with the cache folder, as given and resolved, written as one mark: a path
    under it (`/runner/.cache/cudamatrix/toolkits/13.0/...`) and another cache's path to
    the same file read alike. A path that only starts with the folder's name (`cache2`)
    is left as it is."""
    for folder in dict.fromkeys((str(cache), os.path.realpath(cache))):
        folder = folder.rstrip("/")
        if folder:
            text = text.replace(folder + "/", _CACHE_MARK + "/").replace(
                json.dumps(folder), json.dumps(_CACHE_MARK))
    return text


class BuildCache:
    """Builds by key under ``<cache>/builds``, and read only under each of `read_from`'s
    (--compile-cache-from); disabled (--no-compile-cache), nothing."""

    def __init__(self, root: Path, enabled: bool = True, read_from: Iterable[Path] = ()) -> None:
        self.root, self.enabled = root / "builds", enabled
        self.read_from = tuple(folder / "builds" for folder in read_from
                               if (folder / "builds").resolve() != self.root.resolve())

    def _entry(self, key: str, root: Path | None = None) -> Path:
        return (root or self.root) / key[:2] / key

    def forget(self, key: str) -> None:
        """Drop what is kept for `key`: a retry (--retries) asks the build again, since a
        build's commands are the project's own and a failure may be one of chance (a lost
        download); its new result is kept in its place."""
        if self.enabled:
            shutil.rmtree(self._entry(key), ignore_errors=True)

    def restore(self, key: str, workdir: Path) -> bool:
        """The kept build's record and outputs into `workdir` (the cell's folder), from the
        run's own cache first, then each read-only one (its record then says which, as a
        compile's `cache_from` does); False on a miss or where no entry can be read."""
        if not self.enabled:
            return False
        for root in (self.root, *self.read_from):
            entry = self._entry(key, root)
            if not (entry / _ENTRY_RECORD).is_file():
                continue
            try:  # a damaged entry (a run killed as it wrote one) is a miss: built again
                stage = StageResult.from_dict(read_cache(entry / _ENTRY_RECORD))
                workdir.mkdir(parents=True, exist_ok=True)
                if (entry / BUILD_SOURCE).is_dir():
                    shutil.copytree(entry / BUILD_SOURCE, workdir / BUILD_SOURCE,
                                    symlinks=True, dirs_exist_ok=True)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if root != self.root:
                stage = replace(stage, details={**stage.details,
                                                "cache_from": str(root.parent)})
            (workdir / COMPILE_RECORD).write_text(json.dumps(stage.to_dict()))
            return True
        return False

    def store(self, key: str, workdir: Path, stage: StageResult) -> bool:
        """Keep a build's verdict and, where it built, its tree; False where the stage says
        nothing about the project, or the tree is past MAX_TREE_BYTES or holds what is
        no file, folder or link (a pipe)."""
        if not self.enabled or stage.stage != "compile" or stage.accident \
                or stage.status not in KEPT_STATUSES:
            return False
        entry = self._entry(key)
        if entry.is_dir():
            return True
        tree = workdir / BUILD_SOURCE
        staging = entry.with_name(f"{entry.name}.partial-{os.getpid()}-{id(stage)}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            if stage.status == "ok" and _size(tree) > MAX_TREE_BYTES:
                return False
            staging.mkdir(parents=True)
            if stage.status == "ok":  # links kept as links, never followed out of the tree
                shutil.copytree(tree, staging / BUILD_SOURCE, symlinks=True)
            (staging / _ENTRY_RECORD).write_text(json.dumps(stage.to_dict()))
            try:
                staging.rename(entry)
            except OSError:  # another process stored it first
                shutil.rmtree(staging, ignore_errors=True)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return False
        return True
