"""The compile cache: a cell whose compile inputs have not changed is not compiled again.

A compile's outcome, refusals included, is decided by the source and every file
it includes, the flags, the frontend, the target arch, and the exact toolkit and
library builds (package versions, tool versions). The key hashes all of them;
the entry keeps the compile stage's record (``compile.json``) and its artifacts
(PTX, cubin, shared library). Timeouts, crashes and tool errors say nothing
about the code and are never stored.

Entries are written under a temporary name and renamed into place, so a run
killed mid-store, or two shards storing the same entry, leave no half entry.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from .stages.job import Job
from .stages.result import StageResult

# Bump when what a compile stage records or produces changes shape.
CACHE_FORMAT = 2
CACHEABLE = frozenset({"ok", "failed", "unsupported"})
ARTIFACTS = ("compile.json", "kernel.ptx", "kernel.cubin", "libcase.so")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def _included_files(source: Path, search: list[Path]) -> list[Path]:
    """The source and the files it includes that live beside it or in its own -I folders.

    Toolkit and library headers are covered by their package versions in the key;
    these are the files a user edits.
    """
    seen: dict[Path, None] = {}
    pending = [source.resolve()]
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        if path.suffix == ".py":
            continue
        for name in _INCLUDE.findall(path.read_text(errors="replace")):
            for folder in (path.parent, *search):
                candidate = (folder / name).resolve()
                if candidate.is_file():
                    pending.append(candidate)
                    break
    return list(seen)


@functools.cache
def stage_code_digest() -> str:
    """A hash of the code that compiles and reads compilers' output.

    A cached verdict is only as good as the code that reached it: when the compile stage
    changes (how NVRTC is called, how a log is read), entries made by the old code must
    not be served as if this code had made them.
    """
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.joinpath("stages").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def compile_key(job: Job, provider: str) -> str:
    """Everything that decides a compile's outcome, hashed.

    `provider` says where the compile runs: a toolkit-free frontend (the DSL's own
    compiler) behaves differently in a container than on the host.
    """
    source = Path(job.source)
    search = [source.parent / f[2:] for f in job.flags if f.startswith("-I")]
    files = {}
    for path in sorted(_included_files(source, search)):
        files[os.path.relpath(path, source.parent)] = hashlib.sha256(path.read_bytes()).hexdigest()
    env = job.env
    material: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "stage_code": stage_code_digest(),
        "provider": provider,
        "frontend": job.frontend,
        "arch": job.arch,
        "arch_flag": job.arch_flag,
        "flags": list(job.flags),
        "host_entry": job.host_entry,
        "options": job.options,
        "files": files,
        "toolkit": None if env is None else {
            "version": env.toolkit, "provider": env.provider,
            "packages": env.packages, "tools": env.tool_versions,
            # A host toolkit has no package versions: its location tells builds apart.
            "root": env.root if not env.packages else ""},
        "library": None if job.library is None else {
            "name": job.library.name, "version": job.library.version,
            "packages": job.library.packages},
    }
    text = json.dumps(material, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _place(source: Path, target: Path) -> None:
    """Hard-link when the cache and the output share a file system; copy otherwise."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


class CompileCache:
    """Compile results by key under ``<cache>/compile``; disabled, it reads and writes nothing."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root, self.enabled = root / "compile", enabled

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def restore(self, key: str, workdir: Path) -> StageResult | None:
        """Put a cached compile's artifacts into `workdir`; its compile stage, or None on a miss."""
        if not self.enabled:
            return None
        entry = self._entry(key)
        record = entry / "compile.json"
        if not record.is_file():
            return None
        try:
            stage = StageResult.from_dict(json.loads(record.read_text()))
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss; the next store replaces it
        workdir.mkdir(parents=True, exist_ok=True)
        for name in ARTIFACTS[1:]:
            if (entry / name).is_file():
                target = workdir / name
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                _place(entry / name, target)
        details = {**stage.details, "cache": "hit", "cache_key": key[:16]}
        restored = StageResult(stage.stage, stage.status, stage.message, stage.log, stage.seconds,
                               details)
        # Written, not linked: the record says "hit", and the entry itself stays untouched.
        (workdir / "compile.json").write_text(json.dumps(restored.to_dict()))
        return restored

    def store(self, key: str, workdir: Path, stage: StageResult) -> bool:
        """Keep a finished compile; False when it says nothing about the code (timeout, crash)."""
        if not self.enabled or stage.stage != "compile" or stage.status not in CACHEABLE:
            return False
        entry = self._entry(key)
        if (entry / "compile.json").is_file():
            return True
        staging = entry.with_name(f"{entry.name}.partial-{os.getpid()}-{id(stage)}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            if stage.status == "ok":
                for name in ARTIFACTS[1:]:
                    if (workdir / name).is_file():
                        shutil.copy2(workdir / name, staging / name)
            (staging / "compile.json").write_text(json.dumps(stage.to_dict()))
            try:
                staging.rename(entry)
            except OSError:  # another process stored it first
                shutil.rmtree(staging, ignore_errors=True)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return False
        return True
